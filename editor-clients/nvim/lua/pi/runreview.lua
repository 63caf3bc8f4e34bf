-- Reviewing a run's changes: :PiDiff shows them (lua/pi/editfs.lua draws them), :PiAccept and
-- :PiRevert act on the hunk, file or run under the cursor. `pi` is require("pi").
local editfs = require("pi.editfs")
local M = {}

function M.diff(pi, run_id, callback)
  pi.request("changes/get", { runId = run_id ~= "" and run_id or nil }, function(result)
    local buf = editfs.show_changes(result, pi.status().workspace)
    if #vim.fn.win_findbuf(buf) == 0 then vim.cmd("split") vim.api.nvim_win_set_buf(0, buf) end
    if callback then callback(result) end
  end)
end

-- In the :PiDiff buffer the hunk under the cursor is the one drawn there; in a file's buffer it
-- is the hunk of the latest run whose lines hold the cursor.
function M.act(pi, method, scope)
  local state = pi.status()
  local buf, row = vim.api.nvim_get_current_buf(), vim.api.nvim_win_get_cursor(0)[1]
  local function act()
    local ok, files = pcall(editfs.choice, scope ~= "" and scope or "hunk", row, buf, state.workspace)
    if not ok then vim.notify(files, vim.log.levels.ERROR) return end
    pi.request(method, { runId = editfs.state().run, files = files }, function(result)
      for _, conflict in ipairs(result.conflicts or {}) do
        vim.notify(("pi: not reverted, %s: %s"):format(conflict.path, conflict.reason), vim.log.levels.WARN)
      end
      M.diff(pi, editfs.state().run)
    end)
  end
  if buf == editfs.state().buf then return act() end
  pi.request("changes/get", { runId = state.run }, function(result)
    editfs.keep(result)
    act()
  end)
end

return M
