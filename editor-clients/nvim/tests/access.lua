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
    wait("both queued", function() return #input.queue_lines() == 2 end, 5000)
    local said, stop = t.capture()
    vim.cmd("PiAbort")
    wait("said", function() return #said > 0 end)
    stop()
    assert(said[1] == "pi: stopped; 2 queued message(s) are back in the input area, not sent", vim.inspect(said))
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
end
