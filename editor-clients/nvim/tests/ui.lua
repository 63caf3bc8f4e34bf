-- Headless tests of what the chat shows and offers (:help, g?, the winbars, markers in view,
-- session search, completion in the input area) against the real daemon; run by tests/run.lua.
return function(t)
  local test, start, workspace, wait, text = t.test, t.start, t.workspace, t.wait, t.text
  local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")

  -- The tags of doc/pi.txt, from a :helptags of a copy (the plugin's folder stays as it is).
  local function help_tags()
    local dir = vim.fn.tempname() .. "/pi-doc"
    vim.fn.mkdir(dir .. "/doc", "p")
    vim.fn.writefile(vim.fn.readfile(root .. "/doc/pi.txt"), dir .. "/doc/pi.txt")
    vim.cmd("helptags " .. vim.fn.fnameescape(dir .. "/doc"))
    local tags = {}
    for _, l in ipairs(vim.fn.readfile(dir .. "/doc/tags")) do tags[l:match("^[^\t]+")] = true end
    return tags, dir
  end

  test(":help pi opens doc/pi.txt, which has a tag for every command, option, key, highlight group and event", function()
    local tags, dir = help_tags()
    vim.opt.runtimepath:prepend(dir)
    vim.cmd("help pi")
    local name = vim.api.nvim_buf_get_name(0)
    local at = vim.api.nvim_get_current_line()
    vim.cmd("helpclose")
    vim.opt.runtimepath:remove(dir)
    assert(name:find("pi%.txt$"), "landed on " .. name)
    assert(at:find("*pi*", 1, true), at)
    local missing = {}
    local function need(tag) if not tags[tag] then table.insert(missing, tag) end end
    for name_ in pairs(vim.api.nvim_get_commands({})) do
      if name_:match("^Pi") then need(":" .. name_) end
    end
    local pi = require("pi")
    for key in pairs(pi.config) do need("pi-option-" .. key) end
    for key in pairs(require("pi.input").defaults) do need("pi-input-" .. key) end
    for key in pairs(pi.config.keymaps) do need("pi-keymaps-" .. key) end
    for group in pairs(require("pi.chat").HIGHLIGHTS) do need("hl-" .. group) end
    -- the User events the plugin fires
    for _, file in ipairs(vim.fn.globpath(root .. "/lua", "**/*.lua", false, true)) do
      for event in table.concat(vim.fn.readfile(file), "\n"):gmatch('exec_autocmds%("User", { pattern = "(%w+)"') do
        need(event)
      end
    end
    assert(#missing == 0, "no tag in doc/pi.txt for: " .. table.concat(missing, ", "))
  end)

  test("g? in the chat lists the keys of the chat and its input area", function()
    local pi = require("pi")
    pi.open()
    vim.api.nvim_set_current_win(vim.fn.win_findbuf(pi.status().buf)[1])
    vim.api.nvim_feedkeys("g?", "x", false)
    local win = vim.api.nvim_get_current_win()
    assert(vim.api.nvim_win_get_config(win).relative ~= "", "a float")
    local shown = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    for _, key in ipairs({ "g?", "<CR>", "<C-s>", "<C-p>", "<C-n>", "<C-x><C-o>", "<leader>pp" }) do
      assert(shown:find(key, 1, true), key .. " is not listed:\n" .. shown)
    end
    vim.api.nvim_feedkeys("q", "x", false)
    assert(not vim.api.nvim_win_is_valid(win), "q closes it")
  end)

  local function bar(win)
    return vim.api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true, maxwidth = 300 }).str
  end

  test("the input area's winbar shows the mode, model, tokens and working; plan mode is not 'Ask pi'", function()
    local dir = workspace({ text(string.rep("word ", 400)), text("planned") }, { chunkSize = 2, delayMs = 2 })
    local pi = start(dir)
    local _, win = pi.ask()
    vim.cmd("Pi talk")
    wait("working in the winbar", function() return bar(win):find("pi is working", 1, true) ~= nil end)
    wait("settled", function() return pi.status().settled >= 1 end)
    wait("the tokens", function() return bar(win):find("tok", 1, true) ~= nil end)
    assert(bar(win):match("^ Ask pi · π faux/script · %d+ tok · %$%d+%.%d+ +<CR> send · g%? keys $"), bar(win))
    vim.cmd("PiMode plan")
    wait("plan in the winbar", function() return bar(win):find("Plan with pi (read-only) · π faux/script", 1, true) ~= nil end)
    assert(not bar(win):find("Ask pi", 1, true), bar(win))
  end)

  test("after an answer the last line is at the window's bottom with the end marker in view", function()
    local dir = workspace({ text(table.concat(vim.tbl_map(function(i) return "row " .. i end, vim.fn.range(1, 80)), "\n")) },
                          { chunkSize = 40, delayMs = 1 })
    local pi = start(dir)
    pi.open()
    local win = vim.fn.win_findbuf(pi.status().buf)[1]
    vim.cmd("Pi long")
    wait("settled", function() return pi.status().settled >= 1 end)
    wait("the end marker", function() return vim.tbl_contains(require("pi.chat").marks(), "—") end)
    local view = vim.api.nvim_win_call(win, vim.fn.winsaveview)
    -- from the top line shown to the end, the marker included, fills the window exactly
    local shown = vim.api.nvim_win_text_height(win, { start_row = view.topline - 1 }).all - view.topfill
    local height = vim.fn.getwininfo(win)[1].height -- (the winbar's row not counted)
    assert(shown == height, ("%d rows from line %d, window %d high"):format(shown, view.topline, height))
  end)

  test(":PiSessions searches what was said; the match picked opens at its line", function()
    local dir = workspace({ text("about apples: they are red"), text("about pears") })
    local pi = start(dir)
    vim.cmd("Pi tell me about apples")
    wait("settled", function() return pi.status().settled >= 1 end)
    vim.cmd("PiNew")
    vim.cmd("Pi and pears")
    wait("settled twice", function() return pi.status().settled >= 2 end)
    pi = start(dir)
    -- the list's last item asks what to search for
    local asked, stop = t.picking(function(items, opts)
      return opts.prompt:find("^Sessions saying") and items[1] or items[#items]
    end)
    t.replace(vim.ui, "input", function(opts, on_input) on_input("APPLES") end)
    vim.cmd("PiSessions")
    wait("the session loaded", function() return t.buffer_text():find("they are red", 1, true) ~= nil end)
    stop()
    assert(asked[1].labels[#asked[1].labels] == require("pi.sessions").SEARCH, vim.inspect(asked[1]))
    assert(#asked[2].labels >= 1 and asked[2].labels[1]:find("apples", 1, true), vim.inspect(asked[2]))
    assert(not t.buffer_text():find("pears", 1, true), t.buffer_text())
    local win = vim.fn.win_findbuf(pi.status().buf)[1]
    wait("the cursor on the match", function()
      return vim.api.nvim_buf_get_lines(pi.status().buf, 0, -1, false)[vim.api.nvim_win_get_cursor(win)[1]]:lower()
        :find("apples", 1, true) ~= nil
    end, 5000)
  end)

  test("the input area completes @file, #buffer and /command and sends the files named as context", function()
    local dir = workspace({ text("seen") })
    vim.fn.mkdir(dir .. "/src", "p")
    vim.fn.writefile({ "def add(a, b):", "    return a + b" }, dir .. "/src/calc.py")
    vim.fn.writefile({ "unsaved soon" }, dir .. "/notes.md")
    local pi = start(dir)
    wait("the commands", function() return #pi.status().commands > 5 end)
    vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/notes.md"))
    vim.api.nvim_buf_set_lines(0, 0, -1, false, { "the buffer's own text" }) -- not saved
    local buf, win = pi.ask()
    vim.cmd("stopinsert")
    local function omni(line)
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, { line })
      vim.api.nvim_win_set_cursor(win, { 1, #line })
      local omnifunc = require("pi.complete").omnifunc -- the input area's 'omnifunc' (checked below)
      local items = vim.api.nvim_win_call(win, function()
        local start_col = omnifunc(1, "")
        return { start_col, omnifunc(0, line:sub(start_col + 1)) }
      end)
      return items[1], vim.tbl_map(function(i) return i.word end, items[2])
    end
    assert(vim.bo[buf].omnifunc == "v:lua.require'pi.complete'.omnifunc", vim.bo[buf].omnifunc)
    local col, words = omni("look at @cal")
    assert(col == 8 and vim.deep_equal(words, { "@src/calc.py" }), vim.inspect({ col, words }))
    col, words = omni("and #no")
    assert(col == 4 and vim.deep_equal(words, { "#notes.md" }), vim.inspect({ col, words }))
    col, words = omni("/comp")
    assert(col == 0 and #words > 0, vim.inspect(words))
    assert(vim.iter(words):all(function(w) return vim.startswith(w, "/comp") end), vim.inspect(words))
    col, words = omni("not first /comp")
    assert(col == nil or #words == 0, vim.inspect(words)) -- a command is the prompt's first word only
    -- the nvim-cmp and blink.cmp sources answer from the same function
    local cmp_items, blink_items
    vim.api.nvim_win_call(win, function()
      require("pi.cmp_source").new():complete({ context = { cursor_before_line = "look at @cal", cursor = { row = 1 } } },
                                              function(r) cmp_items = r.items end)
      require("pi.blink_source").new():get_completions({ line = "look at @cal", cursor = { 1, 12 } },
                                                       function(r) blink_items = r.items end)
    end)
    assert(cmp_items[1].label == "@src/calc.py" and cmp_items[1].textEdit.range.start.character == 8, vim.inspect(cmp_items))
    assert(blink_items[1].label == "@src/calc.py", vim.inspect(blink_items))
    -- sent: both go along as editor context, the buffer with its unsaved text
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "look at @src/calc.py and #notes.md" })
    vim.api.nvim_set_current_win(win)
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<CR>", true, false, true), "x", false)
    wait("settled", function() return pi.status().settled >= 1 end)
    local chat = t.buffer_text()
    assert(chat:find("context: %S*src/calc%.py lines 1%-2, %S*notes%.md line 1 {{{"), chat)
    assert(chat:find("return a + b", 1, true) and chat:find("the buffer's own text", 1, true), chat)
  end)

  test("a subagent's view opened mid-answer puts the answer under its heading, not on the prompt's line", function()
    local answer = string.rep("streamed words ", 40)
    local dir = workspace({
      t.call("task", { prompt = "child job", description = "slow talker" }),
      vim.tbl_extend("force", text(answer), { when = "child job" }),
      text("parent done") }, { chunkSize = 2, delayMs = 8 })
    local pi = start(dir, false, { "--yes" })
    vim.cmd("Pi delegate")
    wait("the child talking", function()
      local c = require("pi.subagents").children
      for _, child in pairs(c) do if #child.text > 20 then return true end end
    end)
    local _, stop = t.picking(function(items) return items[1] end) -- "Open …"
    vim.cmd("PiSubagents")
    local view
    wait("the view", function()
      for _, child in pairs(require("pi.subagents").children) do view = child.view end
      return view ~= nil
    end)
    stop()
    wait("settled", function() return pi.status().settled >= 1 end)
    local lines = vim.api.nvim_buf_get_lines(view, 0, -1, false)
    local shown = table.concat(lines, "\n")
    assert(vim.tbl_contains(lines, "child job"), shown) -- the prompt's line as it was
    assert(shown:find("\n## pi\n+" .. vim.pesc(vim.trim(answer))), shown) -- the whole answer under its heading
  end)

  test("the steer picker says what each choice does; the queue leaves no filler line above the input", function()
    -- the command outlasts the test, so the steer is sent while pi works however busy the machine; Stop ends it
    local dir = workspace({ t.call("bash", { command = "sleep 60" }), text("steered") })
    local pi = start(dir, false, { "--allow", "bash" })
    local asked, stop = t.picking(function(items) return items[1] end)
    local _, win = pi.ask()
    vim.cmd("Pi run it")
    wait("the tool", function() return t.buffer_text():find("bash output {{{", 1, true) ~= nil end)
    require("pi").send("change course")
    wait("the queue shown", function() return #require("pi.input").queue_lines() == 1 end, 5000)
    stop()
    assert(vim.deep_equal(asked[1].labels, { "Steer: tell pi now, between its steps", "Follow up: send when pi is done" }),
           vim.inspect(asked[1].labels))
    vim.cmd("PiAbort")
    wait("settled", function() return pi.status().settled >= 1 end)
    wait("the queue emptied", function() return #require("pi.input").queue_lines() == 0 end)
    assert(vim.api.nvim_win_call(win, function() return vim.fn.winsaveview().topfill end) == 0, "a filler row is left")
  end)
end
