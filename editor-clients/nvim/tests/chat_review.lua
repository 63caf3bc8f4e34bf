-- Headless tests of the chat's reading (an edit as a diff, a bounded write, :%Pi's context
-- folded, one-line picker items) and of reviewing a write / edit as a side-by-side diff before
-- it is applied (lua/pi/review.lua); run by tests/run.lua.
return function(t)
  local test, start, workspace, wait, text, call, chat = t.test, t.start, t.workspace, t.wait, t.text, t.call, t.buffer_text
  local lines_of = function(buf) return vim.api.nvim_buf_get_lines(buf, 0, -1, false) end
  local keys = function(k) vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(k, true, false, true), "x", false) end

  local function row_of(wanted)
    for i, l in ipairs(t.buffer_lines()) do if l == wanted then return i end end
  end

  test("the chat shows an edit as diff lines, highlighted, and a write's content cut at 30 lines", function()
    local content = {}
    for n = 1, 100 do content[n] = "row " .. n end
    local dir = workspace({
      call("edit", { path = "a.py", edits = { { oldText = "def f():\n    return 1", newText = "def f():\n    return 2" } } }),
      call("write", { path = "big.txt", content = table.concat(content, "\n") }),
      text("done"),
    })
    vim.fn.writefile({ "def f():", "    return 1" }, dir .. "/a.py")
    local pi = start(dir, false, { "--allow", "edit,write" })
    vim.cmd("Pi change it")
    wait("settled", function() return pi.status().settled >= 1 end)
    local all = chat()
    assert(all:find("→ edit a.py\n   def f():\n  -    return 1\n  +    return 2\nedit output {{{", 1, true), all)
    assert(not all:find("\\n", 1, true) and not all:find("oldText", 1, true), "no JSON: " .. all)
    local hl = require("pi.chat").highlights()
    assert(hl[row_of("  -    return 1")] == "DiffDelete" and hl[row_of("  +    return 2")] == "DiffAdd", vim.inspect(hl))
    assert(hl[row_of("   def f():")] == nil, vim.inspect(hl))
    assert(all:find("→ write big.txt\n    row 1\n", 1, true) and all:find("    row 30\n  … 70 more lines\n", 1, true), all)
    assert(not all:find("row 31", 1, true), all)
  end)

  test(":%Pi shows the context as one closed fold that opens on the lines", function()
    local dir = workspace({ text("seen") })
    local pi = start(dir)
    local body = {}
    for n = 1, 120 do body[n] = "x" .. n .. " = " .. n end
    vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/big.py"))
    local buf = vim.api.nvim_get_current_buf()
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, body)
    vim.cmd("%Pi explain")
    wait("settled", function() return pi.status().settled >= 1 end)
    local lines = t.buffer_lines()
    local header
    for i, l in ipairs(lines) do if l:find("^context: ") then header = i end end
    assert(header and lines[header]:match("^context: .*big%.py lines 1%-120 {{{$"), vim.inspect(lines))
    assert(lines[header - 1] == "explain", vim.inspect(lines))
    assert(lines[header + 2] == "     1\tx1 = 1" and lines[header + 121] == "   120\tx120 = 120", vim.inspect(lines))
    local win = vim.fn.win_findbuf(pi.status().buf)[1]
    vim.api.nvim_win_call(win, function()
      assert(vim.fn.foldclosed(header) == header and vim.fn.foldclosedend(header) == header + 122, "one closed fold")
      local shown = vim.fn.foldtextresult(header)
      assert(shown:find("context: .*big%.py lines 1%-120"), shown)
      vim.cmd(header .. "foldopen")
      assert(vim.fn.foldclosed(header + 5) == -1, "it opens on the lines")
    end)
    vim.api.nvim_buf_delete(buf, { force = true })
  end)

  test("picker items are one line each: a multi-line message flattened, a long one cut to the width", function()
    local dir = workspace({ text("one"), text("two") })
    local pi = start(dir)
    pi.send("first line\nsecond line")
    wait("settled", function() return pi.status().settled >= 1 end)
    pi = start(dir)
    pi.send(string.rep("long words ", 40))
    wait("settled", function() return pi.status().settled >= 1 end)
    local asked, stop = t.picking(function() end) -- looked at, dismissed
    vim.cmd("PiSessions")
    wait("the picker", function() return #asked == 1 end)
    stop()
    local labels = asked[1].labels
    assert(#labels == 3, vim.inspect(labels)) -- the two sessions, then the search
    for _, l in ipairs(labels) do
      assert(not l:find("\n", 1, true) and vim.fn.strdisplaywidth(l) < 120, vim.inspect(labels))
    end
    local joined = table.concat(labels, "|")
    assert(joined:find("  first line ⏎ second line  (2 messages)", 1, true), joined)
    assert(joined:find("  long words long words[^|]*…  %(2 messages%)"), joined) -- the title cut, the count kept
  end)

  test("stop keeps what the running command printed, then says it was stopped", function()
    local dir = workspace({ call("bash", { command = "for i in $(seq 1 100); do echo out $i; sleep 0.1; done" }),
                           text("never") })
    local pi = start(dir, false, { "--allow", "bash" })
    vim.cmd("Pi run the long one")
    wait("some output", function() return vim.tbl_contains(t.buffer_lines(), "out 3") end)
    vim.cmd("PiAbort")
    wait("settled", function() return pi.status().settled >= 1 end)
    local lines = t.buffer_lines()
    local header = row_of("bash output (error) {{{")
    assert(header and lines[header + 1] == "out 1" and lines[header + 3] == "out 3", vim.inspect(lines))
    local stopped = row_of("[stopped by the user]")
    assert(stopped and stopped > header + 3 and lines[stopped + 1] == "}}}", vim.inspect(lines))
  end)

  -- The review tab of a pending write / edit: its two windows, their buffers' lines, its winbar.
  local function review_tab()
    local wins = vim.api.nvim_tabpage_list_wins(0)
    local left, right = wins[1], wins[2]
    local bar = function(win) return vim.api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true, maxwidth = 200 }).str end
    return { count = #wins, diff = vim.wo[left].diff and vim.wo[right].diff, now = lines_of(vim.api.nvim_win_get_buf(left)),
             proposed = lines_of(vim.api.nvim_win_get_buf(right)), title = bar(left), bar = bar(right) }
  end

  test("a write's permission opens a side-by-side diff; ga accepts, the tab closes, the file is written", function()
    local dir = workspace({ call("write", { path = "made.txt", content = "by pi\nsecond" }), text("written") })
    local pi = start(dir, true)
    local tabs = #vim.api.nvim_list_tabpages()
    vim.cmd("Pi write a file")
    wait("the review", function() return require("pi.review").count() == 1 end)
    local tab = review_tab()
    assert(tab.count == 2 and tab.diff, vim.inspect(tab))
    assert(vim.deep_equal(tab.now, { "" }) and vim.deep_equal(tab.proposed, { "by pi", "second" }), vim.inspect(tab))
    assert(tab.title == " Write made.txt: a new file · proposed →", tab.title) -- (the hint: where it fits)
    assert(tab.bar:find("^ ga accept · gr reject · gs session · gA always · gR never · g%? all"), tab.bar)
    keys("ga")
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(#vim.api.nvim_list_tabpages() == tabs, "the review tab closed")
    local made = vim.fn.bufnr(dir .. "/made.txt")
    assert(made > 0 and vim.deep_equal(lines_of(made), { "by pi", "second" }), chat())
  end)

  test("an edit's permission shows the buffer beside it with the edit applied; gr rejects, nothing changes", function()
    local dir = workspace({ call("edit", { path = "e.py", edits = { { oldText = "y = 2", newText = "y = 3" } } }),
                           text("rejected, fine") })
    vim.fn.writefile({ "x = 1", "y = 2" }, dir .. "/e.py")
    local pi = start(dir, true)
    vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/e.py"))
    local buf = vim.api.nvim_get_current_buf()
    vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "x = 10" }) -- unsaved: the review shows the buffer
    vim.cmd("Pi edit it")
    wait("the review", function() return require("pi.review").count() == 1 end)
    local tab = review_tab()
    assert(vim.deep_equal(tab.now, { "x = 10", "y = 2" }) and vim.deep_equal(tab.proposed, { "x = 10", "y = 3" }),
           vim.inspect(tab))
    assert(tab.diff and vim.bo[vim.api.nvim_get_current_buf()].filetype == "python", vim.inspect(tab))
    keys("gr")
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(vim.deep_equal(lines_of(buf), { "x = 10", "y = 2" }), vim.inspect(lines_of(buf)))
    assert(chat():find("edit output (error) {{{", 1, true), chat())
    vim.api.nvim_buf_delete(buf, { force = true })
  end)

  test("closing the review tab unanswered rejects the write, and says so", function()
    local dir = workspace({ call("write", { path = "closed.txt", content = "never" }), text("not written") })
    local pi = start(dir, true)
    vim.cmd("Pi write it")
    wait("the review", function() return require("pi.review").count() == 1 end)
    vim.cmd("tabclose")
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(require("pi.review").count() == 0)
    assert(chat():find("write output (error) {{{", 1, true), chat())
    assert(vim.fn.bufnr(dir .. "/closed.txt") == -1 and vim.fn.filereadable(dir .. "/closed.txt") == 0)
  end)

  test("a review nobody answers closes when the daemon stops waiting for it", function()
    local dir = workspace({ call("write", { path = "late.txt", content = "too late" }), text("gave up") })
    local pi = start(dir, true, { "--permission-timeout", "2" })
    local tabs = #vim.api.nvim_list_tabpages()
    vim.cmd("Pi write late")
    wait("the review", function() return require("pi.review").count() == 1 end)
    wait("the timeout said", function() return chat():find("nobody answered the permission request", 1, true) ~= nil end)
    wait("the review closed", function() return #vim.api.nvim_list_tabpages() == tabs end)
    assert(require("pi.review").count() == 0)
    wait("settled", function() return pi.status().settled >= 1 end)
  end)

  test("an edit whose old text is not in the file is asked with the picker, saying why", function()
    local dir = workspace({ call("edit", { path = "n.py", edits = { { oldText = "absent", newText = "z" } } }),
                           text("ok") })
    vim.fn.writefile({ "x = 1" }, dir .. "/n.py")
    local asked, stop = t.picking(function() return "reject_once" end)
    local pi = start(dir, true)
    vim.cmd("Pi edit it")
    wait("settled", function() return pi.status().settled >= 1 end)
    stop()
    local prompt = asked[#asked].prompt
    assert(prompt == "Edit n.py (no diff to show: the call would fail as it stands)", prompt)
  end)

  -- The review's proposed side (its right window) is the user's: `do` there takes a hunk back.
  local function proposed_window() return vim.api.nvim_tabpage_list_wins(0)[2] end

  test("in the review the user rejects one hunk with `do` and accepts the other: that is what lands, and the model is told",
       function()
    local dir = workspace({
      call("edit", { path = "calc.py", edits = { { oldText = "    return a - b", newText = "    return a + b" },
                                                 { oldText = "    return a / b", newText = "    return a * b" } } }),
      text("done") })
    local before = { "def add(a, b):", "    return a - b", "", "", "# one", "# two", "# three", "# four",
                     "# five", "# six", "# seven", "# eight", "", "", "def mul(a, b):", "    return a / b" }
    vim.fn.writefile(before, dir .. "/calc.py")
    local pi = start(dir, true)
    vim.cmd("Pi fix both")
    wait("the review", function() return require("pi.review").count() == 1 end)
    local tab = review_tab()
    assert(tab.proposed[2] == "    return a + b" and tab.proposed[16] == "    return a * b", vim.inspect(tab))
    vim.api.nvim_set_current_win(proposed_window())
    vim.api.nvim_win_set_cursor(0, { 2, 0 })
    keys("do") -- the first hunk: as the file is now
    assert(lines_of(0)[2] == "    return a - b", vim.inspect(lines_of(0)))
    keys("ga")
    wait("settled", function() return pi.status().settled >= 1 end)
    local buf = vim.fn.bufnr(dir .. "/calc.py")
    local after = vim.deepcopy(before)
    after[16] = "    return a * b"
    assert(vim.deep_equal(lines_of(buf), after), vim.inspect(lines_of(buf)))
    assert(chat():find("The user changed your edit before accepting it", 1, true), chat())
  end)

  test("a write edited by hand in the review is written as the user left it", function()
    local dir = workspace({ call("write", { path = "hello.py", content = "print('hi')\nprint('bye')\n" }), text("ok") })
    local pi = start(dir, true)
    vim.cmd("Pi write hello")
    wait("the review", function() return require("pi.review").count() == 1 end)
    local win = proposed_window()
    vim.api.nvim_buf_set_lines(vim.api.nvim_win_get_buf(win), 0, 1, false, { "print('hello')" })
    vim.api.nvim_set_current_win(win)
    keys("ga")
    wait("settled", function() return pi.status().settled >= 1 end)
    local buf = vim.fn.bufnr(dir .. "/hello.py")
    assert(vim.deep_equal(lines_of(buf), { "print('hello')", "print('bye')" }), vim.inspect(lines_of(buf)))
    assert(chat():find("The user changed your edit before accepting it", 1, true), chat())
  end)

  test("the review's tab is named by the file, not a mangled pi:// path", function()
    local dir = workspace({ call("write", { path = "named.txt", content = "x" }), text("ok") })
    local pi = start(dir, true)
    vim.cmd("Pi write it")
    wait("the review", function() return require("pi.review").count() == 1 end)
    local names = vim.tbl_map(function(w) return vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)) end,
                              vim.api.nvim_tabpage_list_wins(0))
    local file = vim.fn.fnamemodify(dir .. "/named.txt", ":p")
    assert(vim.deep_equal(names, { file .. " (now)", file .. " (proposed)" }), vim.inspect(names))
    keys("gr")
    wait("settled", function() return pi.status().settled >= 1 end)
  end)
end
