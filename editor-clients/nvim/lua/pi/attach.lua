-- The connection to a daemon that outlives Neovim (setup's `connection = "attach"`, the default):
-- the plugin runs `pi-daemon attach --workspace W`, which reaches the workspace's server (and
-- starts one when none runs). Quitting Neovim only closes that pipe: a run goes on in the server.
-- The session this Neovim had open is kept per workspace in stdpath("state")/pi/sessions.json,
-- and when Neovim opens the workspace again (one where pi was used, lua/pi/used.lua) while its
-- server runs, the session is loaded again (replayed into the empty chat, a run still streaming
-- shown streaming). `pi` is require("pi").
local chat = require("pi.chat")
local M = {}

-- The workspace of this Neovim, as the daemon names it (lua/pi/used.lua).
M.workspace = require("pi.used").workspace

-- The index of the daemon's name in `cmd` (`pi-daemon`, a path to it, or `-m pi_daemon`): the
-- subcommand goes right after it; a command naming neither is the daemon itself (its first word).
local function name_at(cmd)
  for i, part in ipairs(cmd) do
    if vim.fs.basename(part) == "pi-daemon" or (part == "pi_daemon" and cmd[i - 1] == "-m") then return i end
  end
  return 1
end

-- `cmd` (the daemon and its options) as `<daemon> attach --workspace W <options>`.
function M.command(cmd, workspace)
  local at = name_at(cmd)
  local out = vim.list_extend(vim.list_slice(cmd, 1, at), { "attach" })
  if not vim.tbl_contains(cmd, "--workspace") then vim.list_extend(out, { "--workspace", workspace }) end
  return vim.list_extend(out, vim.list_slice(cmd, at + 1))
end

-- `<daemon> ps --json`: the servers of this user.
function M.ps_command(cmd) return vim.list_extend(vim.list_slice(cmd, 1, name_at(cmd)), { "ps", "--json" }) end

local function state_file() return vim.fn.stdpath("state") .. "/pi/sessions.json" end

local function read_all()
  local ok, text = pcall(vim.fn.readfile, state_file())
  if not ok then return {} end
  local decoded_ok, all = pcall(vim.json.decode, table.concat(text, "\n"))
  return decoded_ok and type(all) == "table" and all or {}
end

-- What this Neovim kept for `workspace`: { sessionId } or nil. (No seq: a Neovim opened again has
-- an empty chat, which only a replay fills; fromSeq is for a chat that still shows the session.)
function M.saved(workspace)
  local entry = read_all()[workspace]
  return type(entry) == "table" and type(entry.sessionId) == "string" and entry or nil
end

-- Keeps the session `pi` shows for its workspace (attach mode only; nothing kept without one).
function M.remember(pi)
  if pi.config.connection ~= "attach" then return end
  local state = pi.status()
  if not state.session then return end
  local all = read_all()
  all[M.workspace(pi.config)] = { sessionId = state.session }
  vim.fn.mkdir(vim.fs.dirname(state_file()), "p")
  vim.fn.writefile({ vim.json.encode(all) }, state_file())
end

-- Loads `session` on this connection. `from_seq`: the chat shows it up to there (this server's
-- numbering), only the events missed are sent; nil: the chat is cleared and it is replayed.
-- `done(result)` once answered; `failed(err)` when it could not be loaded.
function M.load(pi, session, from_seq, done, failed)
  local state = pi.status()
  local params = { sessionId = session }
  if from_seq then params.fromSeq = from_seq else params.replay = true chat.clear() end
  pi.request("session/load", params, function(result)
    -- fromSeq is older than the server keeps: the conversation is replayed, after this answer
    if result.catchUp == "replay" then chat.clear() end
    state.session = result.sessionId
    state.busy = result.state ~= nil and result.state.isStreaming == true -- a run still going on
    M.remember(pi)
    pi.refresh_status()
    if done then done(result) end
  end, failed)
end

-- The servers `pi-daemon ps --json` lists, as a list (nil when it failed).
local function servers(out)
  if out.code ~= 0 then return nil end
  local ok, listed = pcall(vim.json.decode, out.stdout or "")
  if not ok or type(listed) ~= "table" then return nil end
  return listed.servers or listed
end

-- Neovim opened a workspace where pi was used (lua/pi/used.lua): the session kept for it is
-- loaded again when its server runs (a run it is streaming shows in the chat, opened for it);
-- otherwise (no session kept, no server running) `otherwise()`.
function M.resume(pi, otherwise)
  otherwise = otherwise or function() end
  if pi.config.connection ~= "attach" or pi.status().rpc then return end
  local workspace = M.workspace(pi.config)
  local saved = M.saved(workspace)
  local cmd = saved and require("pi.daemon").command(pi.config)
  if not cmd then return otherwise() end
  vim.system(M.ps_command(cmd), { text = true, env = pi.config.env, cwd = workspace }, function(out)
    vim.schedule(function()
      local running = vim.tbl_filter(function(s)
        return type(s) == "table" and type(s.workspace) == "string"
          and (s.workspace == workspace or vim.uv.fs_realpath(s.workspace) == workspace)
      end, servers(out) or {})
      if pi.status().rpc then return end
      if #running == 0 then return otherwise() end
      if not pi.start() then return end
      pi.open()
      vim.cmd("wincmd p") -- the chat is shown; the cursor stays where the user opened Neovim
      M.load(pi, saved.sessionId, nil, nil, function(err)
        vim.notify("pi: the last session could not be loaded again: " .. (err.message or vim.inspect(err)),
                   vim.log.levels.WARN)
      end)
    end)
  end)
end

-- :PiInfo — how this Neovim reaches the daemon.
function M.info(pi)
  local state = pi.status()
  local server = state.server
  local lines = { ("connection: %s"):format(pi.config.connection) }
  if not state.rpc then table.insert(lines, "daemon: not running (:Pi starts it)")
  elseif server and server.shared then
    table.insert(lines, ("daemon: shared server, pid %d (it outlives this Neovim; `pi-daemon ps` lists it)")
                 :format(server.pid))
  else
    table.insert(lines, "daemon: a child of this Neovim" .. (server and (", pid " .. server.pid) or ""))
  end
  table.insert(lines, "workspace: " .. (state.workspace or M.workspace(pi.config)))
  table.insert(lines, "session: " .. (state.session or "none yet")
                      .. (state.seq and (", last event seq " .. state.seq) or ""))
  if state.log then table.insert(lines, "log: " .. state.log .. " (:PiLog)") end
  return lines
end

return M
