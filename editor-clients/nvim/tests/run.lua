-- Headless tests of pi.nvim against the real daemon:
--   PI_DAEMON_PYTHON=... nvim --headless -u NONE -l tests/run.lua
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.runtimepath:prepend(root)
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

local function wait(what, predicate, ms)
  if not vim.wait(ms or 15000, predicate, 20) then error("timed out waiting for " .. what .. "\n" .. buffer_text()) end
end

local function workspace(replies, opts)
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  local script = vim.tbl_extend("force", { modelId = "script", replies = replies }, opts or {})
  vim.fn.writefile({ vim.json.encode(script) }, dir .. "/script.json")
  return dir
end

local function start(dir, permissions, args)
  local pi = require("pi")
  pi.stop()
  vim.wait(200)
  local env = { PI_DAEMON_HOME = dir, OPENAI_API_KEY = "", ANTHROPIC_API_KEY = "", OPENROUTER_API_KEY = "" }
  local cmd = vim.list_extend({ python, "-m", "pi_daemon", "--faux-script", dir .. "/script.json", "--model", "faux/script" },
                              args or {})
  pi.start({ cmd = cmd,
             cwd = dir, env = env, permissions = permissions or false })
  local buf = pi.status().buf
  if buf then vim.api.nvim_buf_set_lines(buf, 0, -1, false, {}) end
  return pi
end

local function text(t) return { content = { { type = "text", text = t } } } end
local function call(name, args) return { content = { { type = "toolCall", id = "c_" .. name, name = name, arguments = args } },
                                         stopReason = "toolUse" } end

local function test(name, fn)
  local ok, err = pcall(fn)
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
  wait("the queue shown", function()
    local marks = vim.api.nvim_buf_get_extmarks(pi.status().buf, vim.api.nvim_create_namespace("pi_queue"), 0, -1,
                                                { details = true })
    return #marks == 1 and marks[1][4].virt_lines[1][1][1] == "  queued steer: change course please"
  end, 5000)
  wait("the steered answer", function() return buffer_text():find("changed course\n", 1, true) ~= nil end)
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
  wait("aborted", function() return buffer_text():find("— aborted —", 1, true) ~= nil end)
  assert(buffer_text():find("[aborted: Request was aborted]", 1, true), buffer_text())
end)

test("permission request answered with vim.ui.select", function()
  local dir = workspace({ call("write", { path = "made.txt", content = "by pi" }), text("written") })
  local asked = {}
  local original = vim.ui.select
  local shown
  vim.ui.select = function(items, opts, on_choice)
    table.insert(asked, opts.prompt)
    shown = vim.tbl_map(opts.format_item, items)
    on_choice(items[1])
  end
  local pi = start(dir, true)
  vim.cmd("Pi write a file")
  wait("settled", function() return pi.status().settled >= 1 end)
  vim.ui.select = original
  assert(asked[1] == "Write made.txt", vim.inspect(asked))
  assert(vim.deep_equal(shown, { "Allow once", "Allow this session: write calls on `made.txt`",
                                 "Always allow: write calls on `made.txt`", "Reject",
                                 "Always reject: write calls on `made.txt`" }), vim.inspect(shown))
  assert(vim.fn.readfile(dir .. "/made.txt")[1] == "by pi")
end)

test("resume a session from :PiSessions", function()
  local dir = workspace({ text("first answer"), text("second") })
  local pi = start(dir)
  vim.cmd("Pi remember this question")
  wait("settled", function() return pi.status().settled >= 1 end)
  pi = start(dir) -- a new daemon, an empty buffer
  local original = vim.ui.select
  vim.ui.select = function(items, opts, on_choice) on_choice(items[1]) end
  vim.cmd("PiSessions")
  wait("the replayed conversation", function() return buffer_text():find("first answer", 1, true) ~= nil end)
  vim.ui.select = original
  assert(buffer_text():find("## you\nremember this question", 1, true), buffer_text())
end)

test("workspace trust answered with vim.ui.select, without blocking", function()
  local dir = workspace({ text("hi") })
  vim.fn.mkdir(dir .. "/.pi", "p")
  vim.fn.writefile({ vim.json.encode({ workspace = { extraRoots = { "/" } } }) }, dir .. "/.pi/settings.json")
  local asked, answer = {}, nil
  local original = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    table.insert(asked, opts.prompt)
    answer = function() on_choice(items[1]) end -- answered later, as a user would
  end
  local pi = start(dir, false)
  wait("the question", function() return answer ~= nil end)
  local during = nil
  pi.request("session/new", {}, function(result) during = result end) -- the daemon keeps serving meanwhile
  wait("a reply while the question is open", function() return during ~= nil end)
  answer()
  wait("trust.json", function() return vim.fn.filereadable(dir .. "/trust.json") == 1 end)
  vim.ui.select = original
  assert(asked[1]:find("workspace.extraRoots", 1, true), vim.inspect(asked))
  local state = nil
  pi.request("getState", {}, function(result) state = result end)
  wait("state", function() return state ~= nil end)
  assert(state.workspaceTrust.trusted == true, vim.inspect(state.workspaceTrust))
end)

test(":checkhealth pi", function()
  require("pi").config.cmd = { python, "-m", "pi_daemon" }
  vim.cmd("silent checkhealth pi")
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  assert(report:find("pi%-daemon 0%.1%.0") and report:find("OK"), report)
end)

require("pi").stop()
io.stdout:write(string.format("\n%d passed, %d failed\n", passed, failed))
vim.cmd(failed == 0 and "qa!" or "cquit 1")
