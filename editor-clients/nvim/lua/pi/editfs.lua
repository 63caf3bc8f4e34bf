-- pi.nvim as the agent's file system and review tool:
--   * fs/readTextFile answers from loaded buffers (modified or not), with b:changedtick as version;
--   * workspace/applyEdit goes through vim.lsp.util.apply_workspace_edit (undo with `u`);
--   * fs/didChangeDirty tells the daemon which buffers have unsaved changes;
--   * :PiDiff shows a run's changes in a scratch buffer (]h / [h between hunks, <CR> opens the
--     file at the line under the cursor),
--     :PiAccept / :PiRevert [hunk|file|run] act on the hunk under the cursor (in that buffer, or
--     the latest run's hunk in a changed file's own buffer), its file or the run;
--   * :'<,'>Pi {text} sends the selection as editor context.
local M = {}

local function full(path) return vim.fs.normalize(vim.fn.fnamemodify(path, ":p")) end

-- The loaded file buffer that holds `path`, if any.
function M.buffer_of(path)
  local wanted = full(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" then
      local name = vim.api.nvim_buf_get_name(buf)
      if name ~= "" and full(name) == wanted then return buf end
    end
  end
end

local function buffer_text(buf)
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  if vim.bo[buf].eol or vim.bo[buf].fixeol then text = text .. "\n" end
  return text
end

-- Lines `first` (1-based) to `first + limit - 1` of a buffer, each with its line end (the
-- buffer's last line has one only when the file ends with one): a window fs/readTextFile asks for.
local function buffer_window(buf, first, limit)
  local count = vim.api.nvim_buf_line_count(buf)
  local from = math.max(first - 1, 0)
  local to = limit and math.min(from + limit, count) or count
  if from >= count then return "" end
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, from, to, false), "\n")
  if to < count or vim.bo[buf].eol or vim.bo[buf].fixeol then text = text .. "\n" end
  return text
end

function M.read_text_file(params)
  local buf = M.buffer_of(params.path)
  if not buf then return { content = vim.NIL } end
  local line = params.line ~= vim.NIL and params.line or nil
  local limit = params.limit ~= vim.NIL and params.limit or nil
  local content = (line or limit) and buffer_window(buf, line or 1, limit) or buffer_text(buf)
  return { content = content, version = vim.b[buf].changedtick }
end

-- The files a WorkspaceEdit changes the text of (its created and deleted files aside).
local function edited_uris(edit)
  local uris = {}
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.textDocument then table.insert(uris, change.textDocument.uri) end
  end
  for uri in pairs(edit.changes or {}) do table.insert(uris, uri) end
  return uris
end

-- Whether a buffer's text, written as its options say, is its file's bytes on the disk.
function M.same_as_disk(buf)
  local fenc = vim.bo[buf].fileencoding
  if fenc ~= "" and fenc ~= "utf-8" then return false end
  local f = io.open(vim.api.nvim_buf_get_name(buf), "rb")
  if not f then return false end
  local disk = f:read("*a")
  f:close()
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  if disk == "" then return #lines == 1 and lines[1] == "" end
  local eol = vim.bo[buf].fileformat == "dos" and "\r\n" or (vim.bo[buf].fileformat == "mac" and "\r" or "\n")
  local text = table.concat(lines, eol)
  if vim.bo[buf].eol or vim.bo[buf].fixeol then text = text .. eol end
  if vim.bo[buf].bomb then text = "\239\187\191" .. text end
  return text == disk
end

-- LSP's workspace/applyEdit. A TextDocumentEdit made from an older buffer (its version is
-- not the buffer's changedtick any more) refuses the whole edit; nothing is applied then.
function M.apply_edit(params)
  local edit = params.edit or {}
  for i, change in ipairs(edit.documentChanges or {}) do
    if change.textDocument and type(change.textDocument.version) == "number" then
      local buf = M.buffer_of(vim.uri_to_fname(change.textDocument.uri))
      local now = buf and vim.b[buf].changedtick
      if now and now ~= change.textDocument.version then
        return { applied = false, failedChange = i - 1,
                 failureReason = ("the buffer changed since it was read (version %d, now %d)"):format(
                   change.textDocument.version, now) }
      end
      change.textDocument.version = nil -- checked here; Neovim compares with LSP clients' versions
    end
  end
  local shown = {} -- the edited files' buffers that a window showed before the edit
  for _, uri in ipairs(edited_uris(edit)) do
    local buf = M.buffer_of(vim.uri_to_fname(uri))
    shown[uri] = buf ~= nil and #vim.fn.win_findbuf(buf) > 0
  end
  local ok, err = pcall(vim.lsp.util.apply_workspace_edit, edit, "utf-16")
  if not ok then return { applied = false, failureReason = tostring(err) } end
  for _, change in ipairs(edit.documentChanges or {}) do
    local buf = change.kind == "create" and M.buffer_of(vim.uri_to_fname(change.uri))
    local count = buf and vim.api.nvim_buf_line_count(buf)
    -- the text inserted into the new, empty buffer ends with its final newline, which is the
    -- buffer's 'eol', not one more line
    if count and count > 1 and vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] == "" then
      pcall(vim.api.nvim_buf_call, buf, function() vim.cmd("undojoin") end) -- one undo step with the edit
      vim.api.nvim_buf_set_lines(buf, count - 1, count, false, {})
    end
  end
  for _, uri in ipairs(edited_uris(edit)) do
    local buf = M.buffer_of(vim.uri_to_fname(uri))
    if buf then
      -- an edit that made the buffer what the file holds (a rewind, an edit undone) leaves
      -- nothing unsaved: 'modified' would make :qa refuse and the daemon count it as dirty
      if M.same_as_disk(buf) then vim.bo[buf].modified = false end
      require("pi.changed").edited(buf, shown[uri])
    end
  end
  return { applied = true }
end

function M.server_request(method, params)
  if method == "fs/readTextFile" then return true, M.read_text_file(params) end
  if method == "workspace/applyEdit" then return true, M.apply_edit(params) end
  return false
end

-- fs/didChangeDirty: the whole set of modified file buffers, sent when it changes.
local last_dirty
function M.report_dirty(notify)
  local paths = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" and name ~= "" and vim.bo[buf].modified then
      table.insert(paths, full(name))
    end
  end
  table.sort(paths)
  local key = table.concat(paths, "\n")
  if key == last_dirty then return end
  last_dirty = key
  notify("fs/didChangeDirty", { paths = paths })
end

function M.watch_dirty(notify)
  last_dirty = nil
  local group = vim.api.nvim_create_augroup("pi_editfs", { clear = true })
  vim.api.nvim_create_autocmd({ "BufModifiedSet", "BufWritePost", "BufDelete" }, {
    group = group, callback = function() vim.schedule(function() M.report_dirty(notify) end) end,
  })
  M.report_dirty(notify)
end

-- --- editor context ------------------------------------------------------------------

-- The lines line1..line2 (1-based) of the current buffer as a ContextItem.
function M.selection(line1, line2)
  local buf = vim.api.nvim_get_current_buf()
  local lines = vim.api.nvim_buf_get_lines(buf, line1 - 1, line2, false)
  return { path = full(vim.api.nvim_buf_get_name(buf)),
           range = { start = { line = line1 - 1, character = 0 }, ["end"] = { line = line2, character = 0 } },
           text = table.concat(lines, "\n") }
end

-- --- review: :PiDiff, :PiAccept, :PiRevert ------------------------------------------------

-- marks: { {line, path, hunk, new_start} } in line order; files: the run's ChangedFile list;
-- root: the daemon's workspace, which the changed paths are relative to
local diff_state = { buf = nil, run = nil, marks = {}, files = {}, root = nil }

-- The absolute path of a changed file: the daemon sends paths relative to its workspace
-- (initialize's `workspace`), which need not be Neovim's current directory.
function M.changed_file(path, root)
  if path:sub(1, 1) == "/" or not root then return full(path) end
  return full(root .. "/" .. path)
end

local function diff_buffer()
  if diff_state.buf and vim.api.nvim_buf_is_valid(diff_state.buf) then return diff_state.buf end
  local buf = vim.api.nvim_create_buf(true, true)
  vim.api.nvim_buf_set_name(buf, "pi://changes")
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].filetype = "diff"
  local jump = function(forward)
    return function()
      local row = vim.api.nvim_win_get_cursor(0)[1]
      local target
      for _, mark in ipairs(diff_state.marks) do
        if forward and mark.line > row and not target then target = mark.line end
        if not forward and mark.line < row then target = mark.line end
      end
      if target then vim.api.nvim_win_set_cursor(0, { target, 0 }) end
    end
  end
  vim.keymap.set("n", "]h", jump(true), { buffer = buf, desc = "next pi hunk" })
  vim.keymap.set("n", "[h", jump(false), { buffer = buf, desc = "previous pi hunk" })
  vim.keymap.set("n", "<CR>", function()
    local ok, err = pcall(M.open_hunk, vim.api.nvim_win_get_cursor(0)[1])
    if not ok then vim.notify(err, vim.log.levels.ERROR) end
  end, { buffer = buf, desc = "pi: open the file at this line" })
  diff_state.buf = buf
  return buf
end

-- Draw a changes/get result: a header per run, each file's diff, one mark per hunk header.
-- `root`: the daemon's workspace.
function M.show_changes(result, root)
  local buf = diff_buffer()
  local lines, marks = { "# pi changes, run " .. result.runId .. "  (]h/[h: hunks, :PiAccept, :PiRevert)" }, {}
  for _, file in ipairs(result.files) do
    table.insert(lines, "")
    local accepted = {}
    for _, hunk in ipairs(file.hunks) do accepted[hunk.header] = hunk end
    local n = 0
    for _, text in ipairs(vim.split(file.diff, "\n", { plain = true, trimempty = true })) do
      if text:sub(1, 2) == "@@" then
        n = n + 1
        local hunk = file.hunks[n]
        table.insert(marks, { line = #lines + 1, path = file.path, hunk = hunk.id, new_start = hunk.newStart })
        if hunk.accepted then text = text .. "  [accepted]" end
      end
      table.insert(lines, text)
    end
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  diff_state.marks = marks
  diff_state.root = root
  M.keep(result)
  return buf
end

-- <CR> in the :PiDiff buffer: the changed file, in a window that shows it, else the window the
-- diff was opened from (else a new split), at the line the cursor's diff line stands for (a
-- removed line: where it was).
function M.open_hunk(row)
  local mark = M.hunk_at(row)
  if not mark then error("pi: the cursor is not in a hunk", 0) end
  local line = mark.new_start
  if row > mark.line then
    for _, text in ipairs(vim.api.nvim_buf_get_lines(diff_state.buf, mark.line, row - 1, false)) do
      local kind = text:sub(1, 1)
      if kind == " " or kind == "+" then line = line + 1 end
    end
  end
  local path = M.changed_file(mark.path, diff_state.root)
  local shown = M.buffer_of(path)
  local win = shown and vim.fn.win_findbuf(shown)[1]
  if win then
    vim.api.nvim_set_current_win(win)
  else
    local diff_win = vim.api.nvim_get_current_win()
    vim.cmd("wincmd p")
    if vim.api.nvim_get_current_win() == diff_win then vim.cmd("split") end
    vim.cmd("hide edit " .. vim.fn.fnameescape(path)) -- the buffer it replaces stays loaded, unsaved edits too
  end
  line = math.min(math.max(line, 1), vim.api.nvim_buf_line_count(0))
  vim.api.nvim_win_set_cursor(0, { line, 0 })
end

-- Keep a changes/get result as the run :PiAccept / :PiRevert act on.
function M.keep(result)
  diff_state.run, diff_state.files = result.runId, result.files
end

-- The hunk the cursor is in (the last hunk header at or above it).
function M.hunk_at(row)
  local found
  for _, mark in ipairs(diff_state.marks) do
    if mark.line <= row then found = mark end
  end
  return found
end

-- In a file's buffer: {path, hunk?} of the kept run's file it holds, with the hunk whose lines
-- (after the run) include `row`. `root`: the daemon's workspace, which changed paths are relative to.
function M.file_hunk_at(buf, row, root)
  local name = full(vim.api.nvim_buf_get_name(buf))
  for _, file in ipairs(diff_state.files) do
    if M.changed_file(file.path, root) == name then
      for _, hunk in ipairs(file.hunks) do
        if row >= hunk.newStart and row < hunk.newStart + math.max(hunk.newLines, 1) then
          return { path = file.path, hunk = hunk.id }
        end
      end
      return { path = file.path }
    end
  end
end

-- params.files for :PiAccept / :PiRevert: "hunk" (default), "file" or "run", for the cursor at
-- `row` of `buf`: the :PiDiff buffer, or a file the run changed.
function M.choice(scope, row, buf, root)
  if scope == "run" then return nil end
  local mark
  if buf == nil or buf == diff_state.buf then
    mark = M.hunk_at(row)
    if not mark then error("pi: the cursor is not in a hunk", 0) end
  else
    mark = M.file_hunk_at(buf, row, root)
    if not mark then error(("pi: run %s did not change %s"):format(diff_state.run, vim.api.nvim_buf_get_name(buf)), 0) end
  end
  if scope == "file" then return { { path = mark.path } } end
  if not mark.hunk then error(("pi: line %d is in no hunk of run %s"):format(row, diff_state.run), 0) end
  return { { path = mark.path, hunkIds = { mark.hunk } } }
end

function M.state() return diff_state end

return M
