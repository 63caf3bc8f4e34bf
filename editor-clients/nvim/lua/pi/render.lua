-- How the agent's events read in a chat buffer: the same lines whether a message streams in
-- live or comes whole in a replay. Used for the chat and for a subagent's own view (each
-- inside chat.with(its buffer)).
local chat = require("pi.chat")
local savebefore = require("pi.savebefore")
local compaction = require("pi.compaction")
local processes = require("pi.processes")
local M = {}

local line = chat.line

---@param message pi.AgentMessage
function M.content_text(message)
  if type(message.content) == "string" then return message.content end
  local out = {}
  for _, block in ipairs(message.content or {}) do
    if block.type == "text" then table.insert(out, block.text) end
  end
  return table.concat(out)
end

M.CONTEXT = "\n\n[editor context]\n"

-- The editor context the daemon rendered after a prompt's text (lua/pi/editfs.lua's
-- selection, sent with :'<,'>Pi) is one closed fold, its first line naming what it holds:
-- "context: app.py lines 3-4 {{{".
local function user_text(text)
  local at = text:find(M.CONTEXT, 1, true)
  if not at then line(text) return end
  line(text:sub(1, at - 1))
  local body = vim.split(text:sub(at + #M.CONTEXT), "\n", { plain = true })
  local names = {}
  for i, l in ipairs(body) do
    local path, span = l:match("^(%S.-) (lines? [%d%-]+):$")
    if path then table.insert(names, vim.fn.fnamemodify(path, ":~:.") .. " " .. span)
    elseif i == 1 then table.insert(names, vim.fn.fnamemodify((l:gsub(":$", "")), ":~:.")) end
  end
  line("context: " .. table.concat(names, ", ") .. " {{{")
  for _, l in ipairs(body) do line(l) end
  line("}}}")
end

-- A stored message (a replay) comes whole; a streaming one grows through message_update.
-- Both produce the same lines.
---@param m pi.AssistantMessage
local function assistant(m)
  for _, block in ipairs(m.content or {}) do
    if block.type == "text" then line(block.text)
    elseif block.type == "thinking" then line("thinking {{{") line(block.thinking or "") line("}}}")
    elseif block.type == "toolCall" then chat.tool_call(block) end
  end
end

-- The events that draw the conversation; `live`: a run is going on, whose tool results are
-- drawn from tool_execution_* (a replay has only the stored toolResult messages).
M.handlers = {}
local handlers = M.handlers

---@param event pi.MessageStart
function handlers.message_start(event, live)
  local m = event.message
  if m.role == "user" then line("") line("## you") user_text(M.content_text(m))
  elseif m.role == "assistant" then
    line("") line("## pi") line("")
    if m.stopReason ~= "pending" then assistant(m) end
  elseif m.role == "toolResult" and not live then -- live results were shown by tool_execution_*
    chat.tool_output(m.toolName, savebefore.shown(m.toolCallId, m, M.content_text(m)), m.isError)
    processes.noted(m.toolCallId, m.details)
  elseif m.role == "bashExecution" then line("") line("$ " .. m.command) line(m.output or "")
  elseif m.role == "compactionSummary" then compaction.replayed(m) end
end

---@param event pi.MessageUpdate
function handlers.message_update(event)
  local e = event.assistantMessageEvent
  if e.type == "text_start" then line("")
  elseif e.type == "text_delta" or e.type == "thinking_delta" then chat.append(e.delta)
  elseif e.type == "thinking_start" then line("thinking {{{") line("")
  elseif e.type == "thinking_end" then line("}}}")
  elseif e.type == "toolcall_end" then chat.tool_call(e.toolCall)
  end
end

---@param event pi.MessageEnd
function handlers.message_end(event)
  local m = event.message
  if m.role == "assistant" and (m.stopReason == "error" or m.stopReason == "aborted") then
    line("[" .. m.stopReason .. ": " .. (m.errorMessage or "") .. "]")
  end
end

local function result_text(id, result) return savebefore.shown(id, result, M.content_text(result or {})) end

---@param event pi.ToolExecutionStart
function handlers.tool_execution_start(event)
  -- sent again when the user edited the call before it ran: its output so far stays
  if event.editedByUser then
    chat.tool_edited(event.toolCallId, { name = event.toolName, arguments = event.args })
  else chat.tool_start(event.toolCallId, event.toolName) end
end
---@param event pi.ToolExecutionUpdate
function handlers.tool_execution_update(event)
  chat.tool_update(event.toolCallId, result_text(event.toolCallId, event.partialResult))
end
---@param event pi.ToolExecutionEnd
function handlers.tool_execution_end(event)
  chat.tool_end(event.toolCallId, result_text(event.toolCallId, event.result), event.isError)
  processes.noted(event.toolCallId, event.result and event.result.details)
end

handlers.compaction_start = compaction.started
handlers.compaction_end = compaction.ended

-- Stored messages (getMessages) drawn as a replay draws them.
function M.messages(messages)
  for _, m in ipairs(messages) do handlers.message_start({ type = "message_start", message = m }, false) end
end

return M
