-- connection = "attach" (lua/pi/attach.lua) against the real `pi-daemon attach` and its server:
-- the pipe closing mid-answer leaves the run going and a Neovim opened again finds it streaming;
-- a bridge killed mid-answer catches up with fromSeq, nothing drawn twice; :PiInfo says the
-- daemon is shared. Each test has its own XDG_RUNTIME_DIR and state folder, and stops its servers.
return function(t)
  local test, workspace, wait, text, buffer_text = t.test, t.workspace, t.wait, t.text, t.buffer_text
  local chat = require("pi.chat")
  local attach = require("pi.attach")
  local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")

  -- A private runtime folder (a short path: the socket's must stay under 108 bytes) and state
  -- folder for the test; its servers are stopped (SIGTERM, then waited for) at its end.
  local function private_dirs()
    local runtime = "/tmp/pirt-" .. vim.fn.rand() % 1000000
    vim.fn.mkdir(runtime, "p", tonumber("700", 8))
    t.replace(vim.env, "XDG_STATE_HOME", vim.fn.tempname())
    t.replace(vim.env, "XDG_RUNTIME_DIR", runtime) -- the plugin's `ps` and the daemon see it
    t.replace(require("pi").config, "connection", "attach")
    t.finally(function()
      require("pi").stop()
      local out = vim.system({ t.python, "-m", "pi_daemon", "ps", "--json" },
                             { text = true, env = { XDG_RUNTIME_DIR = runtime } }):wait()
      local ok, servers = pcall(vim.json.decode, out.stdout or "")
      for _, s in ipairs(ok and servers or {}) do
        vim.uv.kill(s.pid, "sigterm")
        vim.wait(10000, function() return vim.uv.kill(s.pid, 0) ~= 0 end, 50)
      end
      vim.fn.delete(runtime, "rf")
    end)
    return runtime
  end

  local function start_attached(dir, runtime)
    return t.start(dir, false, { "--idle-timeout", "30" }, nil,
                   { connection = "attach", env = { XDG_RUNTIME_DIR = runtime } })
  end

  test("attach: `attach --workspace W` goes right after the daemon's name; a --workspace of cmd names it", function()
    local cmd = attach.command({ "/usr/bin/python3", "-m", "pi_daemon", "--model", "faux/echo" }, "/w")
    assert(vim.deep_equal(cmd, { "/usr/bin/python3", "-m", "pi_daemon", "attach", "--workspace", "/w", "--model",
                                 "faux/echo" }), vim.inspect(cmd))
    cmd = attach.command({ "/home/me/.local/bin/pi-daemon" }, "/w")
    assert(vim.deep_equal(cmd, { "/home/me/.local/bin/pi-daemon", "attach", "--workspace", "/w" }), vim.inspect(cmd))
    local remote = { "ssh", "devbox", "pi-daemon", "--workspace", "/srv/p" }
    cmd = attach.command(remote, attach.workspace({ cmd = remote }))
    assert(vim.deep_equal(cmd, { "ssh", "devbox", "pi-daemon", "attach", "--workspace", "/srv/p" }), vim.inspect(cmd))
    assert(vim.deep_equal(attach.ps_command(remote), { "ssh", "devbox", "pi-daemon", "ps", "--json" }))
  end)

  local ANSWER = "streamed " .. string.rep("abcdefghij", 60) .. " the end."

  test("attach: Neovim quit mid-answer and opened again finds the conversation and the answer still streaming", function()
    local runtime = private_dirs()
    local dir = workspace({ text("first answer"), text(ANSWER) }, { chunkSize = 2, delayMs = 8 })
    local pi = start_attached(dir, runtime)
    vim.cmd("Pi remember the first")
    wait("settled", function() return pi.status().settled >= 1 end)
    vim.cmd("Pi now a long one")
    wait("streaming", function() return buffer_text():find("streamed abcdefghij", 1, true) ~= nil end)
    local session = pi.status().session
    assert(attach.saved(attach.workspace(pi.config)).sessionId == session,
           vim.inspect(attach.saved(attach.workspace(pi.config))))
    pi.stop() -- the pipe closes, as when Neovim exits
    chat.clear() -- a Neovim opened again: nothing shown yet
    assert(buffer_text() == "")
    attach.resume(pi)
    wait("the conversation back", function() return buffer_text():find("first answer", 1, true) ~= nil end)
    wait("shown streaming", function() return pi.status().busy end)
    assert(pi.statusline():find("working", 1, true), pi.statusline())
    wait("the answer's end", function() return buffer_text():find("the end.", 1, true) ~= nil end, 30000)
    wait("settled", function() return pi.status().settled >= 1 end)
    local content = buffer_text()
    assert(pi.status().session == session, "the same session")
    assert(select(2, content:gsub("## you\nnow a long one", "")) == 1, content)
    assert(select(2, content:gsub("streamed abcdefghij", "")) == 1, "the answer drawn once: " .. content)
    assert(content:find(ANSWER, 1, true), "the whole answer, in one piece: " .. content)
  end)

  test("attach: a bridge killed mid-answer connects again and gets only the events it missed (fromSeq)", function()
    local runtime = private_dirs()
    local dir = workspace({ text(ANSWER) }, { chunkSize = 2, delayMs = 8 })
    local pi = start_attached(dir, runtime)
    local sent = {}
    local check = pi.on_receive -- the schema check goes on
    t.replace(pi, "on_receive", function(kind, method, value)
      check(kind, method, value)
      if kind == "notification" and method == "agent/event" and not value.replay then table.insert(sent, value.seq) end
      if kind == "result" and method == "session/load" then table.insert(sent, { catchUp = value.catchUp }) end
    end)
    vim.cmd("Pi talk long")
    wait("streaming", function() return buffer_text():find("streamed abcdefghij", 1, true) ~= nil end)
    local server = pi.status().server
    assert(server and server.shared == true, vim.inspect(server))
    local info = table.concat(attach.info(pi), "\n")
    assert(info:find("daemon: shared server, pid " .. server.pid, 1, true), info)
    local bridges = t.daemon_pids("attach")
    assert(#bridges == 1, vim.inspect(bridges))
    vim.uv.kill(bridges[1], "sigkill")
    wait("connected again", function()
      return vim.iter(chat.marks()):any(function(m) return m:find("connected again", 1, true) ~= nil end)
    end)
    assert(pi.status().server.pid == server.pid, "the same server")
    wait("the answer's end", function() return buffer_text():find("the end.", 1, true) ~= nil end, 30000)
    wait("settled", function() return pi.status().settled >= 1 end)
    local content = buffer_text()
    assert(content:find(ANSWER, 1, true), "the whole answer, nothing twice, nothing missing: " .. content)
    assert(vim.iter(sent):any(function(s) return type(s) == "table" and s.catchUp == "events" end), vim.inspect(sent))
    -- every live event once, in order, no gap
    local seqs = vim.tbl_filter(function(s) return type(s) == "number" end, sent)
    for i = 2, #seqs do assert(seqs[i] == seqs[i - 1] + 1, "seq " .. seqs[i - 1] .. " then " .. seqs[i]) end
  end)

  test("attach: a permission request another editor answered closes here while the call runs", function()
    local runtime = private_dirs()
    local dir = workspace({ t.call("bash", { command = "sleep 4; echo slept" }), text("ran it") })
    t.configured("review", false) -- asked with the picker
    local late = nil
    t.replace(vim.ui, "select", function(_, _, on_choice) late = on_choice end) -- nobody answers here
    local pi = t.start(dir, true, { "--idle-timeout", "30" }, nil,
                       { connection = "attach", env = { XDG_RUNTIME_DIR = runtime } })
    vim.cmd("Pi run it")
    wait("the picker", function() return late ~= nil end)
    local permission = require("pi.permission")
    assert(permission.count() == 1)
    local out = {}
    local other = vim.system({ t.python, root .. "/tests/other_client.py", dir, pi.status().session },
                             { text = true, env = { XDG_RUNTIME_DIR = runtime, PI_DAEMON_HOME = dir } },
                             function(done) out = done end)
    t.finally(function() other:kill(9) end)
    wait("withdrawn here", function() return permission.count() == 0 end)
    assert(not buffer_text():find("\nslept", 1, true), "withdrawn before the call ended: " .. buffer_text())
    local shown = t.capture()
    late({ "allow_once" }) -- the user answers the picker that was withdrawn: said, not sent
    assert(vim.tbl_contains(shown, "pi: that permission request was withdrawn; the answer was not sent"), vim.inspect(shown))
    wait("the call ran", function() return buffer_text():find("ran it", 1, true) ~= nil end)
    wait("the other client's end", function() return out.code ~= nil end)
    assert(out.code == 0 and out.stdout:find("answered", 1, true), vim.inspect(out))
  end)
end
