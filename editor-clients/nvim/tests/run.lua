-- Headless tests of pi.nvim against the real daemon:
--   PI_DAEMON_PYTHON=... nvim --headless -u NONE -l tests/run.lua
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.runtimepath:prepend(root)
-- These tests start a daemon of Neovim's own (tests/attach.lua picks "attach" for its own)
require("pi").config.connection = "child"
-- The plugin's own files (the workspaces where pi was used, the sessions kept): not the user's
vim.env.XDG_STATE_HOME = vim.fn.tempname()
vim.cmd("runtime plugin/pi.lua")
local python = os.getenv("PI_DAEMON_PYTHON") or "python3"
-- Everything the plugin receives is checked against protocol.schema.json.
local schema_check = dofile(root .. "/tests/schema_check.lua")
require("pi").on_receive = schema_check.check
local passed, failed = 0, 0

local function buffer_text()
  local pi = require("pi")
  local buf = pi.status().buf
  return buf and table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") or ""
end

local function buffer_lines()
  local buf = require("pi").status().buf
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

-- What the running test replaced (put back when it ends, passed or failed): functions that put
-- one thing back each, newest last.
local replaced = {}

-- Sets `owner[key] = value` until the returned function is called or the running test ends.
local function replace(owner, key, value)
  local original, back = owner[key], false
  owner[key] = value
  local function put_back()
    if back then return end
    back = true
    owner[key] = original
  end
  table.insert(replaced, put_back)
  return put_back
end

-- Runs `fn` when the running test ends, passed or failed.
local function finally(fn) table.insert(replaced, fn) end

-- Sets require("pi").config[key] to `value` until the test's end (each pi.start makes a new
-- config table: the old value is put back in the one current then).
local function configured(key, value)
  local pi = require("pi")
  local original = pi.config[key]
  pi.config[key] = value
  table.insert(replaced, function() pi.config[key] = original end)
end

-- The messages shown with vim.notify from now on (until `stop()` or the test's end).
local function capture()
  local shown = {}
  local stop = replace(vim, "notify", function(msg) table.insert(shown, msg) end)
  return shown, stop
end

-- The messages shown with vim.notify while fn runs.
local function notifications(fn)
  local shown, stop = capture()
  local ok, err = pcall(fn)
  stop()
  if not ok then error(err, 0) end
  return shown
end

-- vim.ui.select answered at once by `answer(items, opts)` (an item; nil dismisses) from now on
-- (until `stop()` or the test's end). `asked` gets each question's { prompt, kind, labels }.
local function picking(answer)
  local asked = {}
  local stop = replace(vim.ui, "select", function(items, opts, on_choice)
    table.insert(asked, { prompt = opts.prompt, kind = opts.kind,
                          labels = vim.tbl_map(opts.format_item or tostring, items) })
    on_choice(answer(items, opts))
  end)
  return asked, stop
end

-- The process ids of the daemons running: Neovim's children whose command line holds `pattern`
-- (default "pi_daemon"; the start command execs the daemon, so it is Neovim's own child).
local function daemon_pids(pattern)
  local found = {}
  for _, pid in ipairs(vim.api.nvim_get_proc_children(vim.fn.getpid())) do
    local ok, cmdline = pcall(vim.fn.readfile, "/proc/" .. pid .. "/cmdline", "b")
    if ok and table.concat(cmdline, "\n"):find(pattern or "pi_daemon", 1, true) then table.insert(found, pid) end
  end
  return found
end

local function chat_window()
  require("pi").open()
  return vim.fn.win_findbuf(require("pi").status().buf)[1]
end

-- Until `predicate` holds: at once on an idle host; the default bound (a minute) is reached only when it
-- never does, and is long enough for a loaded 2-core host.
local function wait(what, predicate, ms)
  if not vim.wait(ms or 60000, predicate, 20) then error("timed out waiting for " .. what .. "\n" .. buffer_text()) end
end

local function workspace(replies, opts)
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  local script = vim.tbl_extend("force", { modelId = "script", replies = replies }, opts or {})
  vim.fn.writefile({ vim.json.encode(script) }, dir .. "/script.json")
  return dir
end

-- `cwd`: the folder Neovim starts the daemon in (default: `dir`, the workspace);
-- `opts.model = false`: no model chosen (no faux script, no key in the environment);
-- `opts.connection`: "child" (default) or "attach"; `opts.env`: more of the daemon's environment
local function start(dir, permissions, args, cwd, opts)
  local pi = require("pi")
  pi.stop()
  wait("the previous daemon's exit", function() return #daemon_pids() == 0 end)
  local env = vim.tbl_extend("force", { PI_DAEMON_HOME = dir, OPENAI_API_KEY = "", ANTHROPIC_API_KEY = "",
                                        OPENROUTER_API_KEY = "", GEMINI_API_KEY = "", GOOGLE_API_KEY = "" },
                             (opts or {}).env or {})
  local model = (opts or {}).model == false and {}
    or { "--faux-script", dir .. "/script.json", "--model", "faux/script" }
  local cmd = vim.list_extend(vim.list_extend({ python, "-m", "pi_daemon" }, model), args or {})
  pi.start({ cmd = cmd, connection = (opts or {}).connection or "child",
             cwd = cwd or dir, env = env, permissions = permissions or false })
  local buf = pi.status().buf
  if buf then require("pi.chat").clear() end -- its text and what is drawn on it
  return pi
end

local function text(t) return { content = { { type = "text", text = t } } } end
local function call(name, args) return { content = { { type = "toolCall", id = "c_" .. name, name = name, arguments = args } },
                                         stopReason = "toolUse" } end

-- PI_TEST_ONLY="pattern|pattern": run only the tests whose name matches one of these Lua patterns
local only = os.getenv("PI_TEST_ONLY") and vim.split(os.getenv("PI_TEST_ONLY"), "|", { plain = true })
local function test(name, fn)
  if only and not vim.iter(only):any(function(p) return name:find(p) ~= nil end) then return end
  local ok, err = pcall(fn)
  for i = #replaced, 1, -1 do replaced[i]() end
  replaced = {}
  local violations = schema_check.take()
  if ok and #violations > 0 then
    ok, err = false, "received frames that do not fit protocol.schema.json:\n" .. table.concat(violations, "\n")
  end
  if ok then passed = passed + 1 io.stdout:write("ok - " .. name .. "\n")
  else failed = failed + 1 io.stdout:write("not ok - " .. name .. "\n" .. tostring(err) .. "\n") end
end

test("the schema check catches a frame that does not fit", function()
  schema_check.check("notification", "agent/event", { sessionId = "s", seq = 1, event = { type = "agent_settled", aborted = "no" } })
  schema_check.check("result", "getState", { sessionId = "s" })
  local found = schema_check.take()
  assert(found[1]:find("^agent/event/event: fits none of"), vim.inspect(found))
  assert(vim.tbl_contains(found, "getState: missing isStreaming"), vim.inspect(found))
end)

test("streams the answer into the chat buffer, thinking folded", function()
  local dir = workspace({ { content = { { type = "thinking", thinking = "quietly" }, { type = "text", text = "Hello from pi, in pieces." } } } },
                        { chunkSize = 3, delayMs = 2 })
  local pi = start(dir)
  vim.cmd("Pi hello there")
  wait("the answer", function() return buffer_text():find("Hello from pi, in pieces.", 1, true) ~= nil end)
  wait("settled", function() return pi.status().settled >= 1 end)
  local content = buffer_text()
  assert(content:find("## you\nhello there", 1, true), content)
  assert(content:find("thinking {{{", 1, true) and content:find("quietly", 1, true), content)
  local win = vim.fn.win_findbuf(pi.status().buf)[1]
  assert(vim.wo[win].foldmethod == "marker", "thinking is folded")
end)

test("steer while a tool runs", function()
  local dir = workspace({ call("bash", { command = "sleep 0.5; echo tool-done" }), text("changed course") })
  local pi = start(dir, false, { "--allow", "bash" }) -- no one to ask
  vim.cmd("Pi run something")
  wait("the tool", function() return buffer_text():find("bash output {{{", 1, true) ~= nil end)
  vim.cmd("PiSteer change course please")
  -- the queue is drawn above the input area's text, where following the chat's end keeps it in view
  wait("the queue shown", function()
    return vim.deep_equal(require("pi.input").queue_lines(), { "queued steer: change course please" })
  end)
  assert(pi.statusline():find(" · 1 queued", 1, true), pi.statusline())
  local input_win = require("pi.input").window()
  assert(input_win and vim.api.nvim_win_call(input_win, function() return vim.fn.winsaveview().topfill end) == 1,
         "the queue's line is on screen, above the input's first line")
  wait("settled", function() return pi.status().settled >= 1 end)
  wait("the queue emptied", function() return #require("pi.input").queue_lines() == 0 end)
  assert(buffer_lines()[#buffer_lines()] == "changed course", buffer_text())
  local content = buffer_text()
  assert(content:find("tool-done", 1, true), content)
  assert(content:find("## you\nchange course please", 1, true), content)
  assert(content:find("tool-done", 1, true) < content:find("change course please", 1, true), "delivered after the tool")
end)

test("abort", function()
  local dir = workspace({ text(string.rep("x", 4000)) }, { chunkSize = 1, delayMs = 2 })
  local pi = start(dir)
  vim.cmd("Pi talk")
  wait("streaming", function() return buffer_text():find("xxxxxxxxxx", 1, true) ~= nil end)
  vim.cmd("PiAbort")
  wait("aborted", function() return vim.tbl_contains(require("pi.chat").marks(), "— aborted —") end)
  assert(buffer_text():find("[aborted: Request was aborted]", 1, true), buffer_text())
end)

test("permission request answered with vim.ui.select (review = false)", function()
  local dir = workspace({ call("write", { path = "made.txt", content = "by pi" }), text("written") })
  configured("review", false) -- a write is asked with the picker, not as a diff
  local asked = picking(function(items) return items[1] end)
  local pi = start(dir, true)
  vim.cmd("Pi write a file")
  wait("settled", function() return pi.status().settled >= 1 end)
  assert(asked[1].prompt == "Write made.txt", vim.inspect(asked))
  local shown = asked[#asked].labels
  assert(vim.deep_equal(shown, { "Allow once", "Allow this session: write calls on `made.txt`",
                                 "Always allow: write calls on `made.txt`", "Reject", "Reject with reason…",
                                 "Always reject: write calls on `made.txt`", "Reject and stop" }), vim.inspect(shown))
  -- the write went through the editor: a buffer holds it, unsaved (tests/editfs.lua)
  local made = vim.fn.bufnr(dir .. "/made.txt")
  assert(made > 0 and vim.api.nvim_buf_get_lines(made, 0, -1, false)[1] == "by pi")
end)

test("resume a session from :PiSessions", function()
  local dir = workspace({ text("first answer"), text("second") })
  local pi = start(dir)
  vim.cmd("Pi remember this question")
  wait("settled", function() return pi.status().settled >= 1 end)
  pi = start(dir) -- a new daemon, an empty buffer
  local asked, stop = picking(function(items) return items[1] end)
  vim.cmd("PiSessions")
  wait("the replayed conversation", function() return buffer_text():find("first answer", 1, true) ~= nil end)
  stop()
  local labels = asked[1].labels
  assert(buffer_text():find("## you\nremember this question", 1, true), buffer_text())
  -- each session with the date and time of its last change
  assert(#labels == 2 and labels[2] == require("pi.sessions").SEARCH and labels[1]:match("^%d%d%d%d%-%d%d%-%d%d %d%d:%d%d  remember this question  %(2 messages%)$"),
         vim.inspect(labels))
end)

test(":PiTree lists the branches, marks the current entry and continues from the one picked", function()
  local dir = workspace({ text("first answer"), text("second answer"), text("third answer") })
  local pi = start(dir)
  vim.cmd("Pi one")
  wait("settled", function() return pi.status().settled >= 1 end)
  vim.cmd("Pi two")
  wait("settled twice", function() return pi.status().settled >= 2 end)
  local wanted = "assistant: first answer"
  local asked, stop = picking(function(items)
    for _, item in ipairs(items) do
      if item.line:find(wanted, 1, true) then return item end
    end
  end)
  vim.cmd("PiTree")
  wait("the chat redrawn from the entry", function()
    local content = buffer_text()
    return content:find("first answer", 1, true) ~= nil and content:find("second answer", 1, true) == nil
  end)
  vim.cmd("Pi three")
  wait("the third answer", function() return buffer_text():find("third answer", 1, true) ~= nil end)
  -- the answer is stored when its message ends, after its text has streamed in
  wait("settled three times", function() return pi.status().settled >= 3 end)
  wanted = "nothing"
  vim.cmd("PiTree")
  wait("the tree shown", function() return #asked == 2 end)
  stop()
  local lines = table.concat(asked[2].labels, "\n")
  assert(lines:find("│ assistant: first answer\n  │ user: two", 1, true) == nil, lines) -- the old branch is off the path
  assert(lines:find("    user: two\n    assistant: second answer", 1, true), lines)
  assert(lines:find("  │ user: three\n  ● assistant: third answer", 1, true), lines)
end)

test("workspace trust answered with vim.ui.select, without blocking", function()
  local dir = workspace({ text("hi") })
  vim.fn.mkdir(dir .. "/.pi", "p")
  vim.fn.writefile({ vim.json.encode({ workspace = { extraRoots = { "/" } } }) }, dir .. "/.pi/settings.json")
  local asked, answer = {}, nil
  local stop = replace(vim.ui, "select", function(items, opts, on_choice)
    table.insert(asked, opts.prompt)
    answer = function() on_choice(items[1]) end -- answered later, as a user would
  end)
  local pi = start(dir, false)
  wait("the question", function() return answer ~= nil end)
  local during = nil
  pi.request("session/new", {}, function(result) during = result end) -- the daemon keeps serving meanwhile
  wait("a reply while the question is open", function() return during ~= nil end)
  answer()
  wait("trust.json", function() return vim.fn.filereadable(dir .. "/trust.json") == 1 end)
  stop()
  assert(asked[1]:find("workspace.extraRoots", 1, true), vim.inspect(asked))
  local state = nil
  pi.request("getState", {}, function(result) state = result end)
  wait("state", function() return state ~= nil end)
  assert(state.workspaceTrust.trusted == true, vim.inspect(state.workspaceTrust))
end)

test(":Pi completes slash commands and follows commands_update", function()
  local dir = workspace({ text("reviewed") })
  vim.fn.mkdir(dir .. "/.pi/prompts", "p")
  vim.fn.writefile({ "---", "description: Review the changes", "---", "Review $1 now." }, dir .. "/.pi/prompts/review.md")
  local pi = start(dir)
  wait("the commands", function() return #pi.status().commands > 5 end)
  assert(vim.deep_equal(vim.fn.getcompletion("Pi /rev", "cmdline"), { "/review" }),
         vim.inspect(vim.fn.getcompletion("Pi /rev", "cmdline")))
  local all = vim.fn.getcompletion("Pi /", "cmdline")
  assert(vim.tbl_contains(all, "/compact") and vim.tbl_contains(all, "/model"), vim.inspect(all))
  assert(#vim.fn.getcompletion("Pi hello /rev", "cmdline") == 0, "only the first word")
  assert(#vim.fn.getcompletion("Pi /usr/bin", "cmdline") == 0, "a path is no command")
  local created = nil
  pi.request("session/new", {}, function(result) created = result end) -- commands_update goes to open sessions
  wait("a session", function() return created ~= nil end)
  vim.fn.writefile({ "Ship it." }, dir .. "/.pi/prompts/ship.md")
  wait("commands_update", function() return vim.tbl_contains(vim.fn.getcompletion("Pi /sh", "cmdline"), "/ship") end)
  vim.cmd("Pi /review speed")
  wait("the expanded prompt", function() return buffer_text():find("Review speed now.", 1, true) ~= nil end)
  wait("settled", function() return pi.status().settled >= 1 end)
  vim.cmd("Pi /thinking off")
  wait("the command's outcome", function() return buffer_text():find("[/thinking done]", 1, true) ~= nil end)
end)

test(":checkhealth pi", function()
  require("pi").config.cmd = { python, "-m", "pi_daemon" }
  vim.cmd("silent checkhealth pi")
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  assert(report:find("pi%-daemon 0%.1%.0") and report:find("OK"), report)
end)

test("a permission request waits for an async picker; the editor keeps working meanwhile", function()
  local dir = workspace({ call("write", { path = "made.txt", content = "by pi" }), text("written") })
  local answer, ticks = nil, 0
  replace(vim.ui, "select", function(items, opts, on_choice) -- like dressing / snacks: draws now, calls back later
    answer = function() on_choice(items[1]) end
  end)
  local timer = vim.uv.new_timer()
  timer:start(0, 20, vim.schedule_wrap(function() ticks = ticks + 1 end))
  -- a short daemon-side timeout: a handler that blocks until it expires loses the answer
  local pi = start(dir, true, { "--permission-timeout", "6" })
  configured("review", false) -- the picker, not the diff (tests/chat_review.lua)
  vim.cmd("Pi write a file")
  wait("the question", function() return answer ~= nil end)
  local before, during = ticks, nil
  pi.request("getState", {}, function(result) during = result end)
  wait("a reply while the question is open", function() return during ~= nil end)
  wait("the event loop to run while the picker is open", function() return ticks > before + 3 end)
  answer()
  wait("settled", function() return pi.status().settled >= 1 end)
  timer:stop() timer:close()
  -- the write went through the editor: a buffer holds it, unsaved (tests/editfs.lua)
  local made = vim.fn.bufnr(dir .. "/made.txt")
  assert(made > 0 and vim.api.nvim_buf_get_lines(made, 0, -1, false)[1] == "by pi", buffer_text())
end)

test("the live view equals the replayed one: text after thinking on its own line, arguments over lines", function()
  local dir = workspace({
    { content = { { type = "thinking", thinking = "quietly" }, { type = "text", text = "Writing it." },
                  { type = "toolCall", id = "c1", name = "write", arguments = { path = "a.txt", content = "one\ntwo" } } },
      stopReason = "toolUse" },
    call("bash", { command = "echo tool-done" }),
    { content = { { type = "thinking", thinking = "done?" }, { type = "text", text = "All done." } } },
  }, { chunkSize = 2, delayMs = 1 })
  local pi = start(dir, false, { "--allow", "write,bash" })
  vim.cmd("Pi think and write")
  wait("settled", function() return pi.status().settled >= 1 end)
  local live = buffer_lines()
  local expected = { "", "", "## you", "think and write", "", "## pi", "", "thinking {{{", "quietly", "}}}",
                     "Writing it.", "→ write a.txt", "    one", "    two",
                     "write output {{{", "Created a.txt (7 bytes)", "}}}",
                     "", "## pi", "", "→ bash", "  command: echo tool-done", "bash output {{{",
                     "tool-done", "", "}}}",
                     "", "## pi", "", "thinking {{{", "done?", "}}}", "All done." }
  assert(vim.deep_equal(live, expected), vim.inspect(live))
  -- the write went through the editor (a new buffer), saved before the command ran: said once,
  -- under the call, not again in its output
  local saved = { "  saved a.txt before running" }
  assert(vim.deep_equal(require("pi.chat").nested_lines("c_bash"), saved), vim.inspect(require("pi.chat").nested_lines("c_bash")))
  pi = start(dir)
  local _, stop = picking(function(items) return items[1] end)
  vim.cmd("PiSessions")
  wait("the replay", function() return buffer_text():find("All done.", 1, true) ~= nil end)
  stop()
  local ok = vim.wait(60000, function() return vim.deep_equal(buffer_lines(), live) end, 20)
  assert(ok, vim.inspect(buffer_lines()))
  assert(vim.deep_equal(require("pi.chat").nested_lines("c_bash"), saved), vim.inspect(require("pi.chat").nested_lines("c_bash")))
end)

test("streaming leaves the cursor and the fold level where the user put them", function()
  local dir = workspace({ call("bash", { command = "sleep 0.3; echo ran" }), text(string.rep("word ", 300)) },
                        { chunkSize = 2, delayMs = 3 })
  local pi = start(dir, false, { "--allow", "bash" })
  local win = chat_window()
  vim.wo[win].foldlevel = 99 -- the user opened every fold (zR)
  vim.cmd("Pi go")
  wait("streaming", function() return buffer_text():find("word word word", 1, true) ~= nil end)
  vim.api.nvim_win_set_cursor(win, { 2, 0 }) -- the user reads back
  local lines = #buffer_lines()
  wait("settled", function() return pi.status().settled >= 1 end)
  assert(#buffer_lines() == lines and buffer_lines()[#buffer_lines()]:find("word word", 1, true), "more text came")
  assert(vim.api.nvim_win_get_cursor(win)[1] == 2, vim.inspect(vim.api.nvim_win_get_cursor(win)))
  assert(vim.wo[win].foldlevel == 99, "foldlevel " .. vim.wo[win].foldlevel)
end)

test("the cursor at the end follows the stream", function()
  local dir = workspace({ text("first\nsecond\nthird") }, { chunkSize = 2, delayMs = 2 })
  local pi = start(dir)
  local win = chat_window()
  vim.cmd("Pi go")
  wait("settled", function() return pi.status().settled >= 1 end)
  assert(vim.api.nvim_win_get_cursor(win)[1] == #buffer_lines(), "at the last line")
end)

test("bash output streams into its fold; an error shows on the closed fold", function()
  local dir = workspace({ call("bash", { command = "echo first; sleep 1.5; echo second; exit 3" }), text("failed") })
  local pi = start(dir, false, { "--allow", "bash" })
  local win = chat_window()
  vim.wo[win].foldlevel = 0
  vim.cmd("Pi run it")
  wait("the first line", function() return vim.tbl_contains(buffer_lines(), "first") end)
  assert(not vim.tbl_contains(buffer_lines(), "second"), "only what has been printed so far")
  wait("settled", function() return pi.status().settled >= 1 end)
  local lines = buffer_lines()
  local header
  for i, l in ipairs(lines) do if l:find("^bash output") then header = i end end
  assert(lines[header] == "bash output (error) {{{", vim.inspect(lines))
  assert(lines[header + 1] == "first" and lines[header + 2] == "second", vim.inspect(lines))
  assert(vim.fn.foldclosed(header) == header or vim.api.nvim_win_call(win, function() return vim.fn.foldclosed(header) end) == header,
         "the output is folded")
  local shown = vim.api.nvim_win_call(win, function() return vim.fn.foldtextresult(header) end)
  assert(shown:find("(error)", 1, true), shown)
end)

test("setup(opts) configures and sets the documented keymaps", function()
  local pi = require("pi")
  local saved = pi.config
  replace(pi, "config", vim.deepcopy(saved)) -- put back at the test's end
  vim.g.mapleader = " "
  pi.setup({ model = "faux/script", keymaps = { prompt = "<leader>xp", model = false } })
  local prompt = vim.fn.maparg(" xp", "n", false, true)
  local chatmap = vim.fn.maparg(" pc", "n", false, true)
  assert(prompt.desc == "pi: prompt" and chatmap.desc == "pi: chat", vim.inspect({ prompt, chatmap }))
  assert(vim.fn.maparg(" pm", "n") == "", "a key set to false is not mapped")
  assert(pi.config.model == "faux/script" and pi.config.cmd[1] == saved.cmd[1], vim.inspect(pi.config))
  vim.cmd("silent checkhealth pi")
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  assert(report:find("setup() was called", 1, true), report)
  vim.cmd("bwipeout!")
  for _, key in ipairs({ " xp", " pc", " pa", " ps", " pn" }) do pcall(vim.keymap.del, "n", key) end
end)

test("a daemon that cannot start says why", function()
  local dir = workspace({ text("never") })
  local pi = require("pi")
  pi.stop()
  local shown, stop = capture()
  pi.start({ cmd = { python, "-m", "pi_daemon", "--no-such-flag" }, cwd = dir, env = { PI_DAEMON_HOME = dir } })
  wait("the exit", function() return pi.status().rpc == nil end)
  local said = function() return table.concat(shown, "\n"):find("unrecognized arguments: --no-such-flag", 1, true) end
  local ok = vim.wait(60000, said, 20)
  stop()
  assert(ok, table.concat(shown, "\n"))
end)

test("commands before the daemon runs give a clear message", function()
  local pi = require("pi")
  pi.stop()
  vim.wait(100)
  local shown = notifications(function()
    for _, command in ipairs({ "PiSteer hello", "PiFollowUp later", "PiAbort", "PiFork" }) do vim.cmd(command) end
  end)
  assert(#shown == 4, vim.inspect(shown))
  for _, message in ipairs(shown) do assert(message:find("not running", 1, true), message) end
end)

test("the input area under the chat sends what was typed; the statusline shows model, tokens and cost", function()
  local dir = workspace({ text("answered from the input area") })
  local pi = start(dir)
  local buf, win = pi.ask()
  local chat_win = vim.fn.win_findbuf(pi.status().buf)[1]
  assert(vim.api.nvim_win_get_config(win).relative == "", "a window, not a float")
  local chat_pos, input_pos = vim.api.nvim_win_get_position(chat_win), vim.api.nvim_win_get_position(win)
  assert(input_pos[1] > chat_pos[1] and input_pos[2] == chat_pos[2], vim.inspect({ chat_pos, input_pos }))
  assert(vim.api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true, maxwidth = 200 }).str:find("Ask pi", 1, true))
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "a question", "on two lines" })
  local keys = function(k) vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(k, true, false, true), "x", false) end
  keys("<Esc>") -- (the insert mode the input area started in begins here)
  keys("<CR>")
  wait("settled", function() return pi.status().settled >= 1 end)
  assert(vim.api.nvim_win_is_valid(win), "the input area stays")
  assert(vim.deep_equal(vim.api.nvim_buf_get_lines(buf, 0, -1, false), { "" }), "emptied once sent")
  assert(buffer_text():find("## you\na question\non two lines", 1, true), buffer_text())
  wait("the status", function() return pi.statusline():find("tok", 1, true) ~= nil end)
  assert(pi.statusline():match("^π faux/script · ask · %d+ tok · %$%d+%.%d%d%d%d$"), pi.statusline())
end)

test("the input area's history: <C-p> / <C-n> step through the prompts sent, back to the draft", function()
  local dir = workspace({ text("one"), text("two") })
  local pi = start(dir)
  local buf, win = pi.ask()
  local keys = function(k) vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(k, true, false, true), "x", false) end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "first prompt" })
  keys("<C-s>")
  wait("settled", function() return pi.status().settled >= 1 end)
  vim.cmd("Pi second prompt") -- :Pi with text goes into the same history
  wait("settled twice", function() return pi.status().settled >= 2 end)
  vim.api.nvim_set_current_win(win)
  keys("<Esc>")
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "a draft" })
  local text = function() return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") end
  keys("<C-p>")
  assert(text() == "second prompt", text())
  keys("<C-p>")
  assert(text() == "first prompt", text())
  keys("<C-n>")
  assert(text() == "second prompt", text())
  keys("<C-n>")
  assert(text() == "a draft", text())
end)

test("closing the chat's window closes its input area; :PiChat brings both back", function()
  local pi = require("pi")
  pi.open()
  local input = require("pi.input")
  local chat_win = vim.fn.win_findbuf(pi.status().buf)[1]
  assert(input.window(), "an input area under the chat")
  vim.api.nvim_win_close(chat_win, false)
  wait("the input area closed", function() return input.window() == nil end)
  vim.cmd("PiChat")
  assert(#vim.fn.win_findbuf(pi.status().buf) == 1 and input.window(), "both back")
end)

test(":PiModel marks the current model and says why others are unavailable", function()
  local dir = workspace({ text("hi") })
  local pi = start(dir)
  vim.cmd("Pi hi")
  wait("settled", function() return pi.status().settled >= 1 end)
  local asked, stop = picking(function() end) -- looked at, dismissed
  vim.cmd("PiModel")
  wait("the picker", function() return #asked == 1 end)
  stop()
  local prompt, labels = asked[1].prompt, asked[1].labels
  assert(prompt == "Model (now faux/script)", prompt)
  assert(vim.tbl_contains(labels, "● faux/script"), vim.inspect(labels))
  local reason = vim.tbl_filter(function(l) return l:find("^✗ openai — ") and l:find("OPENAI_API_KEY", 1, true) end, labels)
  assert(#reason == 1, vim.inspect(labels))
end)

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

-- A local OpenAI-compatible model server (tests/model_server.py; `refuse`: it answers 401), killed
-- at the test's end; returns it and its port.
local function model_server(refuse)
  local port
  local server = vim.system({ python, root .. "/tests/model_server.py", refuse and "--refuse" or nil },
                            { stdout = function(_, data) if data and not port then port = data:match("(%d+)") end end })
  table.insert(replaced, function() server:kill(9) end)
  wait("the model server's port", function() return port ~= nil end)
  return server, port
end

-- What the other test files get.
local t = { test = test, start = start, finally = finally, workspace = workspace, wait = wait, text = text, call = call,
            buffer_text = buffer_text, buffer_lines = buffer_lines, python = python, replace = replace, configured = configured,
            capture = capture, notifications = notifications, picking = picking, daemon_pids = daemon_pids,
            without_keyring = without_keyring, model_server = model_server }
for _, file in ipairs({ "editfs", "language", "chat_review", "session_features", "firstrun", "lifecycle",
                         "changed", "access", "ui", "processes", "compaction", "habits", "attach", "prestart" }) do
  dofile(root .. "/tests/" .. file .. ".lua")(t)
end

require("pi").stop()
io.stdout:write(string.format("\n%d passed, %d failed\n", passed, failed))
vim.cmd(failed == 0 and "qa!" or "cquit 1")
