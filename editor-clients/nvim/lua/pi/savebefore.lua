-- Saving the agent's edits before its commands run: the daemon's `fs/save` request names the
-- files it changed through the editor (unsaved buffers), so that a test the agent runs reads
-- what it wrote. Declared in initialize unless setup's `save_before_commands = false`.
-- The chat says under the bash call which files were saved (lua/pi/render.lua asks M.shown).
local chat = require("pi.chat")
local editfs = require("pi.editfs")
local M = {}

-- Writes exactly the buffers named that are open and modified; the undo history stays.
---@param params { sessionId: string, paths: string[] }
---@return { saved: string[], failed: { path: string, reason: string }[] }
function M.save(params)
  local saved, failed = {}, {}
  for _, path in ipairs(params.paths or {}) do
    local buf = editfs.buffer_of(path)
    if buf and vim.bo[buf].modified then
      -- write! : the buffer holds the agent's edit, which is what its command must read; a
      -- plain :write would stop at a question (the file changed on the disk) nobody answers
      local ok, err = pcall(vim.api.nvim_buf_call, buf, function() vim.cmd("silent keepalt write!") end)
      if ok and not vim.bo[buf].modified then table.insert(saved, path)
      else table.insert(failed, { path = path, reason = ok and "still modified after :write" or tostring(err) }) end
    end
  end
  return { saved = saved, failed = failed }
end

local function saved_files(result)
  local details = type(result) == "table" and result.details
  local files = type(details) == "table" and details.savedFiles
  return type(files) == "table" and #files > 0 and files or nil
end

-- The output of the call `id` as the chat shows it. When its result (a partial one, the final
-- one or a replayed toolResult message) says it saved files, that is said once under the call,
-- "saved a.py, b.py before running" (visible on the closed fold; the daemon repeats savedFiles
-- in every partial result), and the output's own "[saved before running: …]" line is left
-- out so as not to say it twice.
function M.shown(id, result, text)
  local files = saved_files(result)
  if not files then return text end
  if #chat.nested_lines(id) == 0 then
    chat.nested(id, { { "  saved " .. table.concat(files, ", ") .. " before running", "Comment" } })
  end
  local lines = vim.split(text, "\n", { plain = true })
  local note = "[saved before running: " .. table.concat(files, ", ") .. "]"
  for i = 1, math.min(#lines, 2) do -- after the "[output cut …]" line, if any
    if lines[i] == note then
      table.remove(lines, i)
      return table.concat(lines, "\n")
    end
  end
  return text
end

return M
