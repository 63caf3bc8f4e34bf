-- How a compaction reads in the chat. While the daemon summarises the older conversation, a
-- line says so and why, with a spinner; when it ends, that line becomes a divider with the
-- context's size before and after and the summary in a closed fold, or a warning with the
-- daemon's reason when it did not compact (nothing is ever left unsaid). A replayed session's
-- context starts with its latest compaction: the same divider and fold, with the size before.
local chat = require("pi.chat")
local M = {}

M.REASONS = { manual = "you asked", threshold = "the context was nearly full",
              overflow = "the context overflowed the model's window" }
local FRAMES = { "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏" }
local spinner_ns = vim.api.nvim_create_namespace("pi_compaction")
local running = {} -- buffer -> { mark, timer }: the compaction under way drawn there

-- 1910 -> "1.9k", 812 -> "812"
function M.tokens(n)
  n = tonumber(n) or 0
  return n < 1000 and tostring(n) or ("%.1fk"):format(n / 1000)
end

local function stop(buf)
  local job = running[buf]
  running[buf] = nil
  if job then job.timer:stop() job.timer:close() end
  return job
end

local function divider(text) return "── " .. text .. " ──" end

local function summary_fold(summary)
  local lines = { "summary {{{" }
  vim.list_extend(lines, vim.split(summary or "", "\n", { plain = true }))
  table.insert(lines, "}}}")
  return lines
end

-- Draws `lines` at the chat's end, the first one highlighted with `group`.
local function draw(lines, group)
  chat.line(lines[1], group)
  for i = 2, #lines do chat.line(lines[i]) end
end

---@param event pi.CompactionStart
function M.started(event)
  local buf = chat.buffer()
  local earlier = stop(buf) -- its compaction_end never came
  if earlier then vim.api.nvim_buf_del_extmark(buf, spinner_ns, earlier.mark) end
  local why = M.REASONS[event.reason] or event.reason
  chat.line("")
  draw({ "── compacting: summarising the older conversation (" .. why .. ")" }, "PiCompaction")
  local row = vim.api.nvim_buf_line_count(buf) - 1
  local mark = vim.api.nvim_buf_set_extmark(buf, spinner_ns, row, 0,
                                            { virt_text = { { FRAMES[1], "PiCompaction" } }, invalidate = true })
  local timer, frame = vim.uv.new_timer(), 1
  running[buf] = { mark = mark, timer = timer }
  timer:start(100, 100, vim.schedule_wrap(function()
    if running[buf] == nil or running[buf].timer ~= timer then return end
    local place = vim.api.nvim_buf_is_valid(buf)
      and vim.api.nvim_buf_get_extmark_by_id(buf, spinner_ns, mark, { details = true })
    if not place or not place[1] or place[3].invalid then stop(buf) return end
    if not require("pi").status().rpc then -- the daemon stopped: no compaction_end will come
      stop(buf)
      vim.api.nvim_buf_del_extmark(buf, spinner_ns, mark)
      chat.with(buf, function() draw({ "⚠ compaction interrupted: the daemon stopped" }, "PiWarning") end)
      return
    end
    frame = frame % #FRAMES + 1
    vim.api.nvim_buf_set_extmark(buf, spinner_ns, place[1], 0,
                                 { id = mark, virt_text = { { FRAMES[frame], "PiCompaction" } }, invalidate = true })
  end))
end

-- The lines a compaction_end reads as, and the first one's highlight group.
---@param event pi.CompactionEnd
function M.outcome(event)
  local result = event.result ~= vim.NIL and event.result or nil
  if result then
    local after = result.estimatedTokensAfter ~= vim.NIL and result.estimatedTokensAfter
    local size = "~" .. M.tokens(result.tokensBefore) .. (after and (" → " .. M.tokens(after)) or "") .. " tokens"
    local title = "conversation compacted: " .. size .. (event.willRetry and "; the request is sent again" or "")
    local lines = { divider(title) }
    vim.list_extend(lines, summary_fold(result.summary))
    return lines, "PiCompaction"
  end
  if event.aborted then return { "⚠ compaction stopped; the conversation is as it was" }, "PiWarning" end
  local why = event.errorMessage ~= vim.NIL and event.errorMessage or "the daemon gave no reason"
  return { "⚠ not compacted: " .. why }, "PiWarning"
end

-- The "compacting" line is replaced by the outcome where it stands: at the chat's end (as it
-- is, since nothing else is drawn meanwhile) through chat.line, which keeps following windows
-- at the end.
---@param event pi.CompactionEnd
function M.ended(event)
  local buf = chat.buffer()
  local job = stop(buf)
  local lines, group = M.outcome(event)
  local place = job and vim.api.nvim_buf_get_extmark_by_id(buf, spinner_ns, job.mark, { details = true })
  if job then vim.api.nvim_buf_del_extmark(buf, spinner_ns, job.mark) end
  if place and place[1] and not place[3].invalid then
    local row = place[1]
    if row == vim.api.nvim_buf_line_count(buf) - 1 then
      vim.api.nvim_buf_set_lines(buf, row, row + 1, false, {})
    else
      vim.api.nvim_buf_set_lines(buf, row, row + 1, false, lines)
      return
    end
  end
  draw(lines, group)
end

-- A stored compaction (the first message of a replayed context).
---@param message pi.CompactionSummaryMessage
function M.replayed(message)
  local lines = { divider("conversation compacted: was ~" .. M.tokens(message.tokensBefore) .. " tokens") }
  vim.list_extend(lines, summary_fold(message.summary))
  chat.line("")
  draw(lines, "PiCompaction")
end

-- The spinner of the compaction under way in the chat, nil when none is (for tests).
function M.running()
  local buf = chat.buffer()
  local job = running[buf]
  if not job then return nil end
  local details = vim.api.nvim_buf_get_extmark_by_id(buf, spinner_ns, job.mark, { details = true })[3]
  return details and details.virt_text and details.virt_text[1][1]
end

return M
