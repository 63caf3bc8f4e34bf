-- The first run (lua/pi/firstrun.lua) and saving before commands (lua/pi/savebefore.lua),
-- against the real daemon: no model -> the picker -> the kept prompt answered; a key entered
-- for this session and given again after a restart; a local OpenAI-compatible server (a real
-- HTTP server on a free port) added and answering; the agent's edit saved before its bash.
return function(t)
  local test, workspace, wait, text, call, buffer_text = t.test, t.workspace, t.wait, t.text, t.call, t.buffer_text
  local pi = require("pi")

  -- A daemon with no model chosen (no --model, no key in the environment).
  local function start_without_model(dir, args)
    t.start(dir, false, args, nil, { model = false })
    require("pi.chat").clear()
  end

  -- vim.ui.select answered by the label that contains `wanted[i]` at the i-th question (t.picking).
  local function answering(wanted)
    local n = 0
    return t.picking(function(items, opts)
      n = n + 1
      for _, item in ipairs(items) do
        if wanted[n] and (opts.format_item or tostring)(item):find(wanted[n], 1, true) then return item end
      end
    end)
  end

  local function models(result_of)
    local result
    pi.request("listModels", {}, function(r) result = r end)
    wait("listModels", function() return result ~= nil end)
    return result_of(result)
  end

  test("no model: the prompt is kept, the offline demo picked in the picker answers it", function()
    local dir = workspace({})
    start_without_model(dir)
    local asked, restore = answering({ "Try the offline demo" })
    vim.cmd("Pi hello first run")
    wait("the demo's answer", function() return buffer_text():find("You said: hello first run", 1, true) ~= nil end)
    wait("settled", function() return pi.status().settled >= 1 end)
    restore()
    assert(asked[1].prompt == "No model is chosen yet: how should pi answer?", vim.inspect(asked))
    assert(vim.deep_equal(asked[1].labels, {
      "Enter an API key (anthropic, openai, openrouter, google)",
      "Use a local model server (Ollama, llama.cpp, or a URL)",
      "Try the offline demo (faux/echo: answers without a model, no key)" }), vim.inspect(asked[1].labels))
    assert(buffer_text():find("## you\nhello first run", 1, true), buffer_text())
    assert(pi.status().model == "faux/echo", tostring(pi.status().model))
    -- the demo points at this client's model picker, not at a command line option
    assert(buffer_text():find("To talk to a real model, choose one with :PiModel.", 1, true), buffer_text())
  end)

  test("the model chosen is the default: a new session and the next start use it, nothing asks again", function()
    local dir = workspace({})
    start_without_model(dir)
    local asked, restore = answering({ "Try the offline demo" })
    vim.cmd("Pi first")
    wait("settled", function() return pi.status().settled >= 1 end)
    vim.cmd("PiNew")
    wait("a new chat", function() return not buffer_text():find("first", 1, true) end)
    vim.cmd("Pi in a new session")
    wait("its answer", function() return buffer_text():find("You said: in a new session", 1, true) ~= nil end)
    start_without_model(dir)
    vim.cmd("Pi after a restart")
    wait("its answer", function() return buffer_text():find("You said: after a restart", 1, true) ~= nil end)
    wait("the status", function() return pi.status().model == "faux/echo" end)
    restore()
    assert(#asked == 1, vim.inspect(asked))
  end)

  test("a key entered for this session makes its provider usable, also after a restart; dismissed, the prompt comes back",
       function() t.without_keyring(function()
    local dir = workspace({})
    start_without_model(dir)
    local asked, restore = answering({ "Enter an API key", "openai" }) -- then the model list: dismissed
    -- an input like snacks.nvim's, which shows what is typed: a key is not read with it
    local shown_input = false
    local stop_input = t.replace(vim.ui, "input", function(_, on_input) shown_input = true on_input("sk-test-key") end)
    local secret_prompt
    t.replace(vim.fn, "inputsecret", function(prompt) secret_prompt = prompt return "sk-test-key" end)
    local shown, stop_notify = t.capture()
    vim.cmd("Pi keep this question")
    wait("the model list", function() return #asked == 3 end)
    wait("the input area, with the message", function()
      return vim.api.nvim_get_current_win() == require("pi.input").window() and vim.api.nvim_get_current_line() ~= ""
    end)
    stop_input() stop_notify()
    restore()
    assert(not shown_input and secret_prompt == "openai API key: ", tostring(secret_prompt))
    assert(vim.api.nvim_buf_get_lines(0, 0, -1, false)[1] == "keep this question", "the message back in the input area")
    vim.cmd.stopinsert()
    vim.cmd("close")
    assert(vim.tbl_contains(shown, "pi: the openai key is kept only until Neovim quits (install secret-tool to keep it in the keyring)"),
           vim.inspect(shown))
    assert(asked[3].labels[1]:find("^  openai/"), vim.inspect(asked[3]))
    local usable = function(r)
      return #vim.tbl_filter(function(m) return m.provider == "openai" end, r.models)
    end
    assert(models(usable) > 0, "openai usable")
    -- a new daemon gets the key again
    start_without_model(dir)
    wait("the key given again", function() return models(usable) > 0 end)
    -- the key leaves with the test: the plugin would give it to every later test's daemon
    local gone = false
    require("pi.firstrun").forget_key(pi, "openai", function() gone = true end)
    wait("the key forgotten", function() return gone end)
  end) end)

  test("a local OpenAI-compatible server at a URL typed in: added, chosen, and it answers the kept prompt", function()
    local dir = workspace({})
    local _, port = t.model_server()
    start_without_model(dir)
    local url = "http://127.0.0.1:" .. port .. "/v1"
    local asked, restore = answering({ "Use a local model server" })
    local input_prompt
    local stop_input = t.replace(vim.ui, "input", function(opts, on_input) input_prompt = opts.prompt on_input(url) end)
    vim.cmd("Pi hello local")
    wait("the local answer", function() return buffer_text():find("Hello from the local server.", 1, true) ~= nil end)
    wait("settled", function() return pi.status().settled >= 1 end)
    stop_input()
    restore()
    -- no server on the usual ports: no picker of one item, the URL is asked at once
    assert(#asked == 1, vim.inspect(asked))
    assert(vim.startswith(input_prompt, "No Ollama (11434) or llama.cpp (8080) server answered. Server URL"), input_prompt)
    assert(buffer_text():find("## you\nhello local", 1, true), buffer_text())
    assert(pi.status().model == "127.0.0.1-" .. port .. "/tiny-local", tostring(pi.status().model))
    local stored = vim.json.decode(table.concat(vim.fn.readfile(dir .. "/models.json"), "\n"))
    assert(stored.providers["127.0.0.1-" .. port].baseUrl == url, vim.inspect(stored))
  end)

  test("a model whose key is missing: the picker offers to enter that key first", function()
    local dir = workspace({})
    start_without_model(dir, { "--model", "openai/gpt-6.2-sol" })
    local asked, restore = answering({}) -- dismissed: the message goes back to the input area
    vim.cmd("Pi use openai")
    wait("the input area, with the message", function()
      return vim.api.nvim_get_current_win() == require("pi.input").window() and vim.api.nvim_get_current_line() ~= ""
    end)
    restore()
    assert(asked[1].prompt == "No openai API key (OPENAI_API_KEY): how should pi answer?", vim.inspect(asked))
    assert(asked[1].labels[1] == "Enter the openai API key (OPENAI_API_KEY)", vim.inspect(asked[1].labels))
    assert(vim.api.nvim_buf_get_lines(0, 0, -1, false)[1] == "use openai")
    vim.cmd.stopinsert()
    vim.cmd("close")
  end)

  local function save_case(save)
    local dir = workspace({ call("edit", { path = "a.py", edits = { { oldText = "old", newText = "new" } } }),
                            { content = { { type = "toolCall", id = "c_bash", name = "bash",
                                            arguments = { command = "cat a.py" } } }, stopReason = "toolUse" },
                            text("tested") })
    -- the workspace apart from PI_DAEMON_HOME (the sandbox of bash hides that)
    local work = vim.fn.tempname()
    vim.fn.mkdir(work, "p")
    vim.fn.writefile({ "value = 'old'" }, work .. "/a.py")
    vim.cmd.edit(work .. "/a.py") -- open in the editor: the agent edits this buffer
    local buf = vim.api.nvim_get_current_buf()
    t.configured("save_before_commands", save)
    local p = t.start(dir, false, { "--allow", "edit,bash" }, work)
    vim.cmd("Pi change it and run it")
    wait("settled", function() return p.status().settled >= 1 end)
    return work, buf
  end

  test("the agent's edit is saved before its bash runs, which reads it; the chat says so; undo still works", function()
    local dir, buf = save_case(true)
    local content = buffer_text()
    -- said once: under the call, not again in its output
    assert(content:find("bash output {{{\nvalue = 'new'", 1, true) and not content:find("saved before", 1, true), content)
    assert(vim.deep_equal(require("pi.chat").nested_lines("c_bash"), { "  saved a.py before running" }),
           vim.inspect(require("pi.chat").nested_lines("c_bash")))
    assert(vim.fn.readfile(dir .. "/a.py")[1] == "value = 'new'", "on the disk")
    assert(not vim.bo[buf].modified, "saved")
    vim.api.nvim_buf_call(buf, function() vim.cmd("silent undo") end)
    assert(vim.api.nvim_buf_get_lines(buf, 0, -1, false)[1] == "value = 'old'", "undo takes the edit back")
    vim.cmd("bwipeout! " .. buf)
  end)

  test("save_before_commands = false: the edit stays unsaved and the command reads the disk", function()
    local dir, buf = save_case(false)
    assert(buffer_text():find("value = 'old'", 1, true), buffer_text())
    assert(vim.bo[buf].modified and vim.fn.readfile(dir .. "/a.py")[1] == "value = 'old'")
    vim.cmd("bwipeout! " .. buf)
  end)
end
