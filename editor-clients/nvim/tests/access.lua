-- Headless tests of stop giving queued messages back, the model chosen kept as the default and
-- :PiKey (model access: keys per provider, local servers), against the real daemon; run by tests/run.lua.
return function(t)
  local test, start, workspace, wait, text, call = t.test, t.start, t.workspace, t.wait, t.text, t.call
  local pi = require("pi")

  test("stop gives the queued steer and follow-up back to the input area, says so, and neither runs later", function()
    local dir = workspace({ call("bash", { command = "sleep 30" }), text("never asked"), text("the next answer") })
    local pi_ = start(dir, false, { "--allow", "bash" })
    vim.cmd("Pi run something")
    wait("the tool", function() return t.buffer_text():find("bash output {{{", 1, true) ~= nil end)
    local input = require("pi.input")
    vim.api.nvim_buf_set_lines(input.buffer(), 0, -1, false, { "a draft" })
    vim.cmd("PiSteer go left")
    vim.cmd("PiFollowUp then summarise")
    wait("both queued", function() return #input.queue_lines() == 2 end)
    local said, stop = t.capture()
    vim.cmd("PiAbort")
    wait("said", function()
      return vim.tbl_contains(said, "pi: stopped; 2 queued message(s) are back in the input area, not sent")
    end)
    stop()
    assert(vim.deep_equal(vim.api.nvim_buf_get_lines(input.buffer(), 0, -1, false),
                          { "go left", "", "then summarise", "", "a draft" }), vim.inspect(vim.api.nvim_buf_get_lines(input.buffer(), 0, -1, false)))
    wait("settled", function() return pi_.status().settled >= 1 end)
    wait("the queue emptied", function() return #input.queue_lines() == 0 end)
    input.set_text("")
    vim.cmd("Pi next")
    wait("settled again", function() return pi_.status().settled >= 2 end)
    local shown = t.buffer_text()
    assert(not shown:find("go left", 1, true) and not shown:find("then summarise", 1, true), shown)
  end)

  -- vim.ui.select answered, for a prompt matching a pattern of `wanted`, by the item whose label
  -- starts with the next of that pattern's labels (none left, or no pattern: dismissed);
  -- `asked` gets each question (t.picking).
  local function choosing(wanted)
    return t.picking(function(items, opts)
      for pattern, labels in pairs(wanted) do
        if opts.prompt:find(pattern) then
          local label = table.remove(labels, 1)
          for _, item in ipairs(label and items or {}) do
            if vim.startswith(opts.format_item(item), label) then return item end
          end
        end
      end
    end)
  end

  local function access_of(provider)
    local found
    pi.request("modelAccess", {}, function(r)
      for _, p in ipairs(r.providers) do if p.provider == provider then found = p end end
      found = found or false
    end)
    wait("modelAccess", function() return found ~= nil end)
    return found
  end

  test(":PiKey enters, replaces and removes a key, read with inputsecret; replaced and removed keys are not sent again",
       function() t.without_keyring(function()
    local dir = workspace({})
    start(dir)
    local typed = { "sk-one", "sk-two" }
    local prompts = {}
    t.replace(vim.fn, "inputsecret", function(prompt) table.insert(prompts, prompt) return table.remove(typed, 1) end)
    t.replace(vim.ui, "input", function() error("a key read with vim.ui.input, which may show it") end)
    local sent, request = {}, pi.request
    t.replace(pi, "request", function(method, params, ...)
      if method == "setApiKey" then table.insert(sent, params.provider .. "=" .. params.key) end
      return request(method, params, ...)
    end)
    local said = t.capture()
    local asked = choosing({ ["^Model access$"] = { "openai ·", "openai ·" }, ["^openai · key entered here"] = { "Replace" } })
    vim.cmd("PiKey")
    wait("the key set", function() return vim.tbl_contains(said, "pi: the openai key is set: " .. access_of("openai").models
                                                                 .. " model(s); :PiModel chooses one") end)
    assert(vim.tbl_contains(asked[1].labels, "openai · no key ($OPENAI_API_KEY): choose to enter one"),
           vim.inspect(asked[1].labels))
    assert(asked[1].labels[#asked[1].labels] == "Add a local model server (Ollama, llama.cpp, or a URL)", vim.inspect(asked[1].labels))
    assert(access_of("openai").key == "client")
    vim.cmd("PiKey") -- openai, then Replace
    wait("the new key sent", function() return vim.tbl_contains(sent, "openai=sk-two") end)
    assert(vim.deep_equal(prompts, { "openai API key (OPENAI_API_KEY): ", "openai API key (OPENAI_API_KEY): " }), vim.inspect(prompts))
    assert(asked[#asked].labels[2] == "Remove the openai key entered here", vim.inspect(asked[#asked].labels))
    -- the next start gets the new key only
    sent = {}
    start(dir)
    wait("the key given again", function() return access_of("openai").key == "client" end)
    assert(vim.deep_equal(sent, { "openai=sk-two" }), vim.inspect(sent))
    -- removed: gone from the daemon and not sent at the next start
    asked = choosing({ ["^Model access$"] = { "openai ·" }, ["^openai · key entered here"] = { "Remove" } })
    vim.cmd("PiKey")
    wait("removed", function() return vim.tbl_contains(said, "pi: the openai key is removed") end)
    assert(access_of("openai").key == "none")
    sent = {}
    start(dir)
    assert(access_of("openai").key == "none")
    assert(vim.deep_equal(sent, {}), vim.inspect(sent))
  end) end)

  test("an answer the provider refused (401) offers model access, where the server is removed", function()
    local dir = workspace({})
    local _, port = t.model_server(true)
    start(dir)
    local url = "http://127.0.0.1:" .. port .. "/v1"
    local set
    pi.request("addModelServer", { name = "refusing", baseUrl = url }, function()
      pi.request("setModel", { provider = "refusing", modelId = "tiny-local", remember = false }, function() set = true end)
    end)
    wait("the server's model set", function() return set end)
    local said = t.capture()
    local asked = choosing({ ["^refusing refused the credentials"] = { "Manage model access" },
                             ["^Model access$"] = { "refusing ·" } })
    vim.cmd("Pi hello")
    wait("the server removed", function() return vim.tbl_contains(said, "pi: the model server refusing is removed") end)
    assert(asked[1].prompt:find("^refusing refused the credentials %(.*401"), asked[1].prompt)
    assert(vim.deep_equal(asked[1].labels, { "Manage model access (:PiKey)", "Not now" }), vim.inspect(asked[1].labels))
    local label = vim.tbl_filter(function(l) return vim.startswith(l, "refusing ·") end, asked[2].labels)[1]
    assert(label:find("^refusing · server " .. vim.pesc(url) .. " · 1 model%(s%) · refused: .*401"), label)
    assert(access_of("refusing") == false, "gone from modelAccess")
  end)
end
