-- Answering a permission request: a write or edit as a diff to review (lua/pi/review.lua),
-- any other call with vim.ui.select. Besides allow and reject the answers steer: "Reject with
-- reason…" sends the user's words, which the model reads as the call's result (the run goes
-- on); "Edit command…" runs the bash command as the user corrected it (the daemon checks the
-- edited call again); "Reject and stop" ends the run.
-- The pickers are asked one at a time (the calls of one message are asked about together):
-- a request whose call ended meanwhile (its run stopped, nobody answered in time) or that
-- follows a "Reject and stop" of its session is not shown.
local pick = require("pi.pick")
local review = require("pi.review")
local subagents = require("pi.subagents")
local M = {}

-- The choices that are no outcome of their own: they ask for text, then answer with one.
M.REASON, M.EDIT = review.REASON, "edit_command"

local labels = { allow_once = "Allow once", allow_session = "Allow this session", allow_always = "Always allow",
                 reject_once = "Reject", reject_always = "Always reject", reject_and_stop = "Reject and stop",
                 [M.REASON] = "Reject with reason…", [M.EDIT] = "Edit command…" }
local remembering = { allow_session = true, allow_always = true, reject_always = true }

-- One label per choice; the ones that remember say exactly what they would remember.
function M.label(choice, params)
  local label = labels[choice] or choice
  if remembering[choice] and params.remember then label = label .. ": " .. params.remember.label end
  return label
end

-- A bash command on one line can be corrected in vim.ui.input (a multi-line one cannot).
local function editable(params)
  local command = params.toolName == "bash" and type(params.args) == "table" and params.args.command
  return type(command) == "string" and not command:find("\n", 1, true)
end

-- The choices offered for `params`: its outcomes, "Edit command…" after the allows (a bash
-- call), "Reject with reason…" after "Reject".
function M.choices(params)
  local out = {}
  for _, outcome in ipairs(params.options or { "allow_once", "reject_once" }) do
    if outcome == "reject_once" and editable(params) and vim.tbl_contains(params.options or {}, "allow_once") then
      table.insert(out, M.EDIT)
    end
    table.insert(out, outcome)
    if outcome == "reject_once" then table.insert(out, M.REASON) end
  end
  return out
end

-- The answer a choice makes: asks for the reason or the edited command first (nil when that
-- is dismissed: the user goes back to the choices). From inside a server request.
---@return pi.PermissionRequestResult|nil
function M.resolve(choice, params)
  if choice == M.REASON then
    local reason = pick.await_input({ prompt = "Reject: why? (pi reads this) " })
    if reason == nil then return nil end
    reason = vim.trim(reason)
    return { outcome = "reject_once", reason = reason ~= "" and reason or nil }
  elseif choice == M.EDIT then
    local command = pick.await_input({ prompt = "Run instead: ", default = params.args.command })
    if command == nil or vim.trim(command) == "" then return nil end
    if command == params.args.command then return { outcome = "allow_once" } end
    return { outcome = "allow_once", editedArgs = vim.tbl_extend("force", params.args, { command = command }) }
  end
  return { outcome = choice }
end

local queue = {} -- the requests waiting for the picker, the one shown first: { co, params, dropped }

local function next_turn()
  table.remove(queue, 1)
  if queue[1] then
    local co = queue[1].co
    vim.schedule(function() coroutine.resume(co) end)
  end
end

-- Drops the waiting requests whose call ended (`id`) or of a session stopped (`session`).
local function drop(id, session)
  for i, waiting in ipairs(queue) do
    if i > 1 and (waiting.params.toolCallId == id or waiting.params.sessionId == session) then waiting.dropped = true end
  end
end

-- The events that end a request's wait: its call ended, nobody answered in time.
function M.event(event)
  if event.type == "tool_execution_end" or event.type == "permission_timeout" then drop(event.toolCallId) end
end

-- Asks with the picker (after the requests before it); nil when dropped before its turn.
local function picked(params, prompt, label)
  local me = { co = coroutine.running(), params = params }
  table.insert(queue, me)
  if #queue > 1 then coroutine.yield() end
  if me.dropped then next_turn() return nil end
  local result
  while not result do
    local choice = pick.await(M.choices(params), { prompt = prompt, kind = "pi.permission", format_item = label })
    result = choice == nil and { outcome = "cancelled" } or M.resolve(choice, params)
  end
  if result.outcome == "reject_and_stop" then drop(nil, params.sessionId) end
  next_turn()
  return result
end

---@param params pi.PermissionRequestParams
---@param config table require("pi").config
---@param root string the workspace
---@return pi.PermissionRequestResult
function M.answer(params, config, root)
  if params.parentSessionId and params.parentSessionId ~= vim.NIL and not subagents.owns(params.sessionId) then
    -- its subagent_start came first but waits in the event loop's queue (events are scheduled)
    local co = coroutine.running()
    vim.schedule(function() coroutine.resume(co) end)
    coroutine.yield()
  end
  local child = subagents.children[params.sessionId]
  local prompt = child and ("subagent “%s”: %s"):format(child.description, params.title) or params.title
  local label = function(item) return M.label(item, params) end
  if config.review and review.reviews(params) then
    local outcome, content, reason = review.await(params, root, prompt, label, M.choices(params))
    return { outcome = outcome, content = content, reason = reason }
  elseif config.review and (params.toolName == "write" or params.toolName == "edit") then
    prompt = prompt .. " (no diff to show: the call would fail as it stands)"
  end
  return picked(params, prompt, label) or { outcome = "cancelled" }
end

return M
