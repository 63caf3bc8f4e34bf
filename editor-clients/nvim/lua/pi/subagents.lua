-- Subagents: the `task` tool's child sessions. A child's events come with its own sessionId
-- (learned from the parent's subagent_start); they are drawn nested under the task call that
-- started it, as virtual lines (its status, its tool calls, the end of its text) that are not
-- part of the conversation, and into the child's own view when the user opened it
-- (:PiSubagents, which can also abort a running one).
local chat = require("pi.chat")
local render = require("pi.render")
local pick = require("pi.pick")
local M = { children = {}, order = {} }

M.SHOWN_TOOLS = 4 -- the latest tool calls shown under the task call
M.SHOWN_TEXT = 3 -- the last lines of its text

function M.reset() M.children, M.order = {}, {} end

-- Whether `session_id` is a subagent's: then its events are not the chat's.
function M.owns(session_id) return M.children[session_id] ~= nil end

-- From inside a server request of a subagent's (`parentSessionId`): lets its subagent_start,
-- which came first but waits in the event loop's queue (events are scheduled), be handled.
-- Returns the child (nil: none of this chat's).
function M.asking(params)
  if params.parentSessionId and params.parentSessionId ~= vim.NIL and not M.owns(params.sessionId) then
    local co = coroutine.running()
    vim.schedule(function() coroutine.resume(co) end)
    coroutine.yield()
  end
  return M.children[params.sessionId]
end

function M.running()
  local n = 0
  for _, c in pairs(M.children) do if c.status == "running" then n = n + 1 end end
  return n
end

local function brief(args)
  if type(args) ~= "table" then return "" end
  for _, key in ipairs({ "path", "command", "pattern", "query" }) do
    if type(args[key]) == "string" then return " " .. args[key]:gsub("\n.*", "…") end
  end
  return ""
end

-- The nested lines of a child, as drawn under its task call.
function M.lines(child)
  local head = ("subagent: %s · %s"):format(child.description, child.status)
  if child.status ~= "running" then
    local cost = type(child.cost) == "number" and (" · $%.4f"):format(child.cost) or ""
    return { { "  └ " .. head .. cost .. " (:PiSubagents opens it)", child.status == "completed" and "Comment"
               or "WarningMsg" } }
  end
  local out = { { "  ┌ " .. head } }
  for i = math.max(1, #child.tools - M.SHOWN_TOOLS + 1), #child.tools do
    local t = child.tools[i]
    table.insert(out, { "  │ → " .. t.name .. t.brief .. (t.done and (" " .. t.done) or " …") })
  end
  local text = vim.split(vim.trim(child.text), "\n", { plain = true })
  for i = math.max(1, #text - M.SHOWN_TEXT + 1), #text do
    if text[i] ~= "" then table.insert(out, { "  │ " .. text[i] }) end
  end
  return out
end

-- Redraws a child under its task call in the chat (nothing when that call is not shown there).
function M.draw(child) chat.nested(child.toolCallId, M.lines(child)) end

---@param event pi.SubagentStart
---@param parent string the session that started it
function M.started(event, parent)
  if not M.children[event.sessionId] then table.insert(M.order, event.sessionId) end
  M.children[event.sessionId] = { id = event.sessionId, toolCallId = event.toolCallId, parent = parent,
                                  description = event.description, status = "running", tools = {}, text = "" }
  M.draw(M.children[event.sessionId])
end

---@param event pi.SubagentEnd
function M.ended(event)
  local child = M.children[event.sessionId]
  if not child then return end
  child.status, child.cost = event.status, event.cost
  M.draw(child)
  if child.view and vim.api.nvim_buf_is_valid(child.view) then
    chat.with(child.view, function() chat.mark_end("— subagent " .. event.status .. " —") end)
  end
end

-- One of a child's own events: its nested lines follow it, and its view if opened.
---@param params pi.AgentEventParams
function M.child_event(params)
  local child, event = M.children[params.sessionId], params.event
  if event.type == "agent_start" then child.busy = true
  elseif event.type == "agent_settled" then child.busy = false
  elseif event.type == "message_start" and event.message.role == "assistant" then child.text, child.answering = "", true
  elseif event.type == "message_end" and event.message.role == "assistant" then child.answering = false
  elseif event.type == "message_update" then
    local e = event.assistantMessageEvent
    if e.type == "text_delta" then child.text = (child.text .. e.delta):sub(-2000)
    elseif e.type == "text_start" and child.text ~= "" then child.text = child.text .. "\n" end
  elseif event.type == "tool_execution_start" then
    table.insert(child.tools, { id = event.toolCallId, name = event.toolName, brief = brief(event.args) })
  elseif event.type == "tool_execution_end" then
    for _, t in ipairs(child.tools) do
      if t.id == event.toolCallId then t.done = event.isError and "✗" or "✓" end
    end
  end
  if child.view and vim.api.nvim_buf_is_valid(child.view) and render.handlers[event.type] then
    chat.with(child.view, function() render.handlers[event.type](event, child.busy) end)
  end
  M.draw(child)
end

-- One item per thing to do: open each child, stop each running one (one picker, not a child
-- and then an action).
function M.items()
  local items = {}
  for _, id in ipairs(M.order) do
    local c = M.children[id]
    local doing = c.status == "running" and #c.tools > 0 and (" · " .. c.tools[#c.tools].name) or ""
    local what = ("[%s] %s%s"):format(c.status, c.description, doing)
    table.insert(items, { child = c, action = "open", line = "Open " .. what })
    if c.status == "running" then table.insert(items, { child = c, action = "abort", line = "Stop " .. what }) end
  end
  return items
end

-- A child's own view: a buffer of its conversation so far, then its live events.
-- `pi` is require("pi"). A finished child's session is closed in the daemon: it is opened to be
-- read (session/load makes it current, so the parent is made current again at once) and closed.
function M.open(pi, child)
  if child.view and vim.api.nvim_buf_is_valid(child.view) then
    local win = vim.fn.win_findbuf(child.view)[1]
    if win then vim.api.nvim_set_current_win(win) else vim.cmd("split") vim.api.nvim_win_set_buf(0, child.view) end
    return child.view
  end
  local buf = vim.api.nvim_create_buf(true, true)
  vim.api.nvim_buf_set_name(buf, ("pi://subagent/%s"):format(child.id))
  vim.bo[buf].filetype, vim.bo[buf].buftype = "markdown", "nofile"
  vim.b[buf].pi_subagent = child.id
  vim.cmd("split")
  vim.api.nvim_win_set_buf(0, buf)
  vim.wo.foldmethod, vim.wo.foldlevel = "marker", 0
  local function show(messages, close)
    chat.with(buf, function()
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "# subagent: " .. child.description })
      render.messages(messages)
      -- its tools running now: their output goes on in the view, as live
      for _, t in ipairs(child.tools) do
        if not t.done and child.status == "running" then chat.tool_start(t.id, t.name) end
      end
      -- an answer streaming now is not in the stored messages: its heading and text so far,
      -- under which its next deltas go (not onto the prompt's line)
      if child.answering and child.status == "running" then
        render.handlers.message_start({ type = "message_start", message = { role = "assistant", stopReason = "pending" } })
        chat.append(child.text)
      end
      if child.status ~= "running" then chat.mark_end("— subagent " .. child.status .. " —") end
    end)
    child.view = buf
    if close then pi.request("session/close", { sessionId = child.id }, nil, function() end) end
  end
  pi.request("getMessages", { sessionId = child.id }, function(r) show(r.messages) end, function()
    pi.request("session/load", { sessionId = child.id }, function()
      pi.request("session/load", { sessionId = child.parent }, function()
        pi.request("getMessages", { sessionId = child.id }, function(r) show(r.messages, true) end)
      end)
    end)
  end)
  return buf
end

-- :PiSubagents — the subagents of this chat: open one or stop it; a lone finished one opens at once.
function M.pick(pi)
  local items = M.items()
  if #items == 0 then vim.notify("pi: no subagent has run in this chat") return end
  local function act(item)
    if not item then return end
    if item.action == "abort" then pi.request("abort", { sessionId = item.child.id })
    else M.open(pi, item.child) end
  end
  if #items == 1 then return act(items[1]) end
  pick.select(items, { prompt = "Subagents", kind = "pi.subagents", format_item = function(i) return i.line end }, act)
end

return M
