-- `g?` in the chat: the keys of the chat, its input area and the global mappings, in a float
-- closed with q, <Esc> or g? (the whole manual: :help pi).
local M = {}

-- The lines shown, from the configuration in force (a key set to false is left out).
function M.lines()
  local pi = require("pi")
  local input = require("pi.input")
  local out = { "pi.nvim keys (:help pi-keys)", "", "In the chat:",
                "  g?          this list", "  zo / zc     open / close a fold (thinking, a tool's output)",
                "  zR / zM     open / close every fold", "", "In the input area under it:" }
  local c = input.config
  local function key(lhs, what) if lhs then table.insert(out, ("  %-11s %s"):format(lhs, what)) end end
  key(c.send, "send (normal mode); while pi works: steer or follow up")
  key(c.send_insert, "send (insert and normal mode)")
  key(c.previous, "the previous prompt sent")
  key(c.next, "the next prompt sent, back to the draft")
  key("<C-x><C-o>", "complete @file, #buffer, /command (insert mode)")
  local keymaps = pi.config.keymaps
  if keymaps then
    table.insert(out, "")
    table.insert(out, "Everywhere (setup's keymaps):")
    for _, name in ipairs({ "prompt", "chat", "abort", "sessions", "model", "new" }) do key(keymaps[name], name) end
  end
  local procs = require("pi.processes").KEYS
  vim.list_extend(out, { "", "In :PiProcesses (the agent's background processes):" })
  key(procs.stop, "stop the process under the cursor (its output window: that one)")
  key(procs.output, "open its output, followed while it runs")
  key(procs.refresh, "list again")
  key(procs.close, "close the list or the output")
  vim.list_extend(out, { "", "A review of a write or an edit lists its own keys with g?.",
                         "Commands: :Pi, :PiChat, :PiAbort, :PiSessions, :PiMode, … (:help pi-commands)" })
  return out
end

-- Shows the list in a float over the current window; returns its buffer and window.
function M.show()
  local lines = M.lines()
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  local width = 0
  for _, l in ipairs(lines) do width = math.max(width, vim.fn.strdisplaywidth(l)) end
  width = math.min(width + 2, vim.o.columns - 4)
  local win = vim.api.nvim_open_win(buf, true, { relative = "editor", style = "minimal", border = "rounded",
                                                 title = " pi: keys ", width = width,
                                                 height = math.min(#lines, vim.o.lines - 4),
                                                 row = 2, col = math.max(0, math.floor((vim.o.columns - width) / 2)) })
  for _, lhs in ipairs({ "q", "<Esc>", "g?" }) do
    vim.keymap.set("n", lhs, function() pcall(vim.api.nvim_win_close, win, true) end, { buffer = buf })
  end
  return buf, win
end

return M
