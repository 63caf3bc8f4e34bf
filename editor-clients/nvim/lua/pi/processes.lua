-- Background processes: commands the agent started with `bash {background: true}` that keep
-- running after the call (a dev server it tests against). The daemon says when one starts and
-- ends (process_started / process_exited, from any of its sessions); :PiProcesses lists them
-- (command, running time, status or exit code) in a buffer where a key stops the one under the
-- cursor (process/kill) and another opens its output (process/output, read again while it
-- runs). Under a background bash call in the chat a virtual line says which process it started
-- and how it is doing.
local chat = require("pi.chat")
local M = { procs = {}, order = {}, calls = {} }

M.KEYS = { stop = "x", output = "<CR>", refresh = "r", close = "q" }
M.POLL_MS = 500 -- how often a running process's open output is read again
local ns = vim.api.nvim_create_namespace("pi_processes")
local view = { buf = nil, rows = {}, timer = nil } -- the list's buffer; rows: line -> process id
-- process id -> its output window's state: { buf, next (the offset to read from), empty (only
-- the placeholder shown), newline (the last line's newline not drawn yet), reading }
local outputs = {}

local function now_ms()
  local sec, usec = vim.uv.gettimeofday()
  return sec * 1000 + math.floor(usec / 1000)
end

-- "12 s", "3:07", "1:02:09"
function M.duration(ms)
  local s = math.max(0, math.floor(ms / 1000))
  if s < 60 then return s .. " s" end
  local m = math.floor(s / 60)
  if s < 3600 then return ("%d:%02d"):format(m, s % 60) end
  return ("%d:%02d:%02d"):format(math.floor(m / 60), m % 60, s % 60)
end

local function set(v) return v ~= nil and v ~= vim.NIL end

-- How long it ran (running: so far).
local function ran(p)
  return M.duration((set(p.endedAt) and p.endedAt or now_ms()) - p.startedAt)
end

-- The status as the list says it, and its highlight group.
function M.status(p)
  if p.status == "running" then
    if p.stopping then return "stopping", "DiagnosticWarn" end
    return "running", "DiagnosticOk"
  elseif p.status == "killed" then return "stopped", "DiagnosticWarn"
  elseif set(p.exitCode) and p.exitCode < 0 then return "signal " .. -p.exitCode, "DiagnosticError"
  elseif set(p.exitCode) then return "exited " .. p.exitCode, p.exitCode == 0 and "Comment" or "DiagnosticError" end
  return p.status, "Comment"
end

function M.running()
  local n = 0
  for _, p in pairs(M.procs) do if p.status == "running" then n = n + 1 end end
  return n
end

-- The chat's nested line under the call that started `id`.
local function call_line(id)
  local p = M.procs[id]
  if not p then return { ("  ⏵ in the background as %s (:PiProcesses)"):format(id), "Comment" } end
  if p.status == "running" then
    return { ("  ⏵ running in the background as %s (:PiProcesses)"):format(id), "DiagnosticOk" }
  end
  local status, hl = M.status(p)
  return { ("  ⏹ background process %s: %s after %s"):format(id, status, ran(p)), hl == "DiagnosticOk" and "Comment" or hl }
end

local function draw_calls(id)
  for call, pid in pairs(M.calls) do
    if pid == id then chat.nested(call, { call_line(id) }) end
  end
end

-- A bash call's result (live or replayed): a background start names its process in `details`.
function M.noted(tool_call_id, details)
  if type(details) ~= "table" or type(details.processId) ~= "string" then return end
  M.calls[tool_call_id] = details.processId
  chat.nested(tool_call_id, { call_line(details.processId) })
end

local render_list

-- What the daemon says about a process (an event, process/list, process/kill). An answer tells the state
-- when its request was served, and an event written meanwhile can come before it: an end already known is
-- not undone by an older "running".
---@param info pi.ProcessInfo
function M.update(info)
  local known = M.procs[info.id]
  if known and known.status ~= "running" and info.status == "running" then return end
  if not known then table.insert(M.order, info.id) end
  -- process/kill answers before the process is gone: it stays "stopping" until it is
  local stopping = known and known.stopping and info.status == "running"
  M.procs[info.id] = vim.tbl_extend("force", info, { stopping = stopping or nil })
  draw_calls(info.id)
  render_list()
  vim.cmd("redrawstatus!")
end

---@param event pi.ProcessStarted|pi.ProcessExited
function M.event(event) M.update(event.process) end

-- A new daemon: its ids start again, so the output windows of the old one's go.
function M.reset()
  M.procs, M.order, M.calls = {}, {}, {}
  for _, out in pairs(outputs) do
    if vim.api.nvim_buf_is_valid(out.buf) then vim.api.nvim_buf_delete(out.buf, { force = true }) end
  end
  outputs = {}
  render_list()
end

-- The daemon ended, and its processes with it.
function M.daemon_exited()
  for _, p in pairs(M.procs) do
    if p.status == "running" then p.status, p.endedAt, p.stopping = "killed", now_ms(), nil end
  end
  render_list()
end

-- The list's lines: { text, { {col_start, col_end, hl} } } per process, in the order started.
function M.lines(session)
  if #M.order == 0 then return { { "No background process has been started. The agent starts one with bash "
                                     .. "{background: true}.", {} } } end
  local id_w, status_w = 2, 7
  for _, id in ipairs(M.order) do
    id_w = math.max(id_w, #id)
    status_w = math.max(status_w, #M.status(M.procs[id]))
  end
  local head_fmt = "%-" .. id_w .. "s  %-" .. status_w .. "s  %8s  %s"
  local out = { { head_fmt:format("id", "status", "time", "command"), { { 0, -1, "Comment" } } } }
  for _, id in ipairs(M.order) do
    local p = M.procs[id]
    local status, hl = M.status(p)
    -- (a subagent's are its parent session's)
    local other = session and p.sessionId ~= session and "  (another session)" or ""
    local text = head_fmt:format(id, status, ran(p), (p.command:gsub("\n.*", " …"))) .. other
    local head = #id + math.max(0, id_w - #id) + 2
    table.insert(out, { text, { { head, head + #status, hl } } })
  end
  return out
end

local function list_shown() return view.buf and vim.api.nvim_buf_is_valid(view.buf) and #vim.fn.win_findbuf(view.buf) > 0 end

function render_list()
  if not (view.buf and vim.api.nvim_buf_is_valid(view.buf)) then return end
  local lines = M.lines(require("pi").status().session)
  vim.bo[view.buf].modifiable = true
  vim.api.nvim_buf_set_lines(view.buf, 0, -1, false, vim.tbl_map(function(l) return l[1] end, lines))
  vim.bo[view.buf].modifiable = false
  vim.api.nvim_buf_clear_namespace(view.buf, ns, 0, -1)
  view.rows = {}
  for row, l in ipairs(lines) do
    view.rows[row] = M.order[row - 1] -- under the header
    for _, span in ipairs(l[2]) do
      local end_col = span[2] < 0 and #l[1] or span[2]
      vim.api.nvim_buf_set_extmark(view.buf, ns, row - 1, span[1], { end_col = end_col, hl_group = span[3] })
    end
  end
  -- as high as its lines (the winbar is one of the window's rows), up to 10
  for _, win in ipairs(vim.fn.win_findbuf(view.buf)) do vim.api.nvim_win_set_height(win, math.min(#lines + 1, 10)) end
  -- the running times tick while the list is shown and something runs
  if M.running() > 0 and list_shown() then
    if not view.timer then
      view.timer = vim.uv.new_timer()
      view.timer:start(1000, 1000, vim.schedule_wrap(function() render_list() end))
    end
  elseif view.timer then
    view.timer:stop()
    view.timer:close()
    view.timer = nil
  end
end

-- The title and keys of the list's window.
function M.winbar()
  local n = M.running()
  local k = M.KEYS
  return (" Background processes · %d running%%=%s stop · %s output · %s refresh · %s close · g? keys ")
    :format(n, k.stop, k.output, k.refresh, k.close)
end

local function under_cursor()
  if vim.api.nvim_get_current_buf() ~= view.buf then return nil end
  local id = view.rows[vim.api.nvim_win_get_cursor(0)[1]]
  if not id then vim.notify("pi: no process on this line") end
  return id
end

-- Stops a process (SIGTERM to its group, SIGKILL after 2 s); it shows "stopping" until it ended.
function M.stop(pi, id)
  local p = id and M.procs[id]
  if not p then return end
  if p.status ~= "running" then vim.notify(("pi: %s is not running (%s)"):format(id, (M.status(p)))) return end
  p.stopping = true
  render_list()
  pi.request("process/kill", { id = id }, function(info) M.update(info) end, function(err)
    p.stopping = nil
    render_list()
    vim.notify("pi: " .. id .. " was not stopped: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
  end)
end

local function append_output(out, text)
  local buf = out.buf
  -- a line's newline is drawn with the next text: no empty line under the last one meanwhile
  text = (out.newline and "\n" or "") .. text:gsub("\r\n", "\n")
  out.newline = text:sub(-1) == "\n"
  if out.newline then text = text:sub(1, -2) end
  local lines = vim.split(text, "\n", { plain = true })
  local last = vim.api.nvim_buf_line_count(buf)
  local following = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= last then table.insert(following, win) end
  end
  vim.bo[buf].modifiable = true
  local current = vim.api.nvim_buf_get_lines(buf, last - 1, last, false)[1] or ""
  if out.empty then
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    out.empty = false
  else
    vim.api.nvim_buf_set_text(buf, last - 1, #current, last - 1, #current, lines)
  end
  vim.bo[buf].modifiable = false
  local count = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(following) do vim.api.nvim_win_set_cursor(win, { count, 0 }) end
end

-- The output window's bar: the command, its status and the keys.
function M.output_winbar(id)
  local p = M.procs[id]
  if not p then return " " .. id end
  local status = M.status(p)
  return (" %s · %s · %s%%=%s stop · %s close "):format(p.command:gsub("\n.*", " …"):gsub("%%", "%%%%"), status, ran(p),
                                                           M.KEYS.stop, M.KEYS.close)
end

-- Reads what the process wrote since the last read into its output buffer; again after
-- POLL_MS while it runs and the buffer is shown.
local function read_output(pi, id)
  local out = outputs[id]
  if not out or out.reading or not vim.api.nvim_buf_is_valid(out.buf) then return end
  out.reading = true
  pi.request("process/output", { id = id, since = out.next }, function(r)
    out.reading = false
    if not vim.api.nvim_buf_is_valid(out.buf) then return end
    if r.truncated then
      local path = M.procs[id] and M.procs[id].outputPath or "its output file"
      local fresh_line = out.empty or out.newline
      append_output(out, ("%s[… output left out here (too much to keep in memory); all of it: %s]\n")
        :format(fresh_line and "" or "\n", path))
    end
    if r.text ~= "" then append_output(out, r.text) end
    out.next = r.next
    local p = M.procs[id]
    if p and r.status ~= "running" and p.status == "running" then
      p.status, p.exitCode = r.status, r.exitCode -- the event is on its way; the bar need not wait
    end
    for _, win in ipairs(vim.fn.win_findbuf(out.buf)) do vim.wo[win].winbar = M.output_winbar(id) end
    if r.status ~= "running" then
      local status = M.status(p or { status = r.status, exitCode = r.exitCode })
      if out.empty then append_output(out, "(no output)") end
      vim.api.nvim_buf_set_extmark(out.buf, ns, vim.api.nvim_buf_line_count(out.buf) - 1, 0,
                                   { virt_lines = { { { "— " .. status .. " —", "PiMarker" } } } })
      return
    end
    if #vim.fn.win_findbuf(out.buf) > 0 then vim.defer_fn(function() read_output(pi, id) end, M.POLL_MS) end
  end, function(err)
    out.reading = false
    vim.notify("pi: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
  end)
end

-- A window at the bottom, a third of the screen high (the list above keeps its height).
local function split_output() vim.cmd("botright " .. math.max(8, math.floor(vim.o.lines / 3)) .. "split") end

-- Opens a process's output in a window at the bottom, read from its start and followed while it
-- runs.
function M.output(pi, id)
  if not id or not M.procs[id] then return end
  local out = outputs[id]
  if out and vim.api.nvim_buf_is_valid(out.buf) then
    local win = vim.fn.win_findbuf(out.buf)[1]
    if win then vim.api.nvim_set_current_win(win) else split_output() vim.api.nvim_win_set_buf(0, out.buf) end
    read_output(pi, id)
    return out.buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, "pi://process/" .. id)
  vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = "nofile", "wipe", false
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "(waiting for output)" })
  vim.bo[buf].modifiable = false
  vim.b[buf].pi_process = id
  outputs[id] = { buf = buf, next = 0, empty = true }
  vim.keymap.set("n", M.KEYS.stop, function() M.stop(pi, id) end, { buffer = buf, desc = "pi: stop this process" })
  vim.keymap.set("n", M.KEYS.close, "<cmd>close<cr>", { buffer = buf, desc = "pi: close" })
  vim.api.nvim_create_autocmd("BufWipeout", { buffer = buf, callback = function() outputs[id] = nil end })
  split_output()
  vim.api.nvim_win_set_buf(0, buf)
  vim.wo.winbar = M.output_winbar(id)
  vim.cmd("normal! G")
  read_output(pi, id)
  return buf
end

-- :PiProcesses — the list, in a window at the bottom, filled from process/list (`ask`: the
-- daemon runs).
function M.open(pi, ask)
  if not (view.buf and vim.api.nvim_buf_is_valid(view.buf)) then
    local buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, "pi://processes")
    vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = "nofile", "hide", false
    vim.bo[buf].modifiable = false
    local k = M.KEYS
    local function map(lhs, fn, desc) vim.keymap.set("n", lhs, fn, { buffer = buf, desc = "pi: " .. desc }) end
    map(k.stop, function() M.stop(pi, under_cursor()) end, "stop the process under the cursor")
    map(k.output, function() M.output(pi, under_cursor()) end, "open its output")
    map(k.refresh, function() M.refresh(pi) end, "list again")
    map(k.close, "<cmd>close<cr>", "close")
    map("g?", function() require("pi.keyhelp").show() end, "the keys")
    view.buf = buf
  end
  local win = vim.fn.win_findbuf(view.buf)[1]
  if win then vim.api.nvim_set_current_win(win)
  else
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, view.buf)
    vim.wo.winfixheight = true
    vim.wo.winbar = "%{%v:lua.require'pi.processes'.winbar()%}"
    vim.wo.number, vim.wo.relativenumber, vim.wo.cursorline, vim.wo.wrap = false, false, true, false
  end
  render_list()
  if vim.api.nvim_win_get_cursor(0)[1] == 1 and #M.order > 0 then vim.api.nvim_win_set_cursor(0, { 2, 0 }) end
  if ask then M.refresh(pi) end
  return view.buf
end

-- process/list: what the daemon runs now and ran (the events keep the list current after it).
function M.refresh(pi)
  pi.request("process/list", {}, function(result)
    for _, info in ipairs(result.processes or {}) do M.update(info) end
    render_list()
  end)
end

return M
