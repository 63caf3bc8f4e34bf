-- Headless tests of :PiRewind, the session modes and subagents against the real daemon; run by tests/run.lua.
return function(t)
  local test, start, workspace, wait, text, call, chat = t.test, t.start, t.workspace, t.wait, t.text, t.call, t.buffer_text
  local function marks() return require("pi.chat").marks() end
  local function has_mark(wanted) return vim.tbl_contains(marks(), wanted) end

  -- The text of `path` as the user sees it: its buffer when loaded, else the disk.
  local function seen(path)
    local buf = vim.fn.bufnr(path)
    if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
      return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
    end
    return vim.fn.filereadable(path) == 1 and table.concat(vim.fn.readfile(path), "\n") or nil
  end

  -- t.picking (every permission too: a write is asked in the picker, not shown as a diff, see
  -- tests/chat_review.lua, until the test's end).
  local function picking(answer)
    t.configured("review", false)
    return t.picking(answer)
  end

  test(":PiRewind lists what changes, takes the agent's edit back, redraws and gives the message back", function()
    local dir = workspace({ text("hello"), call("write", { path = "a.txt", content = "by the agent\n" }), text("written") })
    vim.fn.writefile({ "as it was" }, dir .. "/a.txt")
    local pi = start(dir, false, { "--yes" })
    vim.cmd("Pi one")
    wait("settled", function() return pi.status().settled >= 1 end)
    vim.cmd("Pi change a.txt")
    wait("settled twice", function() return pi.status().settled >= 2 end)
    assert(seen(dir .. "/a.txt") == "by the agent", seen(dir .. "/a.txt"))
    local confirm_labels
    local prompts, restore = picking(function(items, opts)
      if opts.kind == "pi.rewind" then  -- conversation and files
        confirm_labels = vim.tbl_map(opts.format_item, items)
        return items[1]
      end
      for _, item in ipairs(items) do if item.line:find("change a.txt", 1, true) then return item end end
    end)
    local said, stop = t.capture()
    vim.cmd("PiRewind")
    wait("the chat redrawn without the second message, the outcome under it", function()
      local shown = chat()
      return shown:find("hello", 1, true) ~= nil and shown:find("change a.txt", 1, true) == nil
        and has_mark("[rewound the conversation and 1 file(s)]")
    end)
    stop()
    restore()
    assert(vim.deep_equal(said, { "pi: rewound the conversation and 1 file(s)" }), vim.inspect(said))
    assert(prompts[2].prompt:find("Rewind to before “change a.txt”?", 1, true), prompts[2].prompt)
    assert(vim.deep_equal(confirm_labels, { "Rewind conversation and files: write a.txt",
                                            "Rewind conversation only (keep the files)", "Cancel" }),
           vim.inspect(confirm_labels))
    wait("the file taken back", function() return seen(dir .. "/a.txt") == "as it was" end)
    -- the message comes back in the input area, to be edited and sent again
    local prompt_buf = vim.api.nvim_get_current_buf()
    assert(vim.api.nvim_buf_get_lines(prompt_buf, 0, -1, false)[1] == "change a.txt")
    vim.api.nvim_win_close(0, true)
    vim.cmd.stopinsert()
  end)

  test(":PiRewind leaves a file changed by hand since alone and says so; \"conversation only\" keeps the files", function()
    local dir = workspace({
      { content = { { type = "toolCall", id = "w1", name = "write", arguments = { path = "a.txt", content = "agent a\n" } },
                    { type = "toolCall", id = "w2", name = "write", arguments = { path = "b.txt", content = "agent b\n" } } },
        stopReason = "toolUse" },
      text("both written"), call("write", { path = "c.txt", content = "agent c\n" }), text("c written") })
    vim.fn.writefile({ "a before" }, dir .. "/a.txt")
    vim.fn.writefile({ "b before" }, dir .. "/b.txt")
    local pi = start(dir, false, { "--yes" })
    vim.cmd("Pi change both")
    wait("settled", function() return pi.status().settled >= 1 end)
    vim.api.nvim_buf_set_lines(vim.fn.bufnr(dir .. "/b.txt"), 0, -1, false, { "b by hand" }) -- the user's change
    local labels
    local choose = "files"
    local _, restore = picking(function(items, opts)
      if opts.kind == "pi.rewind" then
        labels = vim.tbl_map(opts.format_item, items)
        return choose
      end
      return items[#items] -- the latest message
    end)
    local said, stop = t.capture()
    vim.cmd("PiRewind")
    wait("the rewind's outcome", function() return #said > 0 end)
    assert(labels[1]:find("^Rewind conversation and files: write a.txt; left alone: b.txt %(.+%)$"), labels[1])
    assert(said[1]:find("^pi: rewound the conversation and 1 file%(s%); left alone: b.txt %(.+%)$"), said[1])
    wait("the chat redrawn", function() return chat():find("change both", 1, true) == nil end)
    wait("a.txt taken back", function() return seen(dir .. "/a.txt") == "a before" end)
    assert(seen(dir .. "/b.txt") == "b by hand", seen(dir .. "/b.txt"))
    vim.api.nvim_win_close(0, true) -- the input area with the message
    -- conversation only: the agent's file stays
    vim.cmd("Pi write c")
    -- the second run's own outcome (a settled count can be met by the rewind's before this run ends)
    wait("c written and answered", function()
      local c = seen(dir .. "/c.txt")
      return c ~= nil and vim.trim(c) == "agent c" and chat():find("c written", 1, true) ~= nil
        and pi.status().settled >= 2
    end)
    choose = "keep"
    stop() said, stop = t.capture()
    vim.cmd("PiRewind")
    wait("the chat redrawn, the outcome under it", function()
      return chat():find("write c", 1, true) == nil and has_mark("[rewound the conversation; the files were kept]")
    end)
    stop()
    restore()
    assert(vim.trim(seen(dir .. "/c.txt")) == "agent c", seen(dir .. "/c.txt"))
    vim.api.nvim_win_close(0, true)
    vim.cmd.stopinsert()
  end)

  test(":PiMode plan refuses the agent's write; :PiExecutePlan carries the plan out", function()
    local dir = workspace({ call("write", { path = "p.txt", content = "planned\n" }), text("1. write p.txt"),
                            call("write", { path = "p.txt", content = "planned\n" }), text("done") })
    local pi = start(dir, false, { "--yes" })
    vim.cmd("PiMode plan")
    wait("plan mode shown", function() return pi.statusline():find("· plan", 1, true) ~= nil end)
    vim.cmd("Pi make p.txt")
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(chat():find("write output (error) {{{\nTool call blocked: the session is in plan mode", 1, true), chat())
    assert(has_mark(require("pi.modes").PLAN_READY), vim.inspect(marks()))
    assert(seen(dir .. "/p.txt") == nil)
    vim.cmd("PiExecutePlan")
    wait("settled twice", function() return pi.status().settled >= 2 end)
    wait("ask mode shown", function() return pi.statusline():find("· ask", 1, true) ~= nil end)
    assert(chat():find("## you\nGo ahead with the plan.", 1, true), chat())
    assert(vim.trim(seen(dir .. "/p.txt") or "") == "planned", seen(dir .. "/p.txt"))
    assert(#vim.tbl_filter(function(m) return m == require("pi.modes").PLAN_READY end, marks()) == 1,
           "offered after the plan-mode run only")
    -- a mode changed elsewhere (the /mode command) reaches the statusline through mode_changed
    vim.cmd("Pi /mode auto-edit")
    wait("auto-edit shown", function() return pi.statusline():find("· auto-edit", 1, true) ~= nil end)
  end)

  local chat_mod = require("pi.chat")
  local function nested(id) return chat_mod.nested_lines(id) end
  local function nested_has(id, pattern)
    for _, l in ipairs(nested(id)) do if l:find(pattern) then return true end end
    return false
  end

  local function view_text(view) return table.concat(vim.api.nvim_buf_get_lines(view, 0, -1, false), "\n") end
  local function child_view()
    local item = require("pi.subagents").items()[1]
    return item and item.child.view
  end

  test("a running subagent shows nested under its task call; :PiSubagents opens it in its own view", function()
    local dir = workspace({
      call("task", { prompt = "child job", description = "look around" }),
      vim.tbl_extend("force", call("write", { path = "child.txt", content = "from the child\n" }), { when = "child job" }),
      vim.tbl_extend("force", text("the child's answer"), { when = "child job" }),
      text("parent done") })
    local pi = start(dir, true)
    local labels, asked, answer
    local _, restore = picking(function(items, opts)
      if opts.kind == "pi.permission" then -- the child's question waits for the user (held open)
        asked = opts.prompt
        answer = function() return items[1] end
        return nil
      end
      if opts.kind == "pi.subagents" then labels = vim.tbl_map(opts.format_item, items) return items[1] end
    end)
    -- an asynchronous picker: the permission is answered later, as a user would
    local sync = vim.ui.select
    local later
    local stop_async = t.replace(vim.ui, "select", function(items, opts, on_choice)
      if opts.kind == "pi.permission" then sync(items, opts, function() end) later = function() on_choice(answer()) end
      else sync(items, opts, on_choice) end
    end)
    vim.cmd("Pi delegate")
    wait("the subagent nested under the task call, asking", function()
      return later ~= nil and nested_has("c_task", "^  ┌ subagent: look around · running$")
        and nested_has("c_task", "^  │ → write child.txt …$")
    end)
    assert(asked == "subagent “look around”: Write child.txt", asked) -- whose question it is
    local parent = pi.status().session
    assert(pi.statusline():find("· 1 subagent", 1, true), pi.statusline())
    assert(not chat():find("## you\nchild job", 1, true), chat()) -- the child's conversation is not the chat's
    vim.cmd("PiSubagents")
    wait("the child's view", function()
      local view = child_view()
      return view ~= nil and view_text(view):find("## you\nchild job\n\n## pi\n\n→ write", 1, true) ~= nil
    end)
    local view = child_view()
    assert(vim.api.nvim_buf_get_name(view):find("pi://subagent/", 1, true), vim.api.nvim_buf_get_name(view))
    -- one picker: open it or stop it (not a subagent, then an action)
    assert(vim.deep_equal(labels, { "Open [running] look around · write", "Stop [running] look around · write" }),
           vim.inspect(labels))
    later() -- allowed: the child writes, answers and ends
    wait("the subagent ended", function() return nested_has("c_task", "^  └ subagent: look around · completed") end)
    wait("settled", function() return pi.status().settled >= 1 end)
    stop_async()
    restore()
    wait("the child's answer in its view", function() return view_text(view):find("the child's answer", 1, true) end)
    -- its tool's live output is drawn in its view only
    assert(view_text(view):find("write output {{{\nCreated child.txt", 1, true), view_text(view))
    assert(not chat():find("Created child.txt", 1, true), chat())
    assert(chat():find("task output {{{\nthe child's answer\n}}}", 1, true) and chat():find("parent done", 1, true),
           chat())
    assert(#nested("c_task") == 1 and pi.status().session == parent, vim.inspect(nested("c_task")))
    local state
    pi.request("getState", {}, function(r) state = r end)
    wait("the state", function() return state ~= nil end)
    assert(state.sessionId == parent, "the chat's session stays current")
    vim.cmd("bwipeout! " .. view)
    -- :PiSessions lists the child right under its parent
    local sessions
    _, restore = picking(function(items, opts) sessions = vim.tbl_map(opts.format_item, items) end)
    vim.cmd("PiSessions")
    wait("the sessions", function() return sessions ~= nil end)
    restore()
    assert(#sessions == 3 and sessions[3] == require("pi.sessions").SEARCH and sessions[1]:find("  delegate  ", 1, true)
           and sessions[2]:find("^  ↳ .*  child job  %(4 messages%)$"), vim.inspect(sessions))
  end)

  test("two subagents at once: each is drawn under its own task call", function()
    local task = function(id, prompt, description)
      return { type = "toolCall", id = id, name = "task", arguments = { prompt = prompt, description = description } }
    end
    local dir = workspace({
      { content = { task("t1", "alpha job", "first"), task("t2", "beta job", "second") }, stopReason = "toolUse" },
      vim.tbl_extend("force", text("alpha answer"), { when = "alpha job" }),
      vim.tbl_extend("force", text("beta answer"), { when = "beta job" }),
      text("both back") })
    local pi = start(dir, false, { "--yes" })
    vim.cmd("Pi two at once")
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(nested("t1")[1]:find("^  └ subagent: first · completed") and #nested("t1") == 1, vim.inspect(nested("t1")))
    assert(nested("t2")[1]:find("^  └ subagent: second · completed") and #nested("t2") == 1, vim.inspect(nested("t2")))
    -- each under its own call's arguments
    local lines = vim.api.nvim_buf_get_lines(pi.status().buf, 0, -1, false)
    local marks = vim.api.nvim_buf_get_extmarks(pi.status().buf, vim.api.nvim_create_namespace("pi_nested"), 0, -1,
                                                { details = true })
    local under = {}
    for _, m in ipairs(marks) do
      if m[4].virt_lines then under[lines[m[2] + 1]] = m[4].virt_lines[1][1][1]:match("subagent: (%w+)") end
    end
    assert(vim.deep_equal(under, { ["  prompt: alpha job"] = "first", ["  prompt: beta job"] = "second" }),
           vim.inspect(under))
  end)

  test(":PiSubagents aborts a running subagent; the parent goes on; a finished one opens from its file", function()
    local dir = workspace({
      call("task", { prompt = "slow job", description = "never ends" }),
      vim.tbl_extend("force", call("bash", { command = "sleep 30" }), { when = "slow job" }),
      text("parent went on") })
    local pi = start(dir, false, { "--yes" })
    vim.cmd("Pi delegate")
    wait("the child's command", function() return nested_has("c_task", "→ bash sleep 30 …$") end)
    local parent = pi.status().session
    local asked, restore = picking(function(items, opts)
      if opts.kind == "pi.subagents" then return items[2] end -- "Stop …"
    end)
    vim.cmd("PiSubagents")
    wait("the subagent aborted", function() return nested_has("c_task", "^  └ subagent: never ends · aborted") end)
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(chat():find("task output (error) {{{\nError: the subagent was aborted", 1, true), chat())
    assert(chat():find("parent went on", 1, true), chat())
    -- its session is closed in the daemon now: read from its file; the one finished subagent
    -- opens without a one-item picker
    vim.cmd("PiSubagents")
    wait("the child's view", function() return child_view() and view_text(child_view()):find("slow job", 1, true) end)
    local view = child_view()
    restore()
    assert(#asked == 1, vim.inspect(asked))
    local in_view
    chat_mod.with(view, function() in_view = chat_mod.marks() end)
    assert(vim.deep_equal(in_view, { "— subagent aborted —" }), vim.inspect(in_view))
    local state
    pi.request("getState", {}, function(r) state = r end)
    wait("the state", function() return state ~= nil end)
    assert(state.sessionId == parent, "the chat's session is current again")
    vim.cmd("bwipeout! " .. view)
  end)
end
