-- Headless tests of compaction in the chat (lua/pi/compaction.lua) against the real daemon with
-- a scripted model: a /compact (and its divider again after a reload), a compaction at the
-- threshold, one after an overflow, a refusal, an abort, and a context compacting cannot
-- shrink, said once; run by tests/run.lua.
return function(t)
  local test, start, workspace, wait, text = t.test, t.start, t.workspace, t.wait, t.text
  local buffer_lines, buffer_text = t.buffer_lines, t.buffer_text

  local function row_of(pattern)
    for i, l in ipairs(buffer_lines()) do if l:find(pattern) then return i end end
  end

  -- The lines from the one matching `pattern` on, `count` of them.
  local function lines_at(pattern, count)
    local row = row_of(pattern)
    assert(row, "no line matches " .. pattern .. ":\n" .. buffer_text())
    return vim.list_slice(buffer_lines(), row, row + count - 1), row
  end

  local function ask(pi, prompt)
    local settled = pi.status().settled
    pi.prompt(prompt)
    wait("settled", function() return pi.status().settled > settled end)
  end

  -- what the chat shows for compaction_start
  local function compacting(why) return "── compacting: summarising the older conversation (" .. why .. ")" end

  -- The chat's last line at each compaction_end, before it is drawn: what was shown while it ran.
  local function while_compacting()
    local during = {}
    local render = require("pi.render")
    local ended = render.handlers.compaction_end
    t.replace(render.handlers, "compaction_end", function(...)
      table.insert(during, buffer_lines()[#buffer_lines()])
      ended(...)
    end)
    return during
  end

  local DIVIDER = "^── conversation compacted: ~[%d.]+k? → [%d.]+k? tokens ──$"

  test("/compact: a spinning line says why while it runs, then a divider with the sizes and the summary folded; again after a reload", function()
    local summary = "The user asked why the module is slow; it reads every file twice."
    local dir = workspace({ text("first answer"), text("second answer"), text(summary) }, { chunkSize = 1, delayMs = 25 })
    local pi = start(dir)
    ask(pi, "first question " .. string.rep("why is the module slow? ", 200))
    ask(pi, "second question")
    local shown = t.capture()
    vim.cmd("Pi /compact")
    wait("the compacting line", function()
      return vim.tbl_contains(buffer_lines(), compacting("you asked"))
    end)
    local compaction = require("pi.compaction")
    local frame = compaction.running()
    assert(frame, "a spinner while the summary is written")
    wait("the spinner turning", function() return compaction.running() ~= nil and compaction.running() ~= frame end)
    wait("the divider", function() return row_of(DIVIDER) ~= nil end)
    local lines, row = lines_at(DIVIDER, 4)
    assert(vim.deep_equal(vim.list_slice(lines, 2), { "summary {{{", summary, "}}}" }), vim.inspect(lines))
    assert(row + 3 == #buffer_lines(), "at the chat's end, where the compacting line was:\n" .. buffer_text())
    assert(not row_of("compacting: summarising") and not compaction.running(), buffer_text())
    assert(require("pi.chat").highlights()[row] == "PiCompaction", vim.inspect(require("pi.chat").highlights()))
    local win = vim.fn.win_findbuf(pi.status().buf)[1]
    assert(vim.api.nvim_win_call(win, function() return vim.fn.foldclosed(row + 1) end) == row + 1, "the summary is folded")
    assert(#shown == 0, vim.inspect(shown))
    -- the replayed session starts its context with the compaction
    pi = start(dir)
    local _, stop = t.picking(function(items) return items[1] end)
    vim.cmd("PiSessions")
    wait("the replay", function() return buffer_text():find("second answer", 1, true) ~= nil end)
    stop()
    lines = lines_at("^── conversation compacted", 4)
    assert(lines[1]:match("^── conversation compacted: was ~[%d.]+k? tokens ──$"), vim.inspect(lines))
    assert(vim.deep_equal(vim.list_slice(lines, 2), { "summary {{{", summary, "}}}" }), vim.inspect(lines))
    assert(not buffer_text():find("first answer", 1, true), "the summarised part is not in the context:\n" .. buffer_text())
  end)

  test("a compaction at the threshold says the context was nearly full, then shows the divider", function()
    -- a window each question fills to more than a third, whatever the tools' schemas take (up to
    -- ~17k tokens): the second one crosses the threshold (the window less 16,384 tokens)
    local dir = workspace({ text("first answer"), text("the user pasted a long log"), text("second answer") },
                          { contextWindow = 50000 })
    local pi = start(dir)
    local during = while_compacting()
    ask(pi, "first question " .. string.rep("a long log line, ", 4500))
    ask(pi, "second question " .. string.rep("another log line, ", 4500))
    local lines = lines_at(DIVIDER, 4)
    assert(vim.deep_equal(vim.list_slice(lines, 2), { "summary {{{", "the user pasted a long log", "}}}" }),
           vim.inspect(lines))
    assert(buffer_lines()[#buffer_lines()] == "second answer", buffer_text())
    assert(vim.deep_equal(during, { compacting("the context was nearly full") }), vim.inspect(during))
  end)

  test("a request that overflowed the window: compacted, said why, and the request sent again", function()
    local dir = workspace({ text("first answer " .. string.rep("it reads every file twice. ", 40)),
                            { content = {}, stopReason = "error", errorMessage = "prompt is too long: 140000 tokens > 128000 maximum" },
                            text("the module reads every file twice"), text("second answer") })
    local pi = start(dir)
    local during = while_compacting()
    ask(pi, "first question")
    ask(pi, "second question")
    assert(vim.deep_equal(during, { compacting("the context overflowed the model's window") }), vim.inspect(during))
    local lines = lines_at("^── conversation compacted", 6)
    assert(lines[1]:match("^── conversation compacted: ~[%d.]+k? → [%d.]+k? tokens; the request is sent again ──$"),
           vim.inspect(lines))
    assert(vim.deep_equal(vim.list_slice(lines, 2), { "summary {{{", "the module reads every file twice", "}}}", "", "## pi" }),
           vim.inspect(lines))
    assert(buffer_lines()[#buffer_lines()] == "second answer", buffer_text())
    assert(buffer_text():find("[error: prompt is too long", 1, true), buffer_text())
  end)

  test("a compaction the daemon refuses is a warning with its reason, in the chat and from /compact", function()
    local long_summary = string.rep("everything the user said, at length. ", 400)
    local dir = workspace({ text("first answer"), text("second answer"), text(long_summary) })
    local pi = start(dir)
    ask(pi, "first question " .. string.rep("why? ", 100))
    ask(pi, "second question")
    local shown = t.capture()
    vim.cmd("Pi /compact")
    wait("the warning", function() return row_of("^⚠ not compacted: ") ~= nil end)
    local row = row_of("^⚠ not compacted: ")
    local line = buffer_lines()[row]
    assert(line:find("⚠ not compacted: the compaction would not make the context smaller: ", 1, true)
           and line:find("the context is unchanged", 1, true), line)
    assert(row == #buffer_lines() and not row_of("compacting: summarising"), buffer_text())
    assert(require("pi.chat").highlights()[row] == "PiWarning", vim.inspect(require("pi.chat").highlights()))
    wait("the reply's error", function() return #shown > 0 end)
    assert(shown[1]:find("^pi: .*the compaction would not make the context smaller: ") and #shown == 1, vim.inspect(shown))
  end)

  test(":PiAbort while compacting at the threshold stops it; the chat says the conversation is as it was", function()
    local dir = workspace({ text("first answer"), text(string.rep("a slow summary. ", 40)), text("second answer") },
                          { contextWindow = 50000, chunkSize = 1, delayMs = 30 })
    local pi = start(dir)
    ask(pi, "first question " .. string.rep("a long log line, ", 4500))
    pi.prompt("second question " .. string.rep("another log line, ", 4500))
    wait("the compacting line", function()
      return vim.tbl_contains(buffer_lines(), compacting("the context was nearly full"))
    end)
    vim.cmd("PiAbort")
    wait("the run's end", function() return pi.status().settled == 2 end)
    local lines = lines_at("^⚠ compaction stopped", 1)
    assert(lines[1] == "⚠ compaction stopped; the conversation is as it was", vim.inspect(lines))
    assert(not row_of("compacting: summarising") and not row_of("^── conversation compacted")
           and not require("pi.compaction").running(), buffer_text())
  end)

  test("a context compacting cannot shrink is said once, not at every request", function()
    -- the tools' schemas alone fill this window
    local dir = workspace({ text("first answer"), text("second answer") }, { contextWindow = 1000 })
    local pi = start(dir)
    ask(pi, "first question")
    ask(pi, "second question")
    local warnings = vim.tbl_filter(function(l) return l:find("^⚠ not compacted: cannot compact: ") end, buffer_lines())
    assert(#warnings == 1, buffer_text())
    assert(warnings[1]:find("a model with a larger context window (or fewer tools) is needed", 1, true), warnings[1])
  end)
end
