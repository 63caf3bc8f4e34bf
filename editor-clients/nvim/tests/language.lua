-- Headless tests of the editor's language servers as the agent's (lua/pi/language.lua), with a real
-- language server attached (pylsp, installed with the tests); run by tests/run.lua.
return function(t)
  local test, start, workspace, wait, text, call, chat = t.test, t.start, t.workspace, t.wait, t.text, t.call, t.buffer_text
  local pylsp = vim.fn.fnamemodify(t.python, ":h") .. "/pylsp"

  test("with pylsp attached: an edit that breaks the code reports its error; definition finds another file's function", function()
    assert(vim.fn.executable(pylsp) == 1, "pylsp is installed beside the daemon's Python: " .. pylsp)
    local dir = workspace({
      call("edit", { path = "main.py", edits = { { oldText = "return helper(2)", newText = "return helper(2) + missing" } } }),
      text("broke it"),
      call("definition", { path = "main.py", line = 5, symbol = "helper" }),
      text("found it"),
    })
    vim.fn.writefile({ "def helper(n):", "    return n * 2" }, dir .. "/util.py")
    vim.fn.writefile({ "from util import helper", "", "", "def main():", "    return helper(2)" }, dir .. "/main.py")
    vim.fn.mkdir(dir .. "/.pi", "p")
    vim.fn.writefile({ vim.json.encode({ diagnostics = { waitMs = 15000 } }) }, dir .. "/.pi/settings.json")
    vim.lsp.config("pylsp", { cmd = { pylsp }, filetypes = { "python" }, root_markers = { "util.py" } })
    vim.lsp.enable("pylsp")
    local pi = start(dir, false, { "--allow", "edit" })
    vim.cmd("filetype on")
    vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/main.py")) -- the user looks at the file: pylsp attaches
    local buf = vim.api.nvim_get_current_buf()
    wait("pylsp to attach", function() return #vim.lsp.get_clients({ bufnr = buf, name = "pylsp" }) > 0 end, 30000)
    vim.cmd("Pi add a term")
    wait("settled", function() return pi.status().settled >= 1 end, 60000)
    assert(chat():find("This change introduced 1 error(s) and 0 warning(s)", 1, true), chat())
    assert(chat():find("main.py:5:%d+ error: undefined name 'missing'"), chat())
    assert(vim.api.nvim_buf_get_lines(buf, 4, 5, false)[1] == "    return helper(2) + missing", "the edit is in the buffer")
    vim.cmd("Pi where is helper?")
    wait("settled", function() return pi.status().settled >= 2 end, 60000)
    assert(chat():find("util.py:1:5\n    def helper(n):", 1, true), chat())
    vim.lsp.enable("pylsp", false)
    for _, client in ipairs(vim.lsp.get_clients({ name = "pylsp" })) do client:stop(true) end
  end)

  test("without a language server on the file, a request says so and the agent goes on", function()
    local dir = workspace({ call("hover", { path = "notes.txt", line = 1, symbol = "hello" }), text("no server") })
    vim.fn.writefile({ "hello world" }, dir .. "/notes.txt")
    local pi = start(dir)
    vim.cmd("Pi what is hello?")
    wait("settled", function() return pi.status().settled >= 1 end, 30000)
    assert(chat():find("no language server in the editor covers notes.txt; nothing is known about it", 1, true), chat())
  end)

  test("diagnostics of a broken Python file no server covers say its errors are unknown, not that there are none",
       function()
    local dir = workspace({ call("diagnostics", { paths = { "broken.py" } }), text("checked") })
    vim.fn.writefile({ "def f(:", "    return" }, dir .. "/broken.py")
    local pi = start(dir)
    vim.cmd("Pi any errors in broken.py?")
    wait("settled", function() return pi.status().settled >= 1 end, 30000)
    assert(chat():find("no language server in the editor covers broken.py; its errors are unknown", 1, true), chat())
    assert(not chat():find("no errors or warnings", 1, true), chat())
  end)

  -- editor/languageStatus as the daemon asks it (lua/pi/language.lua's answer, from a coroutine
  -- as vim.lsp.rpc runs server requests).
  local function status(path)
    local answer
    coroutine.wrap(function()
      local _, result = require("pi.language").server_request("editor/languageStatus",
                                                              { sessionId = "s", uri = vim.uri_from_fname(path) })
      answer = result
    end)()
    return answer
  end

  test("languageStatus: pylsp covers Python files, opened or not, and is loading while it lints; none covers a text file",
       function()
    local dir = workspace({})
    vim.fn.writefile({ "def helper(n):", "    return n * 2" }, dir .. "/util.py")
    vim.fn.writefile({ "from util import helper" }, dir .. "/main.py")
    vim.fn.writefile({ "x = 1" }, dir .. "/other.py")
    vim.fn.writefile({ "hello" }, dir .. "/notes.txt")
    local big = {}
    for i = 1, 40000 do table.insert(big, ("def f_%d(a):\n    return a + undefined_%d\n"):format(i, i)) end
    vim.fn.writefile(vim.split(table.concat(big), "\n"), dir .. "/big.py")
    vim.lsp.config("pylsp", { cmd = { pylsp }, filetypes = { "python" }, root_markers = { "util.py" } })
    vim.lsp.enable("pylsp")
    vim.cmd("filetype on")
    assert(vim.deep_equal(status(dir .. "/main.py"), { servers = {}, loading = {} }), "no server runs yet")
    vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/main.py"))
    local buf = vim.api.nvim_get_current_buf()
    wait("pylsp to attach", function() return #vim.lsp.get_clients({ bufnr = buf, name = "pylsp" }) > 0 end, 30000)
    wait("pylsp covering main.py, done linting", function()
      return vim.deep_equal(status(dir .. "/main.py"), { servers = { "pylsp" }, loading = {} })
    end, 30000)
    assert(vim.fn.bufnr(dir .. "/other.py") == -1)
    assert(vim.deep_equal(status(dir .. "/other.py"), { servers = { "pylsp" }, loading = {} }), vim.inspect(status(dir .. "/other.py")))
    assert(vim.deep_equal(status(dir .. "/notes.txt"), { servers = {}, loading = {} }), vim.inspect(status(dir .. "/notes.txt")))
    -- a big file: pylsp's lint of it is $/progress work in flight, then it ends
    vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/big.py"))
    wait("pylsp loading (linting big.py)", function()
      return vim.deep_equal(status(dir .. "/big.py").loading, { "pylsp" })
    end, 30000)
    wait("pylsp done", function() return vim.deep_equal(status(dir .. "/big.py").loading, {}) end, 60000)
    vim.lsp.enable("pylsp", false)
    for _, client in ipairs(vim.lsp.get_clients({ name = "pylsp" })) do client:stop(true) end
    for _, name in ipairs({ "main.py", "big.py" }) do vim.api.nvim_buf_delete(vim.fn.bufnr(dir .. "/" .. name), { force = true }) end
  end)

  test("diagnostics of a file pylsp covers but no buffer holds: it is looked at, its error reported, not 'no errors'",
       function()
    local dir = workspace({ call("diagnostics", { paths = { "unopened.py" } }), text("checked") })
    vim.fn.writefile({ "def helper(n):", "    return n * 2" }, dir .. "/util.py")
    vim.fn.writefile({ "from util import helper" }, dir .. "/main.py")
    vim.fn.writefile({ "import os", "print(undefined_name)" }, dir .. "/unopened.py")
    vim.lsp.config("pylsp", { cmd = { pylsp }, filetypes = { "python" }, root_markers = { "util.py" } })
    vim.lsp.enable("pylsp")
    vim.cmd("filetype on")
    local pi = start(dir)
    vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/main.py")) -- pylsp runs for the project
    local buf = vim.api.nvim_get_current_buf()
    wait("pylsp to attach", function() return #vim.lsp.get_clients({ bufnr = buf, name = "pylsp" }) > 0 end, 30000)
    assert(vim.fn.bufnr(dir .. "/unopened.py") == -1)
    vim.cmd("Pi any errors in unopened.py?")
    wait("settled", function() return pi.status().settled >= 1 end, 60000)
    assert(chat():find("unopened.py:2:7 error: undefined name 'undefined_name'", 1, true), chat())
    assert(not chat():find("no errors or warnings", 1, true), chat())
    vim.lsp.enable("pylsp", false)
    for _, client in ipairs(vim.lsp.get_clients({ name = "pylsp" })) do client:stop(true) end
    for _, name in ipairs({ "main.py", "unopened.py" }) do
      pcall(vim.api.nvim_buf_delete, vim.fn.bufnr(dir .. "/" .. name), { force = true })
    end
  end)
end
