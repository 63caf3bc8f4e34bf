-- Headless tests of the agent's background processes in the chat and :PiProcesses against the
-- real daemon (bash with background: true); run by tests/run.lua.
return function(t)
  local test, start, workspace, wait, text = t.test, t.start, t.workspace, t.wait, t.text

  local function background(command)
    return { content = { { type = "toolCall", id = "c_bg", name = "bash",
                           arguments = { command = command, background = true } } }, stopReason = "toolUse" }
  end

  -- A port nothing listens on now.
  local function free_port()
    local tcp = vim.uv.new_tcp()
    tcp:bind("127.0.0.1", 0)
    local port = tcp:getsockname().port
    tcp:close()
    return port
  end

  -- Whether something listens on the port (Linux refuses to listen where another socket listens).
  local function in_use(port)
    local tcp = vim.uv.new_tcp()
    local ok = tcp:bind("127.0.0.1", port) and tcp:listen(1, function() end)
    tcp:close()
    return not ok
  end

  -- The daemon with the agent's commands allowed and able to listen on loopback (the sandbox
  -- shares the network), in a workspace apart from its home (the sandbox hides the home).
  local function start_here(replies)
    local home = workspace(replies)
    vim.fn.writefile({ vim.json.encode({ sandbox = { network = true } }) }, home .. "/settings.json")
    local work = vim.fn.tempname()
    vim.fn.mkdir(work, "p")
    return start(home, false, { "--allow", "bash" }, work), work
  end

  local function list_text()
    local buf = vim.fn.bufnr("pi://processes")
    return buf > 0 and table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") or ""
  end

  test("a background server: the chat names it, :PiProcesses lists it, x stops it and frees its port", function()
    local port = free_port()
    local command = ("python3 -m http.server %d --bind 127.0.0.1"):format(port)
    local pi = start_here({ background(command), text("Serving.") })
    vim.cmd("Pi serve the folder")
    wait("settled", function() return pi.status().settled >= 1 end)
    wait("the server listening", function() return in_use(port) end)
    local chat_text = t.buffer_text()
    assert(chat_text:find("→ bash, in the background\n  command: " .. command, 1, true), chat_text)
    local nested = require("pi.chat").nested_lines("c_bg")
    local id = nested[1] and nested[1]:match("^  ⏵ running in the background as (%S+) %(:PiProcesses%)$")
    assert(id, vim.inspect(nested))
    assert(pi.statusline():find(" · 1 process running$"), pi.statusline())

    vim.cmd("PiProcesses")
    assert(vim.api.nvim_buf_get_name(0):find("pi://processes$"), vim.api.nvim_buf_get_name(0))
    wait("the list", function() return list_text():find(id .. "%s+running%s+[%d:]+ s?%s*" .. vim.pesc(command)) end)
    assert(vim.api.nvim_get_current_line():find(command, 1, true), "the cursor is on the process: "
           .. vim.api.nvim_get_current_line())
    local bar = vim.api.nvim_eval_statusline(vim.wo.winbar, { winid = 0, use_winbar = true, maxwidth = 200 }).str
    assert(bar:find("Background processes · 1 running", 1, true) and bar:find("x stop", 1, true), bar)

    vim.api.nvim_feedkeys("g?", "x", false) -- its keys, with the others
    local keys = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    assert(keys:find("In :PiProcesses", 1, true) and keys:find("x           stop the process under the cursor", 1, true)
           and keys:find("<CR>        open its output, followed while it runs", 1, true), keys)
    vim.api.nvim_feedkeys("q", "x", false)
    assert(vim.api.nvim_buf_get_name(0):find("pi://processes$"), "back in the list")
    vim.api.nvim_feedkeys("x", "x", false)
    wait("stopped in the list", function() return list_text():find(id .. "%s+stopped") end)
    wait("the port free", function() return not in_use(port) end, 5000)
    assert(not pi.statusline():find("process", 1, true), pi.statusline())
    local after = require("pi.chat").nested_lines("c_bg")[1] or ""
    assert(after:find("background process " .. id .. ": stopped after", 1, true), after)

    -- drawn again from the session file (a replay): the call still says what it started
    vim.cmd("close")
    local drawn = false
    pi.redraw(function() drawn = true end)
    wait("the replay", function() return drawn end)
    after = require("pi.chat").nested_lines("c_bg")[1] or ""
    assert(after:find("background process " .. id .. ": stopped after", 1, true), after)
  end)

  test("<CR> in :PiProcesses opens a process's output, followed while it runs, then its exit code", function()
    local pi, work = start_here({
      -- (a command is the agent's text: in the output window's bar it is not a statusline expression)
      background([[: '%{execute("let g:pi_pwned = 1")}'; ]]
                 .. "i=0; while [ ! -e done ]; do i=$((i+1)); echo tick $i; sleep 0.2; done; echo bye; exit 3"),
      text("Ticking.") })
    vim.cmd("Pi tick")
    wait("settled", function() return pi.status().settled >= 1 end)
    local list = require("pi").processes()
    wait("listed", function() return list_text():find("running") end)
    vim.api.nvim_win_set_cursor(0, { 2, 0 })
    vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
    local out = vim.api.nvim_get_current_buf()
    assert(out ~= list and vim.api.nvim_buf_get_name(out):find("pi://process/"), vim.api.nvim_buf_get_name(out))
    local function lines() return vim.api.nvim_buf_get_lines(out, 0, -1, false) end
    wait("the first ticks", function() return vim.tbl_contains(lines(), "tick 2") end)
    local bar = vim.api.nvim_eval_statusline(vim.wo.winbar, { winid = 0, use_winbar = true, maxwidth = 300 }).str
    assert(vim.g.pi_pwned == nil and bar:find([[: '%{execute("let g:pi_pwned = 1")}'; i=0;]], 1, true), bar)
    local seen = #lines()
    wait("more ticks, read while it runs", function() return #lines() >= seen + 2 end)
    assert(vim.api.nvim_win_get_cursor(0)[1] == #lines(), "the window follows the end")
    vim.fn.writefile({}, work .. "/done")
    wait("its end", function() return lines()[#lines()] == "bye" end)
    wait("the exit code in its bar", function() return vim.wo.winbar:find("exited 3", 1, true) ~= nil end)
    wait("the exit code in the list", function() return list_text():find("exited 3", 1, true) end)
    for i, l in ipairs(lines()) do
      if l ~= "bye" then assert(l == "tick " .. i, "in order, none twice: " .. vim.inspect(lines())) end
    end
  end)

  test("the output of a process that printed more than the daemon keeps says where all of it is", function()
    local pi = start_here({ background("yes xxxxxxxxx | head -n 30000; echo end"), text("Done.") })
    vim.cmd("Pi print a lot")
    wait("settled", function() return pi.status().settled >= 1 end)
    pi.processes()
    wait("its exit in the list", function() return list_text():find("exited 0", 1, true) end)
    vim.api.nvim_win_set_cursor(0, { 2, 0 })
    vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
    local out = vim.api.nvim_get_current_buf()
    local function lines() return vim.api.nvim_buf_get_lines(out, 0, -1, false) end
    wait("its end", function() return lines()[#lines()] == "end" end)
    local path = lines()[1]:match("^%[… output left out here %(too much to keep in memory%); all of it: (.+)%]$")
    assert(path, lines()[1])
    assert(vim.fn.getfsize(path) == 300004, path .. ": " .. vim.fn.getfsize(path))
    -- the daemon begins a cut tail at a line's start
    for i = 2, #lines() - 1 do assert(lines()[i] == "xxxxxxxxx", i .. ": " .. lines()[i]) end
    assert(#lines() < 10000, "a bounded tail, not all of it: " .. #lines())
  end)

  test("an end already listed stays when a process/list answer served before it says running", function()
    -- the answer's state is when the daemon served the request; the exit event, written meanwhile, came first
    local processes = require("pi.processes")
    processes.reset()
    local info = { id = "p1", pid = 4242, command = "make watch", cwd = "/w", status = "running", startedAt = 1 }
    processes.event({ type = "process_started", process = info })
    processes.event({ type = "process_exited", process = vim.tbl_extend("force", info, { status = "exited", exitCode = 0, endedAt = 2 }) })
    processes.update(info) -- the late answer
    assert(processes.procs.p1.status == "exited", vim.inspect(processes.procs.p1))
    processes.reset()
  end)
end
