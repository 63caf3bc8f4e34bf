-- Answering a permission request: a write or edit as a diff to review (lua/pi/review.lua),
-- any other call with vim.ui.select. Besides allow and reject the answers steer: "Reject with
-- reason…" sends the user's words, which the model reads as the call's result (the run goes
-- on); "Edit command…" runs the bash command as the user corrected it in a float (the daemon
-- checks the edited call again); "Reject and stop" ends the run.
-- The pickers are asked one at a time (the calls of one message are asked about together):
-- a request whose call ended meanwhile (its run stopped, nobody answered in time) is withdrawn
-- (its float closed, a late answer dropped), and the ones after a "Reject and stop" of their
-- session are not shown.
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

local function editable(params)
  return params.toolName == "bash" and type(params.args) == "table" and type(params.args.command) == "string"
end

M.EDIT_TITLE = " Run instead · <C-s> run · q back "

-- The command in a float to correct (over lines, as a script); `done(text)` once: the text as
-- it stands with <C-s> (or <CR> in normal mode), nil with q or when the float is closed.
-- Returns what closes it.
function M.edit_command(command, done)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  local lines = vim.split(command, "\n", { plain = true })
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].filetype = "sh"
  local width = vim.fn.strdisplaywidth(M.EDIT_TITLE) + 4
  for _, l in ipairs(lines) do width = math.max(width, vim.fn.strdisplaywidth(l) + 2) end
  local win = vim.api.nvim_open_win(buf, true, { relative = "editor", row = 3, col = 4, style = "minimal",
                                                 border = "rounded", title = M.EDIT_TITLE,
                                                 width = math.min(width, vim.o.columns - 8),
                                                 height = math.min(#lines, vim.o.lines - 8) })
  local finished = false
  local function finish(text)
    if finished then return end
    finished = true
    if vim.api.nvim_get_current_win() == win then vim.cmd.stopinsert() end
    pcall(vim.api.nvim_win_close, win, true)
    done(text)
  end
  local function run() finish(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")) end
  vim.keymap.set({ "n", "i" }, "<C-s>", run, { buffer = buf, desc = "pi: run the command as it stands" })
  vim.keymap.set("n", "<CR>", run, { buffer = buf, desc = "pi: run the command as it stands" })
  vim.keymap.set("n", "q", function() finish(nil) end, { buffer = buf, desc = "pi: back to the choices" })
  vim.api.nvim_create_autocmd("BufWipeout", { buffer = buf, once = true, callback = function() finish(nil) end })
  vim.api.nvim_win_set_cursor(win, { #lines, #lines[#lines] })
  vim.cmd.startinsert({ bang = true })
  return function() finish(nil) end
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
-- is dismissed: the user goes back to the choices). From inside a server request, with `q` a
-- pick.question(); pick.WITHDRAWN when that is withdrawn.
---@return pi.PermissionRequestResult|nil
function M.resolve(choice, params, q)
  if choice == M.REASON then
    local reason = q.input({ prompt = review.REASON_PROMPT })
    if reason == nil or reason == pick.WITHDRAWN then return reason end
    reason = vim.trim(reason)
    return { outcome = "reject_once", reason = reason ~= "" and reason or nil }
  elseif choice == M.EDIT then
    local command = q.await(function(done) return M.edit_command(params.args.command, done) end)
    if command == pick.WITHDRAWN then return command end
    if command == nil or vim.trim(command) == "" then return nil end
    if command == params.args.command then return { outcome = "allow_once" } end
    return { outcome = "allow_once", editedArgs = vim.tbl_extend("force", params.args, { command = command }) }
  end
  return { outcome = choice }
end

-- The requests waiting for the picker, the one shown first: { q = pick.question(), params }
local queue = {}

local function next_turn()
  table.remove(queue, 1)
  if queue[1] then
    local co = queue[1].q.co
    vim.schedule(function() coroutine.resume(co) end)
  end
end

-- Withdraws the requests of the call `id` (its call ended: the run stopped, nobody answered
-- in time) or of the session `session` (stopped): the one shown, the ones waiting their turn.
local function drop(id, session)
  for _, waiting in ipairs(queue) do
    if waiting.params.toolCallId == id or waiting.params.sessionId == session then waiting.q.withdraw() end
  end
end

-- The daemon withdrew the request of the call `id` (another client answered it).
function M.withdraw(id) drop(id) end

-- How many requests are shown or wait their turn (for tests).
function M.count() return #queue end

-- The events that end a request's wait: its call ended, nobody answered in time.
function M.event(event)
  if event.type == "tool_execution_end" or event.type == "permission_timeout" then drop(event.toolCallId) end
end

-- Asks with the picker (after the requests before it); nil when dropped or withdrawn.
local function picked(params, prompt, label)
  local me = { q = pick.question("pi: that permission request was withdrawn; the answer was not sent"),
               params = params }
  table.insert(queue, me)
  if #queue > 1 then coroutine.yield() end
  if me.q.withdrawn then next_turn() return nil end
  local result
  while not result do
    local choice = me.q.select(M.choices(params), { prompt = prompt, kind = "pi.permission", format_item = label })
    if choice == nil then result = { outcome = "cancelled" }
    elseif choice == pick.WITHDRAWN then result = choice
    else result = M.resolve(choice, params, me.q) end
  end
  if result ~= pick.WITHDRAWN and result.outcome == "reject_and_stop" then drop(nil, params.sessionId) end
  next_turn()
  return result ~= pick.WITHDRAWN and result or nil
end

---@param params pi.PermissionRequestParams
---@param config table require("pi").config
---@param root string the workspace
---@return pi.PermissionRequestResult
function M.answer(params, config, root)
  local child = subagents.asking(params)
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
