-- :PiInstall — installs pi-daemon into a venv of its own under stdpath("data")/pi-daemon, from
-- the repository the plugin comes from (editor-clients/nvim sits two folders below the
-- repository's pyproject.toml), with a Python >= 3.11 found on PATH. Progress goes to a
-- buffer (pi://install) as pip prints it; once installed the daemon starts, and a prompt
-- kept because no daemon was found is sent. `pi` is require("pi").
local daemon = require("pi.daemon")
local M = {}

-- Interpreters tried in this order (setup's `python` replaces the list).
M.PYTHONS = { "python3.13", "python3.12", "python3.11", "python3", "python" }
local MIN = { 3, 11 }

-- The first candidate that runs and is >= 3.11; nil and what was found otherwise.
---@return string|nil python, string what_was_found
function M.find_python(candidates)
  local seen = {}
  for _, name in ipairs(candidates) do
    if vim.fn.executable(name) == 1 then
      local out = vim.system({ name, "-c", "import sys; print('%d.%d' % sys.version_info[:2])" }, { text = true }):wait()
      local major, minor = (out.stdout or ""):match("^(%d+)%.(%d+)")
      if out.code == 0 and major then
        major, minor = tonumber(major), tonumber(minor)
        if major > MIN[1] or (major == MIN[1] and minor >= MIN[2]) then return vim.fn.exepath(name), "" end
        table.insert(seen, ("%s is %d.%d"):format(name, major, minor))
      end
    end
  end
  return nil, #seen > 0 and table.concat(seen, ", ") or "none of " .. table.concat(candidates, ", ") .. " is on PATH"
end

-- The repository holding this plugin: the folder two levels above editor-clients/nvim.
function M.repository()
  local plugin = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h:h")
  return vim.fn.fnamemodify(plugin, ":h:h")
end

local progress_buf = nil
local function progress(line)
  if not (progress_buf and vim.api.nvim_buf_is_valid(progress_buf)) then
    progress_buf = vim.fn.bufnr("pi://install")
    if progress_buf == -1 then
      progress_buf = vim.api.nvim_create_buf(true, true)
      vim.api.nvim_buf_set_name(progress_buf, "pi://install")
      vim.bo[progress_buf].buftype = "nofile"
    end
    if #vim.fn.win_findbuf(progress_buf) == 0 then vim.cmd("botright 12split") vim.api.nvim_win_set_buf(0, progress_buf) end
    vim.api.nvim_buf_set_lines(progress_buf, 0, -1, false, { line })
  else
    vim.api.nvim_buf_set_lines(progress_buf, -1, -1, false, { line })
  end
  for _, win in ipairs(vim.fn.win_findbuf(progress_buf)) do
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(progress_buf), 0 })
  end
  vim.cmd.redraw()
end

-- Runs `cmd`, its output line by line into the progress buffer; `done(ok)`.
local function step(cmd, done)
  progress("$ " .. table.concat(cmd, " "))
  local function lines(_, data)
    if not data then return end
    vim.schedule(function()
      for _, l in ipairs(vim.split(data, "\n", { trimempty = true })) do progress(l) end
    end)
  end
  local ok, err = pcall(vim.system, cmd, { text = true, stdout = lines, stderr = lines }, function(out)
    vim.schedule(function() done(out.code == 0, out.code) end)
  end)
  if not ok then vim.schedule(function() progress(tostring(err)) done(false, -1) end) end
end

local running = false

-- `done(ok, message)` when finished (tests wait for it); the user reads the progress buffer.
function M.run(pi, done)
  done = done or function() end
  local function fail(msg)
    running = false
    progress("FAILED: " .. msg)
    vim.notify("pi: :PiInstall failed: " .. msg, vim.log.levels.ERROR)
    done(false, msg)
  end
  if running then return vim.notify("pi: :PiInstall is already running", vim.log.levels.WARN) end
  running = true
  progress_buf = nil
  local repo = M.repository()
  if vim.fn.filereadable(repo .. "/pyproject.toml") == 0 then
    return fail(("the plugin is not inside the pi-daemon repository: no pyproject.toml in %s"):format(repo))
  end
  local python, found = M.find_python(pi.config.python or M.PYTHONS)
  if not python then
    return fail(("pi-daemon needs Python >= %d.%d, and none was found (%s); install one, or set python = { '/path/to/python3.12' } in require('pi').setup()")
                :format(MIN[1], MIN[2], found))
  end
  local venv = daemon.managed_dir()
  progress(("Installing pi-daemon from %s into %s with %s"):format(repo, venv, python))
  -- -I: Neovim's current folder (the untrusted workspace) is not on the import path, where a venv or
  -- pip folder would run instead of Python's own; PYTHON* variables are not read either.
  step({ python, "-I", "-m", "venv", venv }, function(ok, code)
    if not ok then return fail(("creating the venv failed (exit code %d)"):format(code)) end
    step({ venv .. "/bin/python", "-I", "-m", "pip", "install", "--upgrade", repo }, function(ok2, code2)
      if not ok2 then return fail(("pip install failed (exit code %d), see pi://install"):format(code2)) end
      running = false
      progress("Installed: " .. daemon.managed_bin())
      if pi.config.cmd then
        progress("Note: setup's cmd (" .. pi.config.cmd[1] .. ") is what pi starts, not this install")
      end
      -- the log has done its job: its split closes (the buffer pi://install keeps it)
      for _, win in ipairs(vim.fn.win_findbuf(progress_buf)) do pcall(vim.api.nvim_win_close, win, false) end
      vim.notify("pi: pi-daemon installed in " .. venv, vim.log.levels.INFO)
      local kept = daemon.take_kept()
      if pi.start(nil, kept) and kept then pi.prompt(kept.text, kept.behaviour, kept.context) end
      done(true)
    end)
  end)
end

return M
