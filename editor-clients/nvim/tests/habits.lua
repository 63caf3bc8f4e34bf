-- Headless tests of the agent's habits in the chat against the real daemon: the plan above the
-- input area, the agent's questions, permission answers that steer; run by tests/run.lua.
return function(t)
  local test, start, workspace, wait, text, call = t.test, t.start, t.workspace, t.wait, t.text, t.call
  local buffer_text, replace = t.buffer_text, t.replace

  local function plan_call(id, steps)
    local plan = {}
    for _, s in ipairs(steps) do table.insert(plan, { step = s[1], status = s[2] }) end
    return { content = { { type = "toolCall", id = id, name = "update_plan", arguments = { plan = plan } } },
             stopReason = "toolUse" }
  end

  local function plan_shown() return require("pi.input").section_lines("plan") end

  -- The messages of the session as the daemon keeps them: what the model is sent next.
  local function messages(pi)
    local got
    pi.request("getMessages", {}, function(result) got = result.messages end)
    wait("the messages", function() return got ~= nil end)
    return got
  end

  local function tool_result(pi, id)
    for _, m in ipairs(messages(pi)) do
      if m.role == "toolResult" and m.toolCallId == id then return require("pi.render").content_text(m) end
    end
  end

  -- vim.ui.input answered with `answer(opts)` from now on; `asked` gets each prompt.
  local function typing(answer)
    local asked = {}
    replace(vim.ui, "input", function(opts, on_confirm)
      table.insert(asked, opts)
      on_confirm(answer(opts))
    end)
    return asked
  end

  test("the plan above the input area follows plan_updated live, after :PiSessions and after :PiRewind", function()
    local dir = workspace({
      plan_call("p1", { { "Read the code", "in_progress" }, { "Fix the bug", "pending" }, { "Run the tests", "pending" } }),
      plan_call("p2", { { "Read the code", "completed" }, { "Fix the bug", "in_progress" }, { "Run the tests", "pending" } }),
      text("Reading done."),
      plan_call("p3", { { "Read the code", "completed" }, { "Fix the bug", "completed" }, { "Run the tests", "completed" } }),
      text("All done."),
    }, { chunkSize = 3, delayMs = 8 })
    local pi = start(dir)
    pi.open()
    local seen = {}
    vim.cmd("Pi fix it")
    wait("the second plan", function()
      local title = plan_shown()[1]
      if title and seen[#seen] ~= title then table.insert(seen, title) end
      return title == "Plan 1/3"
    end)
    assert(vim.deep_equal(seen, { "Plan 0/3", "Plan 1/3" }), "drawn as each update came: " .. vim.inspect(seen))
    assert(vim.deep_equal(plan_shown(), { "Plan 1/3", "  ✓ Read the code", "  ▶ Fix the bug", "  ○ Run the tests" }),
           vim.inspect(plan_shown()))
    local input_win = require("pi.input").window()
    assert(vim.api.nvim_win_call(input_win, function() return vim.fn.winsaveview().topfill end) == 4,
           "the plan is on screen above the input's text")
    wait("settled", function() return pi.status().settled >= 1 end)
    vim.cmd("Pi go on")
    wait("settled twice", function() return pi.status().settled >= 2 end)
    assert(vim.deep_equal(plan_shown(), { "Plan: all 3 steps done" }), vim.inspect(plan_shown()))
    -- the call reads as the checklist it set
    assert(buffer_text():find("→ update_plan\n  ✓ Read the code\n  ▶ Fix the bug\n  ○ Run the tests", 1, true), buffer_text())

    pi = start(dir) -- a new daemon: the chat and the plan are empty until a session is loaded
    assert(#plan_shown() == 0, vim.inspect(plan_shown()))
    local _, stop = t.picking(function(items) return items[1] end)
    vim.cmd("PiSessions")
    wait("the plan replayed", function() return vim.deep_equal(plan_shown(), { "Plan: all 3 steps done" }) end)
    stop()

    t.picking(function(items, opts)
      if opts.kind == "pi.rewind" then return "keep" end
      for _, item in ipairs(items) do if item.text == "go on" then return item end end
    end)
    vim.cmd("PiRewind")
    wait("the plan as it stood before “go on”", function()
      return vim.deep_equal(plan_shown(), { "Plan 1/3", "  ✓ Read the code", "  ▶ Fix the bug", "  ○ Run the tests" })
    end)
    wait("the chat redrawn", function() return buffer_text():find("Reading done.", 1, true) ~= nil
                                                and buffer_text():find("All done.", 1, true) == nil end)
  end)

  test("a question: a choice, words typed under Other…, several ticked; each is what the model reads", function()
    local function question(id, args)
      return { content = { { type = "toolCall", id = id, name = "ask_user", arguments = args } }, stopReason = "toolUse" }
    end
    local options = { { label = "8000" }, { label = "8080", description = "the usual" }, { label = "9000" } }
    local dir = workspace({
      question("q1", { question = "Which port?", options = options, allowText = true }), text("Port noted."),
      question("q2", { question = "Which ports?", options = options, multiSelect = true }), text("Ports noted."),
    })
    local pi = start(dir)
    local picks = { "Other…" }
    local asked = t.picking(function(items, opts)
      assert(opts.kind == "pi.question", opts.kind)
      local want = table.remove(picks, 1)
      for _, item in ipairs(items) do
        if opts.format_item(item):find(want, 1, true) then return item end
      end
    end)
    local typed = typing(function() return "the one in .env" end)
    vim.cmd("Pi which port")
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(asked[1].prompt == "Which port?", vim.inspect(asked))
    assert(vim.deep_equal(asked[1].labels, { "8000", "8080 — the usual", "9000", "Other…" }), vim.inspect(asked[1].labels))
    assert(#typed == 1, vim.inspect(typed))
    assert(tool_result(pi, "q1") == "The user wrote: the one in .env", tostring(tool_result(pi, "q1")))
    assert(buffer_text():find("The user wrote: the one in .env", 1, true), buffer_text())
    assert(buffer_text():find("→ ask_user\n  Which port?\n  • 8000\n  • 8080 — the usual", 1, true), buffer_text())

    picks = { "8000", "9000", "Done" }
    vim.cmd("Pi which ports")
    wait("settled twice", function() return pi.status().settled >= 2 end)
    -- ticked one pick at a time, each shown ticked when asked again
    assert(vim.deep_equal(asked[#asked].labels, { "☑ 8000", "☐ 8080 — the usual", "☑ 9000", "Done" }),
           vim.inspect(asked[#asked].labels))
    assert(tool_result(pi, "q2") == "The user answered: 8000, 9000", tostring(tool_result(pi, "q2")))
    assert(buffer_text():find("Ports noted.", 1, true), buffer_text())
  end)

  test("a question is withdrawn when the run is stopped; its late answer is not sent", function()
    local dir = workspace({
      { content = { { type = "toolCall", id = "q1", name = "ask_user",
                      arguments = { question = "Go ahead?", options = { { label = "yes" }, { label = "no" } } } } },
        stopReason = "toolUse" },
      text("never"),
    })
    local pi = start(dir)
    local late
    replace(vim.ui, "select", function(items, _, on_choice) late = function() on_choice(items[1]) end end)
    vim.cmd("Pi ask me")
    wait("the question", function() return late ~= nil end)
    assert(require("pi.ask").count() == 1)
    vim.cmd("PiAbort")
    wait("aborted", function() return vim.tbl_contains(require("pi.chat").marks(), "— aborted —") end)
    wait("withdrawn", function() return require("pi.ask").count() == 0 end)
    local shown = t.notifications(function() late() vim.wait(50) end)
    assert(vim.tbl_contains(shown, "pi: that question was withdrawn; the answer was not sent"), vim.inspect(shown))
    assert(not buffer_text():find("never", 1, true), buffer_text())
  end)

  test("Reject with reason…: the model reads the words and the run goes on", function()
    local dir = workspace({ call("bash", { command = "rm -rf build" }), text("Understood, keeping build.") })
    local pi = start(dir, true)
    local asked = t.picking(function(items) return items[#items - 2] end) -- Reject with reason…
    local typed = typing(function() return "build holds my release" end)
    vim.cmd("Pi clean up")
    wait("settled", function() return pi.status().settled >= 1 end)
    local rule = "exactly the command `rm -rf build`"
    assert(vim.deep_equal(asked[1].labels, { "Allow once", "Allow this session: " .. rule, "Always allow: " .. rule,
                                             "Edit command…", "Reject", "Reject with reason…", "Always reject: " .. rule,
                                             "Reject and stop" }), vim.inspect(asked[1].labels))
    assert(#typed == 1 and typed[1].prompt:find("why", 1, true), vim.inspect(typed))
    assert(tool_result(pi, "c_bash") == "The user declined this call: build holds my release",
           tostring(tool_result(pi, "c_bash")))
    assert(buffer_text():find("Understood, keeping build.", 1, true), buffer_text())
  end)

  test("a write's review: g? offers Reject with reason… and Reject and stop; the reason reaches the model", function()
    local dir = workspace({ call("write", { path = "notes.txt", content = "unwanted" }), text("Not writing it then.") })
    local pi = start(dir, true)
    local asked = t.picking(function(items)
      return vim.tbl_filter(function(i) return i == require("pi.permission").REASON end, items)[1]
    end)
    typing(function() return "notes go in the README" end)
    vim.cmd("Pi write notes")
    wait("the review", function() return require("pi.review").count() == 1 end)
    vim.api.nvim_feedkeys("g?", "x", false)
    wait("settled", function() return pi.status().settled >= 1 end)
    local labels = asked[1].labels
    assert(labels[#labels] == "Reject and stop" and vim.tbl_contains(labels, "Reject with reason…"), vim.inspect(labels))
    assert(require("pi.review").count() == 0, "the review closed")
    assert(tool_result(pi, "c_write") == "The user declined this call: notes go in the README",
           tostring(tool_result(pi, "c_write")))
    assert(vim.fn.filereadable(dir .. "/notes.txt") == 0, "nothing written")
  end)

  test("Edit command…: the command edited in a float is what runs, shown above its output", function()
    local dir = workspace({ call("bash", { command = "echo from-the-model\necho second-line" }), text("Ran it.") })
    local pi = start(dir, true)
    t.picking(function(items)
      return vim.tbl_filter(function(i) return i == require("pi.permission").EDIT end, items)[1]
    end)
    vim.cmd("Pi say hi")
    local float
    wait("the command to edit", function()
      local win = vim.api.nvim_get_current_win()
      if vim.api.nvim_win_get_config(win).relative ~= "" and vim.bo[vim.api.nvim_win_get_buf(win)].filetype == "sh" then
        float = win
      end
      return float ~= nil
    end)
    local buf = vim.api.nvim_win_get_buf(float)
    assert(vim.deep_equal(vim.api.nvim_buf_get_lines(buf, 0, -1, false), { "echo from-the-model", "echo second-line" }))
    assert(vim.api.nvim_win_get_config(float).title[1][1] == require("pi.permission").EDIT_TITLE)
    vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "echo from-the-user" })
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<C-s>", true, false, true), "x", false)
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(not vim.api.nvim_win_is_valid(float), "the float closed")
    local content = buffer_text()
    assert(content:find("✎ bash, edited by you; what ran:\n  command:\n    echo from%-the%-user\n    echo second%-line\n"
                        .. "bash output {{{\n"), content)
    assert(content:find("\nfrom-the-user\nsecond-line\n", 1, true), content)
    assert(not content:find("\nfrom-the-model\n", 1, true), content)
    assert(tool_result(pi, "c_bash"):find("^The user edited this call before it ran"), tool_result(pi, "c_bash"))
  end)

  test("permission pickers come one at a time: the calls of one message are asked about in turn", function()
    local dir = workspace({
      { content = { { type = "toolCall", id = "b1", name = "bash", arguments = { command = "echo one" } },
                    { type = "toolCall", id = "b2", name = "bash", arguments = { command = "echo two" } } },
        stopReason = "toolUse" },
      text("Both done."),
    })
    local pi = start(dir, true)
    local received, shown = 0, {}
    local receive = pi.on_receive
    replace(pi, "on_receive", function(kind, method, params)
      if method == "permission/request" then received = received + 1 end
      receive(kind, method, params)
    end)
    replace(vim.ui, "select", function(items, opts, on_choice)
      table.insert(shown, { prompt = opts.prompt, answer = function() on_choice(items[1]) end })
    end)
    vim.cmd("Pi run both")
    wait("both requests received", function() return received == 2 end)
    assert(#shown == 1 and shown[1].prompt == "Run `echo one`", vim.inspect(shown))
    shown[1].answer()
    wait("the second asked", function() return #shown == 2 end)
    assert(shown[2].prompt == "Run `echo two`", vim.inspect(shown))
    shown[2].answer()
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(buffer_text():find("\none\n", 1, true) and buffer_text():find("\ntwo\n", 1, true), buffer_text())
  end)

  test("a permission picker nobody answered in time is withdrawn: its late answer is not sent", function()
    local dir = workspace({ call("bash", { command = "echo late" }), text("Went on without it.") })
    local pi = start(dir, true, { "--permission-timeout", "1" })
    local answer
    replace(vim.ui, "select", function(items, _, on_choice) answer = function() on_choice(items[1]) end end)
    vim.cmd("Pi run it")
    wait("settled", function() return pi.status().settled >= 1 end)
    local late = t.notifications(function() answer() vim.wait(50) end)
    assert(vim.tbl_contains(late, "pi: that permission request was withdrawn; the answer was not sent"), vim.inspect(late))
  end)

  test("the command being edited is closed when nobody answered in time", function()
    local dir = workspace({ call("bash", { command = "echo slow" }), text("Went on.") })
    local pi = start(dir, true, { "--permission-timeout", "1" })
    t.picking(function(items)
      return vim.tbl_filter(function(i) return i == require("pi.permission").EDIT end, items)[1]
    end)
    local shown = t.capture()
    vim.cmd("Pi run it")
    local float
    wait("the command to edit", function()
      local win = vim.api.nvim_get_current_win()
      if vim.api.nvim_win_get_config(win).relative ~= "" then float = win end
      return float ~= nil
    end)
    wait("settled", function() return pi.status().settled >= 1 end)
    wait("the float closed", function() return not vim.api.nvim_win_is_valid(float) end)
    assert(vim.fn.mode() == "n", vim.fn.mode())
    assert(#vim.tbl_filter(function(m) return m:find("withdrawn", 1, true) end, shown) == 0, vim.inspect(shown))
  end)

  test("Reject and stop: nothing more runs and the chat says the run was stopped", function()
    local dir = workspace({
      { content = { { type = "toolCall", id = "b1", name = "bash", arguments = { command = "echo one" } },
                    { type = "toolCall", id = "b2", name = "bash", arguments = { command = "echo two" } } },
        stopReason = "toolUse" },
      text("should never be said"),
    })
    local pi = start(dir, true)
    local asked = t.picking(function(items) return items[#items] end) -- Reject and stop
    vim.cmd("Pi run both")
    wait("settled", function() return pi.status().settled >= 1 end)
    -- the second call was asked about with the first; it is not shown after the stop
    assert(#asked == 1, vim.inspect(asked))
    assert(tool_result(pi, "b1"):find("^The user rejected this call and stopped the run"), tool_result(pi, "b1"))
    assert(not buffer_text():find("\ntwo\n", 1, true), buffer_text())
    assert(asked[1].labels[#asked[1].labels] == "Reject and stop", vim.inspect(asked[1].labels))
    assert(vim.tbl_contains(require("pi.chat").marks(), require("pi").STOPPED), vim.inspect(require("pi.chat").marks()))
    assert(not buffer_text():find("should never be said", 1, true), buffer_text())
  end)
end
