-- Headless tests of :PiChanged (lua/pi/changed.lua) and of buffers the agent's edits leave equal
-- to the disk, against the real daemon; run by tests/run.lua.
return function(t)
  local test, start, workspace, wait, text, call = t.test, t.start, t.workspace, t.wait, t.text, t.call

  local function modified(path)
    local buf = vim.fn.bufnr(path)
    return buf > 0 and vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified
  end

  -- The unsaved buffers earlier tests left are dropped: what is counted here is this test's.
  local function drop_unsaved()
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" and vim.bo[buf].modified then
        vim.api.nvim_buf_delete(buf, { force = true })
      end
    end
  end

  test("an agent edit to a file no window shows is said at the run's end; :PiChanged writes it", function()
    drop_unsaved()
    local dir = workspace({ call("write", { path = "hidden.txt", content = "by the agent\n" }), text("written") })
    vim.fn.writefile({ "before" }, dir .. "/hidden.txt")
    local said, stop_notify = t.capture()
    local pi = start(dir, false, { "--yes" })
    vim.cmd("Pi change hidden.txt")
    wait("settled", function() return pi.status().settled >= 1 end)
    wait("the word at the run's end", function()
      return vim.tbl_contains(said, "pi: 1 file(s) the agent changed are unsaved in buffers no window shows: "
                                    .. ":PiChanged lists them, :PiChanged! writes them")
    end)
    assert(modified(dir .. "/hidden.txt") and #vim.fn.win_findbuf(vim.fn.bufnr(dir .. "/hidden.txt")) == 0)
    local asked, stop = t.picking(function(items) return items[1] end)
    vim.cmd("PiChanged")
    stop() stop_notify()
    assert(asked[1].prompt == "1 file(s) the agent changed are unsaved, in buffers no window shows", asked[1].prompt)
    assert(asked[1].labels[1]:find("^Write them: .*hidden%.txt$"), vim.inspect(asked[1].labels))
    assert(asked[1].labels[3]:find("^Open .*hidden%.txt$"), vim.inspect(asked[1].labels))
    assert(not modified(dir .. "/hidden.txt"), "written")
    assert(vim.deep_equal(vim.fn.readfile(dir .. "/hidden.txt"), { "by the agent" }))
    local none = t.notifications(function() vim.cmd("PiChanged") end)
    assert(vim.deep_equal(none, { "pi: no unsaved agent edits in buffers no window shows" }), vim.inspect(none))
  end)

  test("with write_unshown_edits the agent's edit to a file no window shows is written at once", function()
    local dir = workspace({ call("write", { path = "direct.txt", content = "straight to disk\n" }), text("written") })
    t.configured("write_unshown_edits", true)
    local pi = start(dir, false, { "--yes" })
    vim.cmd("Pi write direct.txt")
    wait("settled", function() return pi.status().settled >= 1 end)
    wait("written to the disk", function()
      return vim.fn.filereadable(dir .. "/direct.txt") == 1 and vim.fn.readfile(dir .. "/direct.txt")[1] == "straight to disk"
    end)
    assert(not modified(dir .. "/direct.txt"))
  end)

  test("a rewind that gives a buffer back the disk's text leaves it not 'modified'", function()
    local dir = workspace({ call("write", { path = "a.txt", content = "by the agent\n" }), text("written") })
    vim.fn.writefile({ "as it was" }, dir .. "/a.txt")
    t.configured("review", false)
    local pi = start(dir, false, { "--yes" })
    vim.cmd("Pi change a.txt")
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(modified(dir .. "/a.txt"), "the agent's edit, unsaved")
    local _, stop = t.picking(function(items, opts)
      if opts.kind == "pi.rewind" then return items[1] end -- conversation and files
      return items[1]
    end)
    local said, stop_notify = t.capture()
    vim.cmd("PiRewind")
    wait("the rewind's outcome", function() return #said > 0 end)
    stop() stop_notify()
    local buf = vim.fn.bufnr(dir .. "/a.txt")
    wait("the buffer taken back", function() return vim.api.nvim_buf_get_lines(buf, 0, -1, false)[1] == "as it was" end)
    assert(not vim.bo[buf].modified, "equal to the disk, yet 'modified'")
    vim.api.nvim_win_close(0, true) -- the input area with the message given back
    vim.cmd.stopinsert()
  end)

  test("a new file the agent writes ending in a newline is that text once saved, not one more empty line", function()
    local dir = workspace({ call("write", { path = "new.py", content = "a = 1\nb = 2\n" }), text("written") })
    local pi = start(dir, false, { "--yes" })
    vim.cmd("Pi write new.py")
    wait("settled", function() return pi.status().settled >= 1 end)
    local buf = vim.fn.bufnr(dir .. "/new.py")
    assert(vim.deep_equal(vim.api.nvim_buf_get_lines(buf, 0, -1, false), { "a = 1", "b = 2" }),
           vim.inspect(vim.api.nvim_buf_get_lines(buf, 0, -1, false)))
    vim.api.nvim_buf_call(buf, function() vim.cmd("silent write") end)
    local f = assert(io.open(dir .. "/new.py", "rb"))
    local written = f:read("*a")
    f:close()
    assert(written == "a = 1\nb = 2\n", vim.inspect(written))
  end)
end
