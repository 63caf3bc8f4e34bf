-- The agent's questions (its ask_user tool; the daemon's `user/ask` request): the choices in
-- vim.ui.select, "Other…" for words of the user's own in vim.ui.input (when the question
-- allows text); several choices (multiSelect) are ticked one pick at a time until "Done".
-- A question the daemon stopped waiting for (the run stopped, nobody answered in time) is
-- withdrawn: its picker's answer, if it still comes, is not sent. vim.lsp.rpc does not give a
-- handler its request's id, so the withdrawal follows the events the daemon sends with its
-- $/cancelRequest: the call's tool_execution_end, question_timeout, agent_settled.
local chat = require("pi.chat")
local pick = require("pi.pick")
local subagents = require("pi.subagents")
local M = {}

M.OTHER, M.DONE = {}, {} -- the picker's items that are no option

local open = {} -- the questions waiting: toolCallId -> pick.question()
local WITHDRAWN = pick.WITHDRAWN

local function typed(q, prompt, default)
  local text = q.input({ prompt = prompt, default = default })
  if text == WITHDRAWN then return WITHDRAWN end
  text = text and vim.trim(text)
  return text ~= "" and text or nil
end

-- The labels of the options chosen and the text typed, or WITHDRAWN / nil (dismissed).
local function ask(q, params, prompt)
  local options = params.options or {}
  if #options == 0 then return nil, typed(q, prompt .. " ") end
  local chosen, text = {}, nil
  local function format(item)
    if item == M.OTHER then return text and ("Other: " .. text) or "Other…" end
    if item == M.DONE then
      return #chosen + (text and 1 or 0) == 0 and "Done (nothing chosen)" or "Done"
    end
    local label = item.label .. (type(item.description) == "string" and (" — " .. item.description) or "")
    if params.multiSelect then return (vim.tbl_contains(chosen, item.label) and "☑ " or "☐ ") .. label end
    return label
  end
  while true do
    local items = vim.list_extend({}, options)
    if params.allowText then table.insert(items, M.OTHER) end
    if params.multiSelect then table.insert(items, M.DONE) end
    local item = q.select(items, { prompt = prompt, kind = "pi.question", format_item = format })
    if item == nil or item == WITHDRAWN then return item end
    if item == M.OTHER then
      local words = typed(q, "Your answer: ", text)
      if words == WITHDRAWN then return WITHDRAWN end
      if not params.multiSelect and words then return nil, words end
      text = words
    elseif item == M.DONE then
      return chosen, text
    elseif not params.multiSelect then
      return { item.label }
    elseif vim.tbl_contains(chosen, item.label) then
      chosen = vim.tbl_filter(function(label) return label ~= item.label end, chosen)
    else
      table.insert(chosen, item.label)
    end
  end
end

---@param params pi.UserAskParams
---@return pi.UserAskResult
function M.answer(params)
  local child = subagents.asking(params)
  local prompt = pick.one_line(params.question)
  if child then prompt = ("subagent “%s” asks: %s"):format(child.description, prompt) end
  local q = pick.question("pi: that question was withdrawn; the answer was not sent")
  open[params.toolCallId] = q
  local selected, text = ask(q, params, prompt)
  open[params.toolCallId] = nil
  if selected == WITHDRAWN or text == WITHDRAWN or ((selected == nil or #selected == 0) and text == nil) then
    return { outcome = "dismissed" }
  end
  return { outcome = "answered", selected = selected and #selected > 0 and selected or nil, text = text }
end

-- The daemon stopped waiting for the question of the call `id` (nil: every question).
function M.withdraw(id)
  for key, q in pairs(open) do
    if id == nil or key == id then
      open[key] = nil
      q.withdraw()
    end
  end
end

-- The events that end a question's wait: its call ended, nobody answered in time, the run
-- ended (the chat's: `of_subagent` false).
function M.event(event, of_subagent)
  if event.type == "tool_execution_end" then M.withdraw(event.toolCallId)
  elseif event.type == "question_timeout" then
    if open[event.toolCallId] then chat.line("[the question was withdrawn: nobody answered it in time]") end
    M.withdraw(event.toolCallId)
  elseif event.type == "agent_settled" and not of_subagent then M.withdraw() end
end

-- How many questions wait for an answer (for tests).
function M.count() return vim.tbl_count(open) end

return M
