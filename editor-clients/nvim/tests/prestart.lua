-- The daemon started before it is asked for (lua/pi/used.lua): a prompt makes its workspace
-- "used" in the user's own list (stdpath("state")), bounded and written whole; opening a used
-- workspace starts the daemon, a never-used one — even a repository with a committed
-- .pi/sessions/ folder — starts nothing, and `prestart = false` turns it off.
return function(t)
  local test, workspace, wait = t.test, t.workspace, t.wait
  local used = require("pi.used")

  local function private_state()
    t.replace(vim.env, "XDG_STATE_HOME", vim.fn.tempname())
    return used.file()
  end

  -- setup as a user's init.lua would have it, for the workspace `dir`
  local function configured_for(dir)
    t.configured("cmd", { t.python, "-m", "pi_daemon", "--faux-script", dir .. "/script.json", "--model", "faux/script" })
    t.configured("cwd", dir)
    t.configured("env", { PI_DAEMON_HOME = dir, OPENAI_API_KEY = "", ANTHROPIC_API_KEY = "" })
  end

  local function no_daemon()
    local pi = require("pi")
    pi.stop()
    wait("no daemon", function() return #t.daemon_pids() == 0 end)
    return pi
  end

  test("prestart: a prompt makes its workspace used; opened again the daemon starts before any prompt", function()
    private_state()
    local dir = workspace({ t.text("first") })
    local pi = t.start(dir)
    assert(not used.has(vim.uv.fs_realpath(dir)), "not used before a prompt")
    vim.cmd("Pi hello")
    wait("settled", function() return pi.status().settled >= 1 end)
    wait("kept as used", function() return used.has(vim.uv.fs_realpath(dir)) end)
    no_daemon()
    configured_for(dir)
    used.opened(pi.config) -- Neovim opened in it
    wait("the daemon started, nothing typed", function() return #t.daemon_pids() == 1 end)
    wait("initialize answered", function() return pi.status().rpc ~= nil and pi.status().ready == nil end)
    used.opened(pi.config) -- :cd to it again: the one running stays the only one
    assert(#t.daemon_pids() == 1)
  end)

  test("prestart: a never-used workspace, a repository's committed .pi/sessions/ and prestart = false start nothing", function()
    private_state()
    local dir = workspace({ t.text("x") })
    vim.fn.mkdir(dir .. "/.pi/sessions", "p")
    vim.fn.writefile({ "{}" }, dir .. "/.pi/sessions/committed.jsonl")
    local pi = no_daemon()
    configured_for(dir)
    used.opened(pi.config)
    assert(pi.status().rpc == nil and #t.daemon_pids() == 0, "nothing started where pi was never used")
    used.add(vim.uv.fs_realpath(dir))
    t.configured("prestart", false)
    used.opened(pi.config)
    assert(pi.status().rpc == nil and #t.daemon_pids() == 0, "prestart = false")
  end)

  test("prestart: the list keeps the latest first, at most MAX, written whole; a malformed file counts as empty", function()
    local file = private_state()
    for i = 1, used.MAX + 5 do used.add("/w/" .. i) end
    used.add("/w/50") -- used again: first
    local list = used.list()
    assert(#list == used.MAX and list[1] == "/w/50" and list[2] == "/w/105" and not used.has("/w/5"), vim.inspect(list))
    assert(#vim.fn.glob(file .. ".*", false, true) == 0, "no temporary file left")
    vim.fn.writefile({ '{"not": "a list"' }, file)
    assert(#used.list() == 0 and not used.has("/w/50"))
    used.add("/w/1")
    assert(vim.deep_equal(used.list(), { "/w/1" }), vim.inspect(used.list()))
  end)
end
