-- Headless tests of :PiRewind, the session modes and subagents against the real daemon; run by tests/run.lua.
return function(t)
  local test, start, workspace, wait, text, call, chat = t.test, t.start, t.workspace, t.wait, t.text, t.call, t.buffer_text

  -- The text of `path` as the user sees it: its buffer when loaded, else the disk.
  local function seen(path)
    local buf = vim.fn.bufnr(path)
    if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
      return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
    end
    return vim.fn.filereadable(path) == 1 and table.concat(vim.fn.readfile(path), "\n") or nil
  end

  -- vim.ui.select answered by `answer(items, opts)` (an item or nil) for each call; the prompts are kept.
  local function picking(answer)
    local original, prompts = vim.ui.select, {}
    vim.ui.select = function(items, opts, on_choice)
      table.insert(prompts, opts.prompt)
      on_choice(answer(items, opts))
    end
    return prompts, function() vim.ui.select = original end
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
    local said, notify = {}, vim.notify
    vim.notify = function(msg) table.insert(said, msg) end
    vim.cmd("PiRewind")
    wait("the chat redrawn without the second message", function()
      local shown = chat()
      return shown:find("hello", 1, true) ~= nil and shown:find("change a.txt", 1, true) == nil
    end)
    vim.notify = notify
    restore()
    assert(vim.deep_equal(said, { "pi: rewound the conversation and 1 file(s)" }), vim.inspect(said))
    wait("the report in the chat", function() return chat():find("[rewound the conversation and 1 file(s)]", 1, true) end)
    assert(prompts[2]:find("Rewind to before “change a.txt”?", 1, true), prompts[2])
    assert(confirm_labels[1] == "Rewind conversation and files: write a.txt", vim.inspect(confirm_labels))
    wait("the file taken back", function() return seen(dir .. "/a.txt") == "as it was" end)
    -- the message comes back in the prompt window, to be edited and sent again
    local prompt_buf = vim.api.nvim_get_current_buf()
    assert(vim.api.nvim_buf_get_lines(prompt_buf, 0, -1, false)[1] == "change a.txt")
    vim.api.nvim_win_close(0, true)
    vim.cmd.stopinsert()
  end)

  test(":PiMode plan refuses the agent's write; :PiExecutePlan carries the plan out", function()
    local dir = workspace({ call("write", { path = "p.txt", content = "planned\n" }), text("1. write p.txt"),
                            call("write", { path = "p.txt", content = "planned\n" }), text("done") })
    local pi = start(dir, false, { "--yes" })
    vim.cmd("PiMode plan")
    wait("plan mode shown", function() return pi.statusline():find("plan", 1, true) ~= nil end)
    vim.cmd("Pi make p.txt")
    wait("settled", function() return pi.status().settled >= 1 end)
    assert(chat():find("plan mode", 1, true), chat()) -- the refused write names the mode
    wait("the plan offered", function() return chat():find(":PiExecutePlan", 1, true) ~= nil end)
    assert(seen(dir .. "/p.txt") == nil)
    vim.cmd("PiExecutePlan")
    wait("settled twice", function() return pi.status().settled >= 2 end)
    wait("ask mode shown", function() return pi.statusline():find("· ask", 1, true) ~= nil end)
    assert(chat():find("Go ahead with the plan.", 1, true), chat())
    assert(vim.trim(seen(dir .. "/p.txt") or "") == "planned", seen(dir .. "/p.txt"))
  end)

  test("a subagent shows under its task call; :PiSubagents opens it", function()
    local child = vim.tbl_extend("force", text("the child's answer"), { when = "child job" })
    local dir = workspace({ call("task", { prompt = "child job", description = "look around" }), child,
                            text("parent done") })
    local pi = start(dir, false, { "--yes" })
    vim.cmd("Pi delegate")
    wait("settled", function() return pi.status().settled >= 1 end)
    local shown = chat()
    assert(shown:find("the child's answer", 1, true) and shown:find("parent done", 1, true), shown)
    assert(not shown:find("## you\nchild job", 1, true), shown) -- the child's conversation is not the chat's
    local labels
    local _, restore = picking(function(items, opts)
      if opts.format_item then labels = vim.tbl_map(opts.format_item, items) return items[1] end
      return "Open"
    end)
    vim.cmd("PiSubagents")
    wait("the child's conversation", function() return chat():find("child job", 1, true) ~= nil end)
    restore()
    assert(vim.deep_equal(labels, { "[completed] look around" }), vim.inspect(labels))
    wait("its answer", function() return chat():find("the child's answer", 1, true) ~= nil end)
  end)
end
