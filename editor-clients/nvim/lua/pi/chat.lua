-- The chat buffer of pi.nvim: appends streamed text, keeps each tool's output in a folded
-- region that grows while the tool runs, and renders stored messages exactly as the live
-- stream renders them, so a replayed session reads the same as it did live.
-- Windows whose cursor sits on the last line follow the text; the others stay where the user is.
-- Everything writes to the chat buffer, or to another one (a subagent's) inside M.with(buf, fn).
local M = {}

local ns = vim.api.nvim_create_namespace("pi_chat")
local nested_ns = vim.api.nvim_create_namespace("pi_nested")
local diff_ns = vim.api.nvim_create_namespace("pi_chat_diff")
local calls = require("pi.calls")
local buf_ = nil

-- The plugin's highlight groups (doc/pi.txt, pi-highlights), links a colour scheme may override.
M.HIGHLIGHTS = {
  PiCompaction = "Special", -- "compacting…" and the divider of a compaction (lua/pi/compaction.lua)
  PiWarning = "DiagnosticWarn", -- a warning in the chat: a compaction that did not happen, and why
  PiMarker = "Comment", -- the virtual lines at a turn's end: "—", crash and cut-off markers
  PiWorking = "DiagnosticWarn", -- "pi is working" in the input area's winbar
  PiEdited = "DiagnosticInfo", -- "✎ bash, edited by you; what ran:" above a call's output
  PiPlanTitle = "Title", -- the plan above the input area: its title ("Plan 2/5")
  PiPlanDone = "Comment", -- a completed step (✓)
  PiPlanActive = "DiagnosticWarn", -- the step in progress (▶)
  PiPlanPending = "Normal", -- a step to do (○)
}
local function define_highlights()
  for name, link in pairs(M.HIGHLIGHTS) do vim.api.nvim_set_hl(0, name, { link = link, default = true }) end
end
define_highlights()
vim.api.nvim_create_autocmd("ColorScheme", { group = vim.api.nvim_create_augroup("pi_highlights", {}),
                                             callback = define_highlights })
local target = nil -- the buffer written to instead of the chat's, inside M.with
-- per buffer: tools (toolCallId -> { mark, count, name }: the live output regions) and calls
-- (toolCallId -> the extmark on a call's last line, where what it started is drawn: M.nested)
local per_buf = {}

local function of(buf)
  per_buf[buf] = per_buf[buf] or { tools = {}, calls = {} }
  return per_buf[buf]
end

-- Runs fn with every write going to `buf` (a subagent's own view) instead of the chat buffer.
function M.with(buf, fn)
  local saved = target
  target = buf
  local ok, err = pcall(fn)
  target = saved
  if not ok then error(err, 0) end
end

function M.buffer()
  if target then return target end
  if buf_ and vim.api.nvim_buf_is_valid(buf_) then return buf_ end
  local buf = vim.api.nvim_create_buf(true, true)
  vim.api.nvim_buf_set_name(buf, "pi://chat")
  vim.bo[buf].filetype = "markdown"
  vim.bo[buf].buftype = "nofile"
  vim.keymap.set("n", "g?", function() require("pi.keyhelp").show() end, { buffer = buf, desc = "pi: the keys" })
  buf_ = buf
  return buf
end

-- The chat buffer if there is one (nil before the first use).
function M.current()
  return buf_ and vim.api.nvim_buf_is_valid(buf_) and buf_ or nil
end

function M.clear()
  if not target then require("pi.plan").clear() end -- the plan was the session's shown before
  per_buf[M.buffer()] = nil
  vim.api.nvim_buf_clear_namespace(M.buffer(), ns, 0, -1)
  vim.api.nvim_buf_clear_namespace(M.buffer(), nested_ns, 0, -1)
  vim.api.nvim_buf_clear_namespace(M.buffer(), diff_ns, 0, -1)
  vim.api.nvim_buf_set_lines(M.buffer(), 0, -1, false, {})
end

-- The last line at the window's bottom with the virtual lines under it (the turn's end, a crash
-- or cut-off marker) in view: moving the cursor there alone leaves those below the screen, and
-- a buffer that got shorter leaves `~` rows under its end.
local function to_bottom(win)
  vim.api.nvim_win_call(win, function() vim.cmd("normal! zb") end)
end

-- Runs `change` on the buffer; windows that were at the end before it are moved to the new end.
local function changing(change)
  local buf = M.buffer()
  local last = vim.api.nvim_buf_line_count(buf)
  local following = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= last then table.insert(following, win) end
  end
  change(buf)
  local count = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(following) do
    vim.api.nvim_win_set_cursor(win, { count, 0 })
    to_bottom(win)
  end
end

-- Appends text at the end of the buffer; "\n" starts new lines. Cheap for every delta.
function M.append(text)
  changing(function(buf)
    local last = vim.api.nvim_buf_line_count(buf) - 1
    local current = vim.api.nvim_buf_get_lines(buf, last, last + 1, false)[1] or ""
    vim.api.nvim_buf_set_text(buf, last, #current, last, #current, vim.split(text, "\n", { plain = true }))
  end)
end

-- A new line at the end; `group`: its highlight (a line_hl_group, listed by M.highlights).
function M.line(text, group)
  M.append("\n" .. text)
  if group then
    local buf = M.buffer()
    vim.api.nvim_buf_set_extmark(buf, diff_ns, vim.api.nvim_buf_line_count(buf) - 1, 0, { line_hl_group = group })
  end
end

local split = calls.split

-- A tool call as lua/pi/calls.lua reads it; diff lines highlighted.
function M.tool_call(call)
  local buf = M.buffer()
  for _, l in ipairs(calls.lines(call)) do
    M.line(l[1])
    if l[2] then
      vim.api.nvim_buf_set_extmark(buf, diff_ns, vim.api.nvim_buf_line_count(buf) - 1, 0, { line_hl_group = l[2] })
    end
  end
  if call.id then
    of(buf).calls[call.id] = vim.api.nvim_buf_set_extmark(buf, nested_ns, vim.api.nvim_buf_line_count(buf) - 1, 0, {})
  end
end

-- The highlight group of each highlighted line: { [row (1-based)] = group } (for tests).
function M.highlights()
  local out = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(M.buffer(), diff_ns, 0, -1, { details = true })) do
    out[mark[2] + 1] = mark[4].line_hl_group
  end
  return out
end

-- Virtual lines drawn under a tool call's arguments (what the call started: a subagent's
-- progress), outside every fold and not part of the text; replaced at each call, {} removes
-- them. A call not shown in the buffer (nil returned) draws nothing.
function M.nested(id, lines)
  local buf = M.buffer()
  local mark = of(buf).calls[id]
  if not mark then return nil end
  local row = vim.api.nvim_buf_get_extmark_by_id(buf, nested_ns, mark, {})[1]
  if not row then return nil end
  local virt = {}
  for _, l in ipairs(lines) do table.insert(virt, { { l[1], l[2] or "Comment" } }) end
  vim.api.nvim_buf_set_extmark(buf, nested_ns, row, 0, { id = mark, virt_lines = #virt > 0 and virt or nil })
  return true
end

-- The nested lines under the call `id` (for tests).
function M.nested_lines(id)
  local buf = M.buffer()
  local mark = of(buf).calls[id]
  if not mark then return {} end
  local details = vim.api.nvim_buf_get_extmark_by_id(buf, nested_ns, mark, { details = true })[3] or {}
  return vim.tbl_map(function(l) return l[1][1] end, details.virt_lines or {})
end

-- The fold's first line is what a closed fold shows, so the error tag goes there.
local function header(name, is_error)
  return name .. " output" .. (is_error and " (error)" or "") .. " {{{"
end

-- A finished tool output (a stored toolResult message).
function M.tool_output(name, text, is_error)
  M.line(header(name, is_error))
  for _, l in ipairs(split(text)) do M.line(l) end
  M.line("}}}")
end

-- A running tool: an empty fold whose inside is replaced as partial results arrive.
function M.tool_start(id, name)
  M.line(header(name))
  local buf = M.buffer()
  local row = vim.api.nvim_buf_line_count(buf) - 1
  of(buf).tools[id] = { mark = vim.api.nvim_buf_set_extmark(buf, ns, row, 0, {}), count = 0, name = name }
  M.line("}}}")
end

-- The call `call` ({name, arguments}) as the user edited it before it ran, drawn above its
-- running output: what ran.
function M.tool_edited(id, call)
  if not of(M.buffer()).tools[id] then M.tool_start(id, call.name) end
  local tool = of(M.buffer()).tools[id]
  local lines = calls.lines(call)
  lines[1] = { "✎ " .. call.name .. ", edited by you; what ran:", "PiEdited" }
  changing(function(buf)
    local row = vim.api.nvim_buf_get_extmark_by_id(buf, ns, tool.mark, {})[1]
    if not row then return end
    vim.api.nvim_buf_set_lines(buf, row, row, false, vim.tbl_map(function(l) return l[1] end, lines))
    vim.api.nvim_buf_set_extmark(buf, diff_ns, row, 0, { line_hl_group = "PiEdited" })
  end)
end

function M.tool_update(id, text)
  local tool = of(M.buffer()).tools[id]
  if not tool then return end
  changing(function(buf)
    local row = vim.api.nvim_buf_get_extmark_by_id(buf, ns, tool.mark, {})[1]
    if not row then return end
    local lines = split(text)
    vim.api.nvim_buf_set_lines(buf, row + 1, row + 1 + tool.count, false, lines)
    tool.count = #lines
  end)
end

function M.tool_end(id, text, is_error)
  local tool = of(M.buffer()).tools[id]
  if not tool then return end
  M.tool_update(id, text)
  if is_error then
    local buf = M.buffer()
    local row = vim.api.nvim_buf_get_extmark_by_id(buf, ns, tool.mark, {})[1]
    if row then vim.api.nvim_buf_set_lines(buf, row, row + 1, false, { header(tool.name, true) }) end
  end
  vim.api.nvim_buf_del_extmark(M.buffer(), ns, tool.mark)
  of(M.buffer()).tools[id] = nil
end

-- A line of virtual text under the current end (turn separators): not part of the conversation.
-- Windows at the end keep it, the new line included, in view.
function M.mark_end(text)
  changing(function(buf)
    vim.api.nvim_buf_set_extmark(buf, ns, vim.api.nvim_buf_line_count(buf) - 1, 0,
                                 { virt_lines = { { { text, "PiMarker" } } } })
  end)
end

-- The virtual separators, top to bottom (for tests and the statusline).
function M.marks()
  local out = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(M.buffer(), ns, 0, -1, { details = true })) do
    if mark[4].virt_lines then table.insert(out, mark[4].virt_lines[1][1][1]) end
  end
  return out
end

return M
