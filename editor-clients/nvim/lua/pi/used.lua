-- The workspaces where this user sent pi a prompt, and the daemon started before it is asked
-- for when Neovim opens one of them (or :cd goes there), so the first prompt does not wait for
-- a spawn. The list is the user's own record in stdpath("state")/pi/workspaces.json (the
-- latest first, at most M.MAX, written whole to a temporary file then renamed): nothing a
-- repository holds (a committed .pi/sessions/ folder) makes a workspace "used". Where pi was
-- never used this reads that one small file and loads nothing else of the plugin.
-- setup's `prestart = false` turns it off.
local M = {}

M.MAX = 100 -- workspaces kept; the one used longest ago is dropped first

function M.file() return vim.fn.stdpath("state") .. "/pi/workspaces.json" end

-- The workspace of this Neovim as the daemon names it: the `--workspace` of setup's cmd (the
-- daemon may be on another machine, reached over ssh), else setup's cwd, else the current directory.
function M.workspace(config)
  for i, part in ipairs(config.cmd or {}) do
    if part == "--workspace" and config.cmd[i + 1] then return config.cmd[i + 1] end
  end
  local dir = config.cwd or vim.fn.getcwd()
  return vim.uv.fs_realpath(dir) or vim.fs.normalize(vim.fn.fnamemodify(dir, ":p"))
end

-- The list as kept (latest first); an unreadable or malformed file is an empty list.
function M.list()
  local file = io.open(M.file(), "r")
  if not file then return {} end
  local text = file:read("*a")
  file:close()
  local ok, list = pcall(vim.json.decode, text)
  if not ok or not vim.islist(list) then return {} end
  return vim.tbl_filter(function(path) return type(path) == "string" end, list)
end

function M.has(workspace) return vim.tbl_contains(M.list(), workspace) end

-- The user sent a prompt in `workspace`: it goes first in the list (written only when it was not first).
function M.add(workspace)
  local list = M.list()
  if list[1] == workspace then return end
  list = vim.tbl_filter(function(path) return path ~= workspace end, list)
  table.insert(list, 1, workspace)
  list = vim.list_slice(list, 1, M.MAX)
  local path = M.file()
  vim.fn.mkdir(vim.fs.dirname(path), "p")
  local tmp = ("%s.%d.tmp"):format(path, vim.uv.os_getpid())
  -- a Neovim quitting or another one writing meanwhile never leaves half a file
  if vim.fn.writefile({ vim.json.encode(list) }, tmp) ~= 0 or not vim.uv.fs_rename(tmp, path) then
    vim.uv.fs_unlink(tmp)
  end
end

-- Neovim opened, or its current directory changed: in a workspace where pi was used, the
-- daemon is started (child mode) or reached (attach mode: its server started when none runs),
-- unless one runs. `config`: setup's, when setup was called.
function M.opened(config)
  config = config or {}
  if config.prestart == false or not M.has(M.workspace(config)) then return end
  local pi = require("pi")
  if pi.status().rpc or not require("pi.daemon").command(pi.config) then return end -- no daemon: :Pi says so
  if pi.config.connection == "attach" then
    -- the session kept for this workspace comes back when its server still runs (lua/pi/attach.lua)
    require("pi.attach").resume(pi, function() pi.start() end)
  else
    pi.start()
  end
end

return M
