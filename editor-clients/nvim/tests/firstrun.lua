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

  -- Runs fn with no `secret-tool` on PATH, so that a key entered stays in this Neovim session and
  -- never reaches the developer's keyring; PATH is restored even when fn fails.
  local function without_keyring(fn)
    local path, dirs = vim.env.PATH, {}
    for _, dir in ipairs(vim.split(path, ":", { trimempty = true })) do
      if vim.fn.executable(dir .. "/secret-tool") == 1 then
        -- the same folder minus secret-tool: the shell and the daemon's Python are found there too
        local shadow = vim.fn.tempname()
        vim.fn.mkdir(shadow, "p")
        for name in vim.fs.dir(dir) do
          if name ~= "secret-tool" then vim.uv.fs_symlink(dir .. "/" .. name, shadow .. "/" .. name) end
        end
        dir = shadow
      end
      table.insert(dirs, dir)
    end
    vim.env.PATH = table.concat(dirs, ":")
    local ok, err = pcall(fn)
    vim.env.PATH = path
    if not ok then error(err, 0) end
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
  end)

  test("a key entered for this session makes its provider usable, also after a restart; dismissed, the prompt comes back",
       function() without_keyring(function()
    local dir = workspace({})
    start_without_model(dir)
    local asked, restore = answering({ "Enter an API key", "openai" }) -- then the model list: dismissed
    local input_opts
    local stop_input = t.replace(vim.ui, "input", function(opts, on_input) input_opts = opts on_input("sk-test-key") end)
    local shown, stop_notify = t.capture()
    vim.cmd("Pi keep this question")
    wait("the model list", function() return #asked == 3 end)
    wait("the input area, with the message", function()
      return vim.api.nvim_get_current_win() == require("pi.input").window() and vim.api.nvim_get_current_line() ~= ""
    end)
    stop_input() stop_notify()
    restore()
    assert(input_opts.secret == true and input_opts.prompt == "openai API key: ", vim.inspect(input_opts))
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
  end) end)

  test("a local OpenAI-compatible server at a URL typed in: added, chosen, and it answers the kept prompt", function()
    local dir = workspace({})
    -- a real HTTP server: GET /v1/models and a streamed chat completion
    vim.fn.writefile(vim.split([[
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "tiny-local", "object": "model"}]}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200); self.send_header("Content-Type", "text/event-stream"); self.end_headers()
        for chunk in ({"role": "assistant", "content": "Hello from "}, {"content": "the local server."}):
            data = {"id": "x", "object": "chat.completion.chunk", "model": "tiny-local",
                    "choices": [{"index": 0, "delta": chunk, "finish_reason": None}]}
            self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")
        end = {"id": "x", "object": "chat.completion.chunk", "model": "tiny-local",
               "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        self.wfile.write(b"data: " + json.dumps(end).encode() + b"\n\ndata: [DONE]\n\n")
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
]], "\n"), dir .. "/server.py")
    local port
    local server = vim.system({ t.python, dir .. "/server.py" }, { stdout = function(_, data)
      if data and not port then port = data:match("(%d+)") end
    end })
    wait("the server's port", function() return port ~= nil end)
    local ok, err = pcall(function()
      start_without_model(dir)
      local url = "http://127.0.0.1:" .. port .. "/v1"
      local asked, restore = answering({ "Use a local model server", "Another server" })
      local stop_input = t.replace(vim.ui, "input", function(_, on_input) on_input(url) end)
      vim.cmd("Pi hello local")
      wait("the local answer", function() return buffer_text():find("Hello from the local server.", 1, true) ~= nil end)
      wait("settled", function() return pi.status().settled >= 1 end)
      stop_input()
      restore()
      assert(asked[2].labels[#asked[2].labels]:find("^Another server: enter its URL"), vim.inspect(asked[2]))
      assert(buffer_text():find("## you\nhello local", 1, true), buffer_text())
      assert(pi.status().model == "127.0.0.1-" .. port .. "/tiny-local", tostring(pi.status().model))
      local stored = vim.json.decode(table.concat(vim.fn.readfile(dir .. "/models.json"), "\n"))
      assert(stored.providers["127.0.0.1-" .. port].baseUrl == url, vim.inspect(stored))
    end)
    server:kill(9)
    if not ok then error(err, 0) end
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
