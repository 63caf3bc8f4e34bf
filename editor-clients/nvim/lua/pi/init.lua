-- pi.nvim: the pi-daemon coding agent in Neovim.
-- Talks JSON-RPC (Content-Length framing) to the daemon through vim.lsp.rpc, streams the
-- answer into a chat buffer (lua/pi/chat.lua) with an input area under it (lua/pi/input.lua),
-- asks permissions without blocking the editor (lua/pi/permission.lua: a write or edit as a
-- diff, the others with vim.ui.select), and manages sessions and models.
-- Types: lua/pi/protocol.lua (LuaCATS, generated from the daemon's protocol declaration).
local chat = require("pi.chat")
local protocol = require("pi.protocol")
local M = {}

---Called with what the daemon sends: ("notification" | "request" | "result", method, value).
---@type fun(kind: string, method: string, value: any)|nil
M.on_receive = nil

M.config = {
  cmd = nil, -- the daemon and its arguments; default: found by lua/pi/daemon.lua
  -- "attach": through `pi-daemon attach`, to the workspace's server, which outlives Neovim (a run
  -- goes on, the session is loaded again when Neovim opens; lua/pi/attach.lua); "child": a daemon
  -- of this Neovim's own, which ends with it
  connection = "attach",
  model = nil, -- "provider/id", passed as --model
  permissions = true, -- ask before write / edit / bash
  cwd = nil, -- the workspace (default: the current directory)
  env = nil, -- extra environment of the daemon
  -- Normal-mode keys set by setup(); `keymaps = false` sets none, a key set to false is skipped.
  keymaps = {
    prompt = "<leader>pp", chat = "<leader>pc", abort = "<leader>pa", sessions = "<leader>ps",
    model = "<leader>pm", new = "<leader>pn",
  },
  review = true, -- a write / edit permission opens its diff to accept or reject (lua/pi/review.lua)
  input = {}, -- the chat's input area: height and keys (lua/pi/input.lua's defaults)
  editor_fs = true, -- the agent reads loaded buffers and edits through them (see lua/pi/editfs.lua)
  language_features = true, -- the agent asks Neovim's language servers (see lua/pi/language.lua)
  python = nil, -- interpreters :PiInstall may use, e.g. { "python3.12" } (lua/pi/install.lua)
  save_before_commands = true, -- the agent's edits are saved before its commands run (lua/pi/savebefore.lua)
  write_unshown_edits = false, -- the agent's edits to files no window shows are written at once (lua/pi/changed.lua)
  prestart = true, -- the daemon starts when Neovim opens a workspace where you sent pi a prompt (lua/pi/used.lua)
}
local editfs = require("pi.editfs")
local language = require("pi.language")
local modes = require("pi.modes")
local rewind = require("pi.rewind")
local subagents = require("pi.subagents")
local processes = require("pi.processes")
local sessions = require("pi.sessions")
local daemon = require("pi.daemon")
local firstrun = require("pi.firstrun")
local savebefore = require("pi.savebefore")
local attach = require("pi.attach")
local used = require("pi.used")

local state = { rpc = nil, busy = false, queue = { steering = {}, followUp = {} }, session = nil,
                settled = 0, log = nil, stats = nil, model = nil, commands = {}, mode = "ask" }

local input = require("pi.input")
local pick = require("pi.pick")
local review = require("pi.review")
local permission = require("pi.permission")
local ask = require("pi.ask")
local render = require("pi.render")

-- The conversation's events draw through lua/pi/render.lua; the others are the chat's.
-- A replayed event (a session loaded while its run goes on) draws as stored, not as live.
local handlers = setmetatable({}, { __index = function(_, name)
  local draw = render.handlers[name]
  return draw and function(event) draw(event, state.busy and not state.replaying) end
end })

---@param event pi.QueueUpdate
function handlers.queue_update(event)
  state.queue = { steering = event.steering, followUp = event.followUp, items = event.items or {} }
  input.show_queue(state.queue)
  vim.cmd("redrawstatus!")
end

function handlers.model_changed(event)
  state.model = event.provider .. "/" .. event.modelId
  vim.cmd("redrawstatus!")
end

function handlers.agent_start() state.busy = true end

-- The session's plan, above the input area (a subagent's is not the chat's: not drawn).
handlers.plan_updated = require("pi.plan").update

---@param event pi.CommandsUpdate
function handlers.commands_update(event) state.commands = event.commands end

-- The end of a run the user stopped by answering a permission request with "Reject and stop".
M.STOPPED = "— stopped: you rejected a call —"

---@param event pi.AgentSettled
function handlers.agent_settled(event)
  state.busy = false
  state.settled = state.settled + 1
  review.close() -- a review left open belongs to the run that ended
  chat.mark_end(event.aborted and "— aborted —" or event.stopReason == "rejected" and M.STOPPED or "—")
  if state.mode == "plan" and not event.aborted then chat.mark_end(modes.PLAN_READY) end
  require("pi.changed").remind()
  M.refresh_status()
  vim.api.nvim_exec_autocmds("User", { pattern = "PiSettled", data = { aborted = event.aborted,
                                                                      stopReason = event.stopReason } })
end

---@param event pi.ModeChanged
function handlers.mode_changed(event)
  state.mode, state.mode_changes = event.mode, (state.mode_changes or 0) + 1
  vim.cmd("redrawstatus!")
end

-- A task call started a subagent: from now on its events (its own sessionId) are drawn
-- nested under that call (lua/pi/subagents.lua), not as the chat's.
---@param event pi.SubagentStart
function handlers.subagent_start(event) subagents.started(event, state.session) vim.cmd("redrawstatus!") end

---@param event pi.SubagentEnd
function handlers.subagent_end(event) subagents.ended(event) vim.cmd("redrawstatus!") end

-- A replay (session/load) drew the whole conversation: what waited for it runs.
function handlers.replay_end()
  local after = state.after_replay
  state.after_replay = nil
  if after then after() end
end

function handlers.permission_timeout(event)
  review.close(event.toolCallId)
  chat.line(("[%s was not run: nobody answered the permission request within %s s]"):format(event.toolName,
                                                                                           event.timeoutSeconds))
end

---@param params pi.AgentEventParams
local function on_event(params)
  local kind = params.event.type
  -- the last event seen of the session shown: a reconnect asks for what came after it (fromSeq);
  -- replayed events carry no number of their own
  if params.sessionId == state.session and not params.replay then state.seq = params.seq end
  -- a process is the daemon's to list, whichever session started it
  if kind == "process_started" or kind == "process_exited" then processes.event(params.event) return end
  ask.event(params.event, subagents.owns(params.sessionId))
  permission.event(params.event)
  if subagents.owns(params.sessionId) then subagents.child_event(params) return end
  if state.session ~= params.sessionId then
    state.session, state.seq = params.sessionId, not params.replay and params.seq or nil
    attach.remember(M)
  end
  local handler = handlers[params.event.type]
  state.replaying = params.replay
  if handler then handler(params.event) end
  state.replaying = nil
  local message = params.event.type == "message_end" and params.event.message
  if message and message.errorKind == "auth" and not params.replay then require("pi.access").refused(M, message) end
end

-- No answer (dismissed) is an error reply, which the daemon does not remember.
---@param params pi.WorkspaceTrustParams
---@return pi.WorkspaceTrustResult|nil, table|nil
local function workspace_trust(params)
  local lines = {}
  for _, r in ipairs(params.reasons or {}) do table.insert(lines, r.field .. ": " .. r.effect) end
  local prompt = "Trust workspace " .. params.workspace .. "? Until then pi ignores: " .. table.concat(lines, "; ")
  local item = pick.await({ "Trust", "Don't trust" }, { prompt = prompt, kind = "pi.trust" })
  if item == nil then return nil, vim.lsp.rpc.rpc_response_error(-32800, "not answered") end
  return { trusted = item == "Trust" }
end

local function running() return state.rpc ~= nil and not state.rpc.is_closing() end

-- Sends a request; errors are shown to the user unless `on_error` takes them.
---@param method string a method of protocol.methods
---@param params table|nil
---@param callback fun(result: any)|nil
---@param on_error fun(err: table)|nil
function M.request(method, params, callback, on_error)
  assert(protocol.methods[method] ~= nil, "pi: the daemon has no method " .. method)
  if not running() then
    vim.notify("pi: the daemon is not running; ask something with :Pi to start it", vim.log.levels.WARN)
    return
  end
  if params == nil or vim.tbl_isempty(params) then params = vim.empty_dict() end -- {} would be a JSON array
  state.rpc.request(method, params, function(err, result)
    vim.schedule(function()
      if not err and M.on_receive then M.on_receive("result", method, result) end
      if err and on_error then on_error(err)
      elseif err then vim.notify("pi: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      elseif callback then callback(result) end
    end)
  end)
end

-- The last lines the daemon wrote to stderr: why it could not start or why it stopped.
function M.log_tail(n)
  if not state.log or vim.fn.filereadable(state.log) == 0 then return "" end
  local lines = vim.fn.readfile(state.log)
  return vim.trim(table.concat(vim.list_slice(lines, math.max(1, #lines - n + 1)), "\n"))
end

-- Starts the daemon unless it runs; false when there is none to start (lua/pi/daemon.lua),
-- which keeps `prompt` ({text, behaviour, context}) to send once :PiInstall starts one.
function M.start(opts, prompt)
  M.config = vim.tbl_deep_extend("force", M.config, opts or {})
  if running() then return true end
  local cmd, why_not = daemon.command(M.config)
  if not cmd then daemon.missing(why_not, prompt) return false end
  if M.config.model then vim.list_extend(cmd, { "--model", M.config.model }) end
  state.log = vim.fn.tempname() .. "-pi-daemon.log"
  -- stderr (the daemon's log) goes to a file, so that a failed start can say why.
  state.opened_in = used.workspace(M.config) -- where a prompt makes the workspace "used"
  if M.config.connection == "attach" then cmd = attach.command(cmd, state.opened_in) end
  cmd = vim.list_extend({ "sh", "-c", 'log=$1; shift; exec "$@" 2>>"$log"', "sh", state.log },
                        cmd)
  state.busy, state.settled, state.queue, state.commands = false, 0, { steering = {}, followUp = {} }, {}
  state.stats, state.model, state.seq, state.server, state.ready = nil, nil, nil, nil, {}
  subagents.reset()
  processes.reset()
  local rpc
  local started = vim.uv.now()
  rpc = vim.lsp.rpc.start(cmd, {
    notification = function(method, params)
      if M.on_receive then M.on_receive("notification", method, params) end
      if method == "agent/event" then vim.schedule(function() on_event(params) end) end
      -- a question another client answered (the daemon names its call): its prompt closes
      if method == "$/cancelRequest" and params.toolCallId then
        vim.schedule(function()
          permission.withdraw(params.toolCallId)
          ask.withdraw(params.toolCallId)
          review.close(params.toolCallId)
        end)
      end
    end,
    server_request = function(method, params)
      if M.on_receive then M.on_receive("request", method, params) end
      local handled, result, err = editfs.server_request(method, params)
      if handled then return result end
      if M.config.language_features then
        handled, result, err = language.server_request(method, params)
        if handled then return result, err end
      end
      if method == "permission/request" then return permission.answer(params, M.config, state.workspace) end
      if method == "user/ask" then return ask.answer(params) end
      if method == "workspace/trust" then return workspace_trust(params) end
      if method == "fs/save" then return savebefore.save(params) end
      return nil, vim.lsp.rpc.rpc_response_error(-32601, "unknown method " .. method)
    end,
    on_exit = function(code, signal)
      vim.schedule(function()
        local current = state.rpc == rpc -- not stopped on purpose, nor a newer connection's
        if current then state.rpc = nil processes.daemon_exited() end
        daemon.exited(M, current, code, signal, (vim.uv.now() - started) / 1000, M.log_tail(12))
        vim.cmd("redrawstatus!")
      end)
    end,
  }, { cwd = M.config.cwd or vim.fn.getcwd(), env = M.config.env })
  state.rpc = rpc
  -- until initialize answers: the folder the daemon was started in (its default workspace)
  state.workspace = vim.fs.normalize(vim.fn.fnamemodify(M.config.cwd or vim.fn.getcwd(), ":p"))
  M.request("initialize", { protocolVersion = protocol.PROTOCOL_VERSION, clientInfo = { name = "pi.nvim", modelPicker = ":PiModel" },
                            capabilities = { permissions = M.config.permissions, workspaceTrust = true, askUser = true,
                                             fs = { readTextFile = M.config.editor_fs, applyEdit = M.config.editor_fs,
                                                    save = M.config.save_before_commands or nil },
                                             languageFeatures = M.config.language_features and language.features
                                               or nil } },
            function(result)
              -- the daemon's workspace (--workspace in `cmd`) is what changed paths are relative to
              if type(result.workspace) == "string" then state.workspace = vim.fs.normalize(result.workspace) end
              state.server = type(result.server) == "table" and result.server or nil -- shared: a server
              local ready = state.ready
              state.ready = nil
              for _, fn in ipairs(ready or {}) do fn() end
              firstrun.send_keys(M)
              M.refresh_status()
            end)
  if M.config.editor_fs then editfs.watch_dirty(function(method, params) rpc.notify(method, params) end) end
  M.request("getCommands", {}, function(result) state.commands = result.commands end)
  return true
end

-- Runs `fn` once the daemon started last has answered initialize.
function M.on_ready(fn)
  if state.ready then table.insert(state.ready, fn) else fn() end
end

-- Model, tokens and cost for the statusline, fetched after each answer.
function M.refresh_status()
  if not running() then return end
  local quiet, changes = function() end, state.mode_changes or 0
  M.request("getState", {}, function(s)
    if s.model ~= vim.NIL and s.model then state.model = s.model.provider .. "/" .. s.model.id end
    -- a mode_changed that came while getState was answered is newer than its answer
    if changes == (state.mode_changes or 0) then state.mode = s.mode or state.mode end
    if s.pendingRewind and s.pendingRewind ~= vim.NIL then
      vim.notify("pi: a rewind was cut short; :PiRewind to the same message finishes it", vim.log.levels.WARN)
    end
    if not running() then return end
    -- every window's statusline (the component may be in each)
    M.request("session/stats", {}, function(stats) state.stats = stats vim.cmd("redrawstatus!") end, quiet)
    vim.cmd("redrawstatus!")
  end, quiet)
end

-- The state as parts: model, mode (`with_mode`), tokens and cost, working (`with_mode`), queued,
-- subagents.
local function state_parts(with_mode)
  local parts = { "π " .. (state.model or "no model") }
  if with_mode then table.insert(parts, state.mode) end
  if state.stats then
    table.insert(parts, state.stats.tokens.total .. " tok")
    table.insert(parts, ("$%.4f"):format(state.stats.cost))
  end
  if with_mode and state.busy then table.insert(parts, "working") end
  local queued = #state.queue.steering + #state.queue.followUp
  if queued > 0 then table.insert(parts, queued .. " queued") end
  local running = subagents.running()
  if running > 0 then table.insert(parts, running .. " subagent" .. (running > 1 and "s" or "")) end
  local background = processes.running()
  if background > 0 then
    table.insert(parts, background .. (background > 1 and " processes running" or " process running"))
  end
  return table.concat(parts, " · ")
end

-- A statusline component: `π faux/demo · ask · 1234 tok · $0.0021`, empty while the daemon is not running.
function M.statusline() return running() and state_parts(true) or "" end

-- What the input area's winbar adds to its title (which says the mode and "working").
function M.state_text() return running() and state_parts(false) or "π pi-daemon is not running" end

-- :Pi completion: slash commands for the first word ("/re" -> "/review"), nothing after it
-- or for a path. The list comes from getCommands and follows commands_update.
function M.complete(arglead, cmdline)
  local args = cmdline:gsub("^%s*%S+%s*", "", 1)
  if args ~= arglead or not arglead:match("^/[%w_.:-]*$") then return {} end
  local out = {}
  for _, c in ipairs(state.commands) do
    if vim.startswith("/" .. c.name, arglead) then table.insert(out, "/" .. c.name) end
  end
  return out
end

-- A built-in command ran in the daemon: say so in the chat; /new starts an empty chat.
local function command_done(result)
  if not result or result.disposition ~= "command" then return end
  if result.command.name == "compact" then return end -- its divider says so (lua/pi/compaction.lua)
  if result.command.name == "new" then chat.clear() end
  local file = type(result.command.result) == "table" and result.command.result.file
  chat.line("[/" .. result.command.name .. " done" .. (file and (": " .. file) or "") .. "]")
end

-- The chat's window (made on the right when none shows it) with its input area under it.
function M.open()
  local buf = chat.buffer()
  if #vim.fn.win_findbuf(buf) == 0 then
    vim.cmd("botright vsplit")
    vim.api.nvim_win_set_buf(0, buf)
    vim.wo.foldmethod = "marker"
    vim.wo.foldlevel = 0
  end
  input.config = vim.tbl_extend("force", input.defaults, M.config.input or {})
  return input.open(vim.fn.win_findbuf(buf)[1])
end

-- A prompt that cannot be sent yet is kept: no daemon (sent once :PiInstall starts one), the
-- conversation being loaded again after a crash, no model chosen (lua/pi/firstrun.lua).
function M.prompt(text, behaviour, context)
  local kept = { text = text, behaviour = behaviour, context = context }
  if not M.start(nil, kept) then return end
  M.open()
  if daemon.hold(function() M.prompt(text, behaviour, context) end, kept) then return end
  M.request("prompt", { text = text, streamingBehavior = behaviour, context = context }, command_done,
            function(err) firstrun.failed(M, err, kept) end)
  local workspace = state.opened_in
  vim.schedule(function() used.add(workspace) end) -- after the prompt is on its way
end
function M.continue() M.request("continue", {}) end -- :PiContinue: answer the cut-off end again

-- `context`: editor context items (see editfs.selection), sent with the text.
function M.send(text, context)
  input.remember(text)
  if state.busy then
    local labels = { steer = "Steer: tell pi now, between its steps", followUp = "Follow up: send when pi is done" }
    pick.select({ "steer", "followUp" }, { prompt = "pi is working; send as", kind = "pi.queue",
                                           format_item = function(b) return labels[b] end }, function(choice)
      if choice then M.prompt(text, choice, context) end
    end)
  else M.prompt(text, nil, context) end
end

-- The input area under the chat (lua/pi/input.lua), focused; `context`: editor context items
-- sent with what is written there next (:'<,'>Pi without text); `text`: written there (a
-- prompt given back to the user). Returns its buffer and window.
function M.ask(context, text)
  M.open()
  local buf, win = input.focus(context, vim.fn.win_findbuf(chat.buffer())[1])
  if text then input.set_text(text) end
  return buf, win
end

-- Review (lua/pi/editfs.lua): :PiDiff, :PiAccept, :PiRevert.
function handlers.turn_diff(event)
  state.run = event.runId
  -- a virtual line, like the turn separators: the buffer stays what a replay shows
  chat.mark_end(("[changed %d file(s): :PiDiff to review]"):format(#event.files))
end

-- :PiDiff, :PiAccept, :PiRevert (lua/pi/runreview.lua)
function M.diff(run_id, callback) require("pi.runreview").diff(M, run_id, callback) end
function M.accept(scope) require("pi.runreview").act(M, "changes/accept", scope) end
function M.revert(scope) require("pi.runreview").act(M, "changes/revert", scope) end

function M.steer(text) M.request("steer", { text = text }) end
function M.follow_up(text) M.request("followUp", { text = text }) end
-- Stop: the messages still queued are given back, into the input area above what is written there.
function M.abort()
  M.request("abort", {}, function(result)
    local back = vim.list_extend(vim.list_extend({}, result.steering or {}), result.followUp or {})
    if #back == 0 then return end
    M.open()
    local draft = vim.trim(table.concat(vim.api.nvim_buf_get_lines(input.buffer(), 0, -1, false), "\n"))
    if draft ~= "" then table.insert(back, draft) end
    input.set_text(table.concat(back, "\n\n"))
    vim.notify(("pi: stopped; %d queued message(s) are back in the input area, not sent"):format(#back - (draft ~= "" and 1 or 0)))
  end)
end
function M.new() M.start() M.request("session/new", {}, function() chat.clear() M.refresh_status() end) end

-- :PiSessions, :PiFork, :PiTree (lua/pi/sessions.lua)
M.session_label, M.tree_items = sessions.label, sessions.tree_items
function M.sessions(query) M.start() sessions.resume(M, query) end
function M.fork() sessions.fork(M) end
function M.tree(summarize) sessions.tree(M, summarize) end


-- Draws the chat again from the current session (after its path moved); `after()` once drawn.
function M.redraw(after)
  chat.clear()
  M.open()
  state.after_replay = after
  M.request("session/load", { sessionId = state.session, replay = true }, function() M.refresh_status() end)
end

function M.rewind() M.start() rewind.run(M) end

local function mode_set(mode)
  state.mode, state.mode_changes = mode, (state.mode_changes or 0) + 1
  vim.cmd("redrawstatus!")
end
function M.mode(mode) M.start() modes.choose(M, mode, state.mode, mode_set) end
function M.execute_plan(auto) M.start() modes.execute_plan(M, auto, mode_set) end

function M.subagents() subagents.pick(M) end
function M.processes() return processes.open(M, running()) end -- :PiProcesses

function M.model()
  M.start()
  M.request("listModels", {}, function(result)
    firstrun.pick_model(M, result, state.model, function(model)
      if model then state.model = model.provider .. "/" .. model.id end
    end)
  end)
end

function M.keys() require("pi.access").manage(M) end -- :PiKey

function M.info() vim.notify(table.concat(attach.info(M), "\n")) end -- :PiInfo

function M.show_log()
  if state.log then vim.cmd.split(vim.fn.fnameescape(state.log)) else vim.notify("pi: no daemon log yet") end
end

function M.status()
  state.buf = chat.current()
  return state
end

function M.stop()
  if state.rpc then state.rpc.terminate() state.rpc = nil end
end

-- setup(opts): the configuration (see M.config) and the default keymaps. Calling it is
-- optional; lazy.nvim calls it with `opts`.
function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", M.config, opts or {})
  M.did_setup = true
  local keys = M.config.keymaps
  if keys == false then return end
  local actions = { prompt = M.ask, chat = M.open, abort = M.abort, sessions = M.sessions, model = M.model, new = M.new }
  for name, action in pairs(actions) do
    if keys[name] then vim.keymap.set("n", keys[name], action, { desc = "pi: " .. name }) end
  end
end

return M
