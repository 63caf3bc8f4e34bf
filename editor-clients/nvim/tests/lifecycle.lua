-- The daemon's life (lua/pi/daemon.lua, lua/pi/install.lua): killed while idle or mid-answer it
-- comes back with the same conversation; it is not restarted forever; a missing daemon says
-- how to install it and keeps the prompt; :PiInstall installs it and sends that prompt.
return function(t)
  local test, start, workspace, wait, text, buffer_text = t.test, t.start, t.workspace, t.wait, t.text, t.buffer_text
  local chat = require("pi.chat")
  local daemon = require("pi.daemon")

  -- The faux model's replies of the next daemon started (a restarted one reads the script anew).
  local function next_replies(dir, replies, opts)
    local script = vim.tbl_extend("force", { modelId = "script", replies = replies }, opts or {})
    vim.fn.writefile({ vim.json.encode(script) }, dir .. "/script.json")
  end

  -- Kills the daemon of the workspace `dir` (its command line names it).
  local function kill(dir)
    local found = t.daemon_pids(dir)
    assert(#found == 1, "the daemon's pid: " .. vim.inspect(found))
    vim.uv.kill(found[1], "sigkill")
  end

  local function has_mark(pattern)
    for _, m in ipairs(chat.marks()) do
      if m:find(pattern, 1, true) then return true end
    end
    return false
  end

  local capture = t.capture

  test("a daemon killed while idle comes back with the same conversation, which goes on", function()
    local dir = workspace({ text("first answer") })
    local pi = start(dir)
    vim.cmd("Pi remember me")
    wait("settled", function() return pi.status().settled >= 1 end)
    next_replies(dir, { text("second answer") })
    local session = pi.status().session
    local shown, restore = capture()
    kill(dir)
    wait("the restart said in the chat", function()
      return has_mark("— pi-daemon was killed (SIGKILL): restarted, this conversation loaded again —")
    end)
    restore()
    assert(shown[1] == "pi: pi-daemon was killed (SIGKILL); restarting it", vim.inspect(shown))
    local content = buffer_text()
    assert(content:find("## you\nremember me", 1, true) and content:find("first answer", 1, true), content)
    assert(not has_mark("cut off"), vim.inspect(chat.marks())) -- the answer had ended
    vim.cmd("Pi and now?")
    wait("the next answer", function() return buffer_text():find("second answer", 1, true) ~= nil end)
    wait("settled", function() return pi.status().settled >= 1 end)
    -- a prompt typed while the conversation is being loaded again waits for it, then goes there
    next_replies(dir, { text("third answer") })
    _, restore = capture()
    kill(dir)
    wait("the exit noticed", function() return daemon.restoring() end)
    vim.cmd("Pi typed meanwhile")
    wait("its answer", function() return buffer_text():find("third answer", 1, true) ~= nil end)
    restore()
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(pi.status().session == session, "the same session")
    content = buffer_text()
    assert(content:find("first answer", 1, true) < content:find("and now?", 1, true)
           and content:find("second answer", 1, true) < content:find("## you\ntyped meanwhile", 1, true), content)
  end)

  test("a daemon killed mid-answer: what was shown stays, marked cut off; :PiContinue answers again", function()
    local dir = workspace({ text("partial " .. string.rep("x", 3000)) }, { chunkSize = 2, delayMs = 3 })
    local pi = start(dir)
    vim.cmd("Pi talk long")
    wait("streaming", function() return buffer_text():find("partial xxxxxxxx", 1, true) ~= nil end)
    next_replies(dir, { text("answered again") })
    assert(pi.status().busy)
    local _, restore = capture()
    kill(dir)
    wait("the cut-off answer marked", function() return has_mark(":PiContinue answers again") end)
    restore()
    assert(has_mark("pi-daemon was killed (SIGKILL): restarted"), vim.inspect(chat.marks()))
    assert(not pi.status().busy, "no longer busy")
    local content = buffer_text()
    assert(content:find("## you\ntalk long", 1, true) and content:find("partial xxxxxxxx", 1, true), content)
    assert(select(2, content:gsub("talk long", "")) == 1, "drawn once: " .. content)
    vim.cmd("PiContinue")
    wait("the answer again", function() return buffer_text():find("answered again", 1, true) ~= nil end)
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(require("pi").statusline():find("working", 1, true) == nil, require("pi").statusline())
  end)

  test("a daemon that keeps dying at start is restarted twice, then not again, saying why", function()
    local dir = workspace({ text("never") })
    local pi = start(dir)
    local shown, restore = capture()
    pi.stop()
    pi.start({ cmd = { t.python, "-c", "import sys; sys.stderr.write('broken install\\n'); sys.exit(3)" } })
    wait("the third death", function()
      return vim.tbl_contains(vim.tbl_map(function(m) return m:find("not restarting", 1, true) ~= nil end, shown), true)
    end)
    vim.wait(500)
    restore()
    local last = shown[#shown]
    assert(last:find("pi-daemon exited with code 3, 3 times in a row", 1, true) and last:find("broken install", 1, true),
           vim.inspect(shown))
    assert(#vim.tbl_filter(function(m) return m:find("; restarting it", 1, true) ~= nil end, shown) == 2, vim.inspect(shown))
    assert(has_mark("not restarted (:PiLog says why)"), vim.inspect(chat.marks()))
    assert(pi.statusline() == "", "not running")
  end)

  test("prompts held while a restart is given up on come back to the input area, with their selection", function()
    local dir = workspace({ text("first answer") })
    local pi = start(dir)
    vim.cmd("Pi hello")
    wait("settled", function() return pi.status().settled >= 1 end)
    -- the restarts die soon after starting, so the daemon is given up on
    t.configured("cmd", { t.python, "-c", "import sys, time; time.sleep(1.5); sys.exit(3)" })
    local shown = t.capture()
    kill(dir)
    wait("the exit noticed", function() return daemon.restoring() end)
    vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/held.py"))
    vim.api.nvim_buf_set_lines(0, 0, -1, false, { "x = 1", "y = 2" })
    vim.cmd("1,2Pi explain these")
    vim.cmd("Pi and this")
    wait("given up", function() return has_mark("not restarted (:PiLog says why)") end)
    local input = require("pi.input")
    assert(vim.api.nvim_get_current_win() == input.window(), "the input area focused")
    assert(vim.deep_equal(vim.api.nvim_buf_get_lines(input.buffer(), 0, -1, false),
                          { "explain these", "", "and this" }), vim.inspect(vim.api.nvim_buf_get_lines(input.buffer(), 0, -1, false)))
    assert(input.winbar():find("about held.py lines 1-2", 1, true), input.winbar())
    assert(#vim.tbl_filter(function(m) return m:find("not restarting", 1, true) ~= nil end, shown) == 1, vim.inspect(shown))
    vim.cmd.stopinsert()
    vim.cmd("close")
    vim.cmd("bwipeout! " .. vim.fn.fnameescape(dir .. "/held.py"))
  end)

  -- Neither setup's cmd, nor pi-daemon on PATH, nor an installed one: a clear message; :PiInstall
  -- installs it (really, with pip) and the kept prompt is answered. Run from a workspace holding
  -- venv and pip folders of its own: Python's are what run.
  test("no pi-daemon: the message points at :PiInstall, which installs it and sends the kept prompt", function()
    local dir = workspace({})
    local pi = start(dir)
    pi.stop()
    local marker = dir .. "/ran"
    for _, name in ipairs({ "venv", "pip" }) do
      vim.fn.mkdir(dir .. "/" .. name, "p")
      vim.fn.writefile({}, dir .. "/" .. name .. "/__init__.py")
      vim.fn.writefile({ ("open(%q, 'a').write('the workspace''s %s ran')"):format(marker, name) },
                       dir .. "/" .. name .. "/__main__.py")
    end
    local cwd = vim.fn.getcwd()
    vim.fn.chdir(dir)
    local data, path = vim.env.XDG_DATA_HOME, vim.env.PATH
    vim.env.XDG_DATA_HOME = dir .. "/data"
    vim.env.PATH = "/usr/bin:/bin" -- no pi-daemon there
    pi.config.cmd, pi.config.model = nil, "faux/echo"
    local ok, err = pcall(function()
      local shown, restore = capture()
      vim.cmd("Pi hello after install")
      restore()
      assert(#shown == 1 and shown[1]:find("pi-daemon was not found", 1, true) and shown[1]:find(":PiInstall", 1, true)
             and shown[1]:find("Your message is kept", 1, true), vim.inspect(shown))
      pi.config.python = { "/nonexistent/python3.99" }
      shown, restore = capture()
      local failed
      require("pi.install").run(pi, function(done, msg) failed = not done and msg end)
      restore()
      assert(failed and failed:find("needs Python >= 3.11, and none was found", 1, true), tostring(failed))
      pi.config.python = nil
      local installed
      shown, restore = capture()
      require("pi.install").run(pi, function(done, msg) installed = done or msg end)
      wait("pip install", function() return installed ~= nil end, 240000)
      restore()
      assert(installed == true, tostring(installed))
      assert(vim.tbl_contains(shown, "pi: pi-daemon installed in " .. dir .. "/data/nvim/pi-daemon"), vim.inspect(shown))
      local progress = table.concat(vim.api.nvim_buf_get_lines(vim.fn.bufnr("pi://install"), 0, -1, false), "\n")
      assert(progress:find("Successfully installed", 1, true) and progress:find("Installed: " .. dir, 1, true), progress)
      assert(vim.fn.bufwinnr("pi://install") == -1, "the install's split closes once it succeeded")
      wait("the kept prompt answered", function() return buffer_text():find("## you\nhello after install", 1, true) ~= nil end)
      wait("settled", function() return pi.status().settled >= 1 end)
      -- the statusline's model comes with the getState asked after the answer
      wait("the model in the statusline", function() return pi.status().model == "faux/echo" end)
      if vim.fn.filereadable(marker) == 1 then error("a workspace's folder ran: " .. vim.fn.readfile(marker)[1]) end
    end)
    vim.fn.chdir(cwd)
    vim.env.XDG_DATA_HOME, vim.env.PATH = data, path
    pi.config.model = nil
    pi.stop()
    vim.cmd("silent! bwipeout! pi://install")
    if not ok then error(err, 0) end
  end)
end
