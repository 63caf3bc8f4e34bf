-- Headless tests of the editor file system and review (lua/pi/editfs.lua); run by tests/run.lua.
return function(t)
  local test, start, workspace, wait, text, call, chat = t.test, t.start, t.workspace, t.wait, t.text, t.call, t.buffer_text

  local function open(path, lines)
    vim.cmd("edit " .. vim.fn.fnameescape(path))
    local buf = vim.api.nvim_get_current_buf()
    if lines then vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines) end
    return buf
  end

  local function lines(buf) return vim.api.nvim_buf_get_lines(buf, 0, -1, false) end

  test("a modified, unsaved buffer is what the agent reads", function()
    local dir = workspace({ call("read", { path = "a.txt" }), text("read it") })
    vim.fn.writefile({ "on disk" }, dir .. "/a.txt")
    local pi = start(dir)
    local buf = open(dir .. "/a.txt", { "typed, not saved" })
    assert(vim.bo[buf].modified)
    vim.cmd("Pi what is in a.txt?")
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(chat():find("typed, not saved", 1, true), chat())
    assert(not chat():find("on disk", 1, true), chat())
    assert(vim.fn.readfile(dir .. "/a.txt")[1] == "on disk")
  end)

  test("a read of a window is answered with those lines of the buffer only", function()
    local dir = workspace({ call("read", { path = "w.txt", offset = 4, limit = 2 }), text("read part") })
    local disk, typed = {}, {}
    for n = 1, 10 do disk[n], typed[n] = "disk " .. n, "buf " .. n end
    vim.fn.writefile(disk, dir .. "/w.txt")
    local pi = start(dir)
    local buf = open(dir .. "/w.txt", typed)
    vim.cmd("Pi lines 4 and 5 of w.txt?")
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(chat():find("buf 4", 1, true) and chat():find("buf 5", 1, true), chat())
    assert(chat():find("Use offset=6", 1, true), chat())
    assert(not chat():find("disk 4", 1, true), chat())
    local editfs = require("pi.editfs")
    local path = dir .. "/w.txt"
    assert(editfs.read_text_file({ path = path, line = 4, limit = 3 }).content == "buf 4\nbuf 5\nbuf 6\n")
    vim.bo[buf].eol, vim.bo[buf].fixeol = false, false
    assert(editfs.read_text_file({ path = path, line = 9, limit = 5 }).content == "buf 9\nbuf 10")
    assert(editfs.read_text_file({ path = path, line = 11, limit = 5 }).content == "")
    assert(editfs.read_text_file({ path = path }).content == table.concat(typed, "\n"))
  end)

  test("an agent edit lands in the buffer, unsaved, and u undoes it", function()
    local dir = workspace({ call("edit", { path = "b.txt", edits = { { oldText = "two", newText = "TWO" } } }), text("edited") })
    vim.fn.writefile({ "one", "two" }, dir .. "/b.txt")
    local pi = start(dir, false, { "--yes" })
    local buf = open(dir .. "/b.txt")
    vim.cmd("Pi shout two")
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(vim.deep_equal(lines(buf), { "one", "TWO" }), vim.inspect(lines(buf)))
    assert(vim.bo[buf].modified and vim.fn.readfile(dir .. "/b.txt")[2] == "two")
    vim.api.nvim_buf_call(buf, function() vim.cmd("silent undo") end)
    assert(vim.deep_equal(lines(buf), { "one", "two" }), vim.inspect(lines(buf)))
  end)

  -- A run that rewrites lines 2, 15 and 28 of a 30-line file `name`, open in a buffer (returned,
  -- with the workspace). `elsewhere`: the daemon is started in another folder, given --workspace.
  local function three_hunk_run(name, elsewhere)
    local before, after = {}, {}
    for n = 1, 30 do before[n] = "line " .. n after[n] = before[n] end
    after[2], after[15], after[28] = "line two", "line fifteen", "line twenty-eight"
    local dir = workspace({ call("write", { path = name, content = table.concat(after, "\n") .. "\n" }), text("done") })
    vim.fn.writefile(before, dir .. "/" .. name)
    local cwd
    if elsewhere then
      cwd = dir .. "/elsewhere"
      vim.fn.mkdir(cwd, "p")
    end
    local pi = start(dir, false, { "--yes", "--workspace", dir }, cwd)
    local buf = open(dir .. "/" .. name)
    vim.cmd("Pi rename three lines")
    wait("settled", function() return pi.status().settled >= 1 end)
    return buf, dir
  end

  test(":PiRevert takes back the hunk under the cursor", function()
    local buf = three_hunk_run("c.txt")
    assert(lines(buf)[15] == "line fifteen", vim.inspect(lines(buf)))
    local editfs = require("pi.editfs")
    editfs.state().marks = {}
    vim.cmd("PiDiff")
    wait("the diff", function() return #editfs.state().marks == 3 end)
    local diff_win = vim.fn.win_findbuf(editfs.state().buf)[1]
    vim.api.nvim_set_current_win(diff_win)
    -- ]h / [h move between the hunks
    local marks = editfs.state().marks
    vim.api.nvim_win_set_cursor(diff_win, { 1, 0 })
    local keys = function(k) vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(k, true, false, true), "x", false) end
    keys("]h]h")
    assert(vim.api.nvim_win_get_cursor(diff_win)[1] == marks[2].line, vim.inspect(vim.api.nvim_win_get_cursor(diff_win)))
    keys("]h[h")
    assert(vim.api.nvim_win_get_cursor(diff_win)[1] == marks[2].line, vim.inspect(vim.api.nvim_win_get_cursor(diff_win)))
    vim.api.nvim_win_set_cursor(diff_win, { marks[2].line + 2, 0 })
    vim.cmd("PiRevert")
    wait("the hunk reverted", function() return lines(buf)[15] == "line 15" end)
    assert(lines(buf)[2] == "line two" and lines(buf)[28] == "line twenty-eight", vim.inspect(lines(buf)))
    wait("the diff redrawn", function() return #editfs.state().marks == 2 end)
  end)

  test(":PiRevert / :PiAccept in the changed file's own buffer act on the hunk under the cursor there", function()
    local buf = three_hunk_run("d.txt")
    local win = vim.fn.win_findbuf(buf)[1]
    vim.api.nvim_set_current_win(win)
    vim.api.nvim_win_set_cursor(win, { 15, 0 })
    vim.cmd("PiRevert")
    wait("the hunk reverted", function() return lines(buf)[15] == "line 15" end)
    assert(lines(buf)[2] == "line two" and lines(buf)[28] == "line twenty-eight", vim.inspect(lines(buf)))
    local editfs = require("pi.editfs")
    vim.api.nvim_set_current_win(win)
    vim.api.nvim_win_set_cursor(win, { 2, 0 })
    vim.cmd("PiAccept")
    wait("the hunk accepted", function()
      local files = editfs.state().files
      return #files == 1 and #files[1].hunks == 2 and files[1].hunks[1].accepted == true
    end)
    assert(editfs.state().files[1].hunks[2].accepted == false)
    -- a line in no hunk: said so, nothing reverted
    vim.api.nvim_set_current_win(win)
    vim.api.nvim_win_set_cursor(win, { 20, 0 })
    local shown, stop = t.capture()
    vim.cmd("PiRevert")
    wait("the refusal", function() return #shown > 0 end)
    stop()
    assert(shown[1]:find("line 20 is in no hunk", 1, true), vim.inspect(shown))
    assert(lines(buf)[28] == "line twenty-eight", vim.inspect(lines(buf)))
  end)

  test("changed paths are the daemon's workspace's, not the folder it was started in", function()
    local buf, dir = three_hunk_run("e.txt", true)
    local pi = require("pi")
    assert(pi.status().workspace == vim.fs.normalize(dir), vim.inspect(pi.status().workspace))
    local editfs = require("pi.editfs")
    assert(editfs.changed_file("e.txt", pi.status().workspace) == vim.fs.normalize(dir .. "/e.txt"))
    assert(editfs.changed_file("/abs/f.txt", pi.status().workspace) == "/abs/f.txt")
    local win = vim.fn.win_findbuf(buf)[1]
    vim.api.nvim_set_current_win(win)
    vim.api.nvim_win_set_cursor(win, { 28, 0 })
    editfs.state().marks = {}
    vim.cmd("PiRevert")
    wait("the hunk reverted", function() return lines(buf)[28] == "line 28" end)
    assert(lines(buf)[2] == "line two" and lines(buf)[15] == "line fifteen", vim.inspect(lines(buf)))
    wait("the diff redrawn", function() return #editfs.state().marks == 2 end)
  end)

  test("<CR> in :PiDiff opens the changed file at the hunk's line", function()
    local buf, dir = three_hunk_run("g.txt", true)
    local editfs = require("pi.editfs")
    editfs.state().marks = {}
    vim.cmd("PiDiff")
    wait("the diff", function() return #editfs.state().marks == 3 end)
    local marks = editfs.state().marks
    local diff_win = vim.fn.win_findbuf(editfs.state().buf)[1]
    local function enter(row)
      vim.api.nvim_set_current_win(diff_win)
      vim.api.nvim_win_set_cursor(diff_win, { row, 0 })
      vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<CR>", true, false, true), "x", false)
      return vim.api.nvim_get_current_buf(), vim.api.nvim_win_get_cursor(0)[1]
    end
    local opened, row = enter(marks[2].line) -- the hunk's header: its first line
    assert(opened == buf and row == 12, vim.inspect({ vim.api.nvim_buf_get_name(opened), row }))
    assert(vim.api.nvim_get_current_win() ~= diff_win)
    local diff_lines = vim.api.nvim_buf_get_lines(editfs.state().buf, 0, -1, false)
    local added
    for n = marks[2].line, #diff_lines do if diff_lines[n] == "+line fifteen" then added = n break end end
    opened, row = enter(added) -- a line the run wrote: that line of the file
    assert(opened == buf and row == 15 and lines(buf)[row] == "line fifteen", vim.inspect({ row, added }))
    assert(vim.fs.normalize(vim.api.nvim_buf_get_name(opened)) == vim.fs.normalize(dir .. "/g.txt"))
    opened, row = enter(marks[3].line + 2) -- the second line of the last hunk (@@ -25,6 +25,6 @@)
    assert(opened == buf and row == 26, row)
  end)

  test(":'<,'>Pi without text focuses the input area; what is written goes with the selection", function()
    local dir = workspace({ text("seen") })
    local pi = start(dir)
    local buf = open(dir .. "/ask.py", { "def g():", "    return 7" })
    vim.cmd("1,2Pi")
    local win = vim.api.nvim_get_current_win()
    assert(win == require("pi.input").window(), "the chat's input area")
    local bar = vim.api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true, maxwidth = 200 }).str
    assert(bar:find("Ask pi about .*ask%.py lines 1%-2"), bar)
    vim.api.nvim_buf_set_lines(vim.api.nvim_win_get_buf(win), 0, -1, false, { "what does g return?" })
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<Esc><C-s>", true, false, true), "x", false)
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(chat():find("what does g return?", 1, true), chat())
    assert(chat():find("context: [^\n]*ask%.py lines 1%-2 {{{") and chat():find("     2\t    return 7", 1, true), chat())
    bar = vim.api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true, maxwidth = 200 }).str
    assert(not bar:find("about", 1, true), "the context went with that prompt only: " .. bar)
    vim.api.nvim_buf_delete(buf, { force = true })
  end)

  test(":'<,'>Pi sends the selection as context", function()
    local dir = workspace({ text("seen") })
    local pi = start(dir)
    local buf = open(dir .. "/sel.py", { "def f():", "    return 1", "x = 2" })
    vim.cmd("1,2Pi explain")
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(chat():find("context: [^\n]*sel%.py lines 1%-2 {{{\n") and chat():find("     2\t    return 1", 1, true), chat())
    vim.api.nvim_buf_delete(buf, { force = true })
  end)
end
