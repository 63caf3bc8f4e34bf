-- The daemon's life seen from the plugin: which command starts it (setup's `cmd`, `pi-daemon`
-- on PATH, or the venv :PiInstall manages), and what happens when it dies without being asked
-- to: the chat says so, the daemon is started again, the same conversation is loaded and drawn
-- again, an answer it cut off stays shown and marked, and prompts typed meanwhile wait for it.
-- `pi` is require("pi").
local chat = require("pi.chat")
local attach = require("pi.attach")
local M = {}

M.QUICK_SECONDS = 30 -- a daemon that dies sooner than this after its start died "quickly"
M.MAX_QUICK_DEATHS = 3 -- that many quick deaths in a row: no more restarts

local quick_deaths = 0
local restarted_log = nil -- the log of the daemon M.exited started last (each start has its own)
local restoring = false
local waiting = {} -- what was asked while the conversation was being loaded again
local kept = nil -- a prompt typed while no daemon could be started, sent once one runs

-- The folder of the venv :PiInstall creates (lua/pi/install.lua).
function M.managed_dir() return vim.fn.stdpath("data") .. "/pi-daemon" end
function M.managed_bin() return M.managed_dir() .. "/bin/pi-daemon" end

-- The daemon's command: setup's `cmd`, else `pi-daemon` on PATH, else the managed venv's.
---@return string[]|nil cmd, string|nil why_not
function M.command(config)
  if config.cmd then
    local cmd = vim.deepcopy(config.cmd)
    if vim.fn.executable(cmd[1]) == 1 then return cmd end
    return nil, ("`%s` (setup's cmd) is not an executable"):format(cmd[1])
  end
  if vim.fn.executable("pi-daemon") == 1 then return { "pi-daemon" } end
  if vim.fn.executable(M.managed_bin()) == 1 then return { M.managed_bin() } end
  return nil, "pi-daemon was not found: not on PATH and not installed by :PiInstall"
end

-- No daemon to start: say how to get one, and keep the prompt that was typed.
function M.missing(why, prompt)
  if prompt then kept = prompt end
  local msg = "pi: " .. why .. ". :PiInstall installs it (or set cmd in require('pi').setup())."
  if kept then msg = msg .. " Your message is kept and sent once pi-daemon runs." end
  vim.notify(msg, vim.log.levels.ERROR)
end

-- The prompt kept by M.missing, once (nil when there is none).
function M.take_kept()
  local prompt = kept
  kept = nil
  return prompt
end

local SIGNALS = { [1] = "SIGHUP", [2] = "SIGINT", [6] = "SIGABRT", [9] = "SIGKILL", [11] = "SIGSEGV", [15] = "SIGTERM" }

-- "pi-daemon was killed (SIGKILL)", "pi-daemon exited with code 3"
function M.how(code, signal)
  if signal and signal ~= 0 then return ("pi-daemon was killed (%s)"):format(SIGNALS[signal] or ("signal " .. signal)) end
  return ("pi-daemon exited with code %d"):format(code)
end

-- The chat's windows show its end (a redraw left them wherever the old text had them).
local function show_end()
  local buf = chat.current()
  if not buf then return end
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
  end
  vim.cmd("redrawstatus!") -- every window's statusline: no longer "working"
end

-- True while the conversation is being loaded again; `send()` runs once it is. `prompt`
-- ({text, context}): what the user sent, put back in the input area (its editor context
-- with it) if the daemon is given up on meanwhile.
function M.hold(send, prompt)
  if not restoring then return false end
  table.insert(waiting, { send = send, prompt = prompt })
  return true
end

local function release()
  restoring = false
  local held = waiting
  waiting = {}
  for _, h in ipairs(held) do h.send() end
end

function M.restoring() return restoring end

-- No daemon to send them to: what was typed meanwhile goes back to the input area.
local function give_back(pi)
  restoring = false
  local texts, context = {}, {}
  for _, h in ipairs(waiting) do
    table.insert(texts, h.prompt.text)
    vim.list_extend(context, h.prompt.context or {})
  end
  waiting = {}
  if #texts == 0 then return end
  pi.ask(#context > 0 and context or nil, table.concat(texts, "\n\n"))
end

local function buffer_lines()
  local buf = chat.current()
  return buf and vim.api.nvim_buf_get_lines(buf, 0, -1, false) or {}
end

-- The lines shown before the daemon died that the replay did not draw again: the part of an
-- answer that had not ended (not in the session file). Only when the replay is a prefix of
-- what was shown, so nothing is drawn twice.
function M.cut_off(before, after)
  if #after >= #before then return {} end
  for i = 1, #after do
    if before[i] ~= after[i] then return {} end
  end
  local tail = vim.list_slice(before, #after + 1, #before)
  for _, l in ipairs(tail) do
    if vim.trim(l) ~= "" then return tail end
  end
  return {}
end

-- The same server still holds the session (attach mode, only the bridge ended): the chat gets
-- the events it missed (fromSeq), or all of it again when the server no longer keeps them.
local function catch_up(pi, session, from_seq, what)
  local state = pi.status()
  local function finish(result)
    chat.mark_end(("— %s: connected again%s —"):format(what, result.catchUp == "replay" and ", the conversation loaded again" or ""))
    show_end()
    release()
  end
  attach.load(pi, session, from_seq, function(result)
    if result.catchUp == "replay" then state.after_replay = function() finish(result) end else finish(result) end
  end, function(err)
    chat.mark_end(("— %s; the conversation could not be loaded again: %s —"):format(what, err.message or vim.inspect(err)))
    release()
  end)
end

-- Loads `session` in the new daemon and draws it again; what was cut off stays, marked.
-- `seen` ({pid, seq}: the server and the last event seen before, attach mode): when the same
-- server answers, only what was missed is asked for.
local function restore(pi, session, before, what, seen)
  local state = pi.status()
  if seen then
    return pi.on_ready(function()
      if state.server and state.server.pid == seen.pid and seen.seq then
        return catch_up(pi, session, seen.seq + 1, what)
      end
      restore(pi, session, before, what)
    end)
  end
  local loaded, drawn, interrupted = false, false, false
  local function finish()
    if not (loaded and drawn) then return end
    local tail = M.cut_off(before, buffer_lines())
    if #tail > 0 then chat.append("\n" .. table.concat(tail, "\n")) end
    chat.mark_end(("— %s: restarted, this conversation loaded again —"):format(what))
    if interrupted then chat.mark_end("— the answer was cut off: :PiContinue answers again —") end
    show_end()
    release()
  end
  chat.clear()
  state.after_replay = function() drawn = true finish() end
  pi.request("session/load", { sessionId = session, replay = true }, function(result)
    interrupted, loaded = result.interrupted == true, true
    state.busy = result.state ~= nil and result.state.isStreaming == true -- a shared server's run goes on
    pi.refresh_status()
    finish()
  end, function(err)
    -- nothing stored to load (a conversation not started yet): the chat as it was
    state.after_replay = nil
    chat.append("\n" .. table.concat(before, "\n"))
    chat.mark_end(("— %s and was restarted; the conversation could not be loaded: %s —")
                  :format(what, err.message or vim.inspect(err)))
    show_end()
    release()
  end)
end

-- The daemon exited. `current`: it was the connection in use (not one stopped on purpose);
-- `lived`: seconds since it started; `log_tail`: its last stderr lines.
function M.exited(pi, current, code, signal, lived, log_tail)
  if not current then return end
  local state = pi.status()
  local what = M.how(code, signal)
  local restarted = state.log ~= nil and state.log == restarted_log -- not one the user started
  quick_deaths = (restarted and lived < M.QUICK_SECONDS) and quick_deaths + 1 or 1
  local detail = log_tail ~= "" and ":\n" .. log_tail or ""
  if quick_deaths >= M.MAX_QUICK_DEATHS then
    quick_deaths = 0
    state.busy = false
    give_back(pi)
    show_end()
    chat.mark_end(("— %s, %d times in a row soon after starting: not restarted (:PiLog says why) —")
                  :format(what, M.MAX_QUICK_DEATHS))
    vim.notify(("pi: %s, %d times in a row soon after starting; not restarting it%s")
               :format(what, M.MAX_QUICK_DEATHS, detail), vim.log.levels.ERROR)
    return
  end
  vim.notify(("pi: %s; restarting it%s"):format(what, detail), vim.log.levels.WARN)
  local session, before = state.session, buffer_lines()
  local seen = pi.config.connection == "attach" and state.server
    and { pid = state.server.pid, seq = state.seq } or nil
  if not pi.start() then return end
  restarted_log = state.log
  if not session then
    chat.mark_end(("— %s and was restarted —"):format(what))
    return
  end
  restoring = true
  restore(pi, session, before, what, seen)
end

return M
