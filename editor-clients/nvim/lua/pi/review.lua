-- Review before applying: a permission request for `write` or `edit` opens a tab with the
-- file as it is now (the editor's buffer when loaded, else the disk) beside what the call
-- would make of it (write: its content; edit: its replacements applied as the daemon's edit
-- tool applies them), both in diff mode. Keys shown in the winbar answer (ga accept, gr
-- reject, the remembering choices, g? all of them in a picker); answering closes the tab,
-- closing it unanswered cancels.
local calls = require("pi.calls")
local editfs = require("pi.editfs")
local pick = require("pi.pick")
local M = {}

M.KEYS = { { "allow_once", "ga", "accept" }, { "reject_once", "gr", "reject" },
           { "allow_session", "gs", "session" }, { "allow_always", "gA", "always" }, { "reject_always", "gR", "never" } }

local open = {} -- the reviews shown: { close = fun() }

-- The text of `path` now, nil when there is no such file.
function M.current_text(path)
  local held = editfs.read_text_file({ path = path })
  if held.content ~= vim.NIL then return held.content end
  local f = io.open(path, "rb")
  if not f then return nil end
  local data = f:read("*a")
  f:close()
  return (data:gsub("\r\n", "\n"):gsub("\r", "\n"))
end

local function normal(line)
  line = line:gsub("‘", "'"):gsub("’", "'"):gsub("“", '"'):gsub("”", '"'):gsub("\194\160", " ")
  return vim.trim((line:gsub("[ \t]+", " ")))
end

local function keepends(text)
  local out, pos = {}, 1
  while pos <= #text do
    local nl = text:find("\n", pos, true)
    if not nl then table.insert(out, text:sub(pos)) break end
    table.insert(out, text:sub(pos, nl))
    pos = nl + 1
  end
  return out
end

-- Spans {start (0-based), end (exclusive)} of `old` in `text`: exact matches, else lines equal
-- once blanks and quotes are normalised (the daemon's edit tool finds them so).
local function find(text, old)
  local spans, from = {}, 1
  while true do
    local i = text:find(old, from, true)
    if not i then break end
    table.insert(spans, { i - 1, i - 1 + #old })
    from = i + 1
  end
  if #spans > 0 then return spans end
  local lines = keepends(text)
  local wanted = vim.tbl_map(normal, vim.split(old, "\n", { plain = true }))
  while #wanted > 0 and wanted[#wanted] == "" do table.remove(wanted) end
  if #wanted == 0 then return {} end
  local offsets = { 0 }
  for _, l in ipairs(lines) do table.insert(offsets, offsets[#offsets] + #l) end
  for n = 0, #lines - #wanted do
    local same = true
    for k = 1, #wanted do
      if normal(lines[n + k]) ~= wanted[k] then same = false break end
    end
    if same then
      local stop = offsets[n + #wanted + 1]
      if lines[n + #wanted]:sub(-1) == "\n" and old:sub(-1) ~= "\n" then stop = stop - 1 end
      table.insert(spans, { offsets[n + 1], stop })
    end
  end
  return spans
end

-- `text` with the edit call's replacements made, or nil and why not.
function M.apply_edits(text, edits)
  local spans = {}
  for n, edit in ipairs(edits) do
    local found = find(text, edit.oldText)
    if #found == 0 then return nil, ("edit %d: its old text is not in the file"):format(n) end
    if #found > 1 then return nil, ("edit %d: its old text matches %d places"):format(n, #found) end
    table.insert(spans, { found[1][1], found[1][2], edit.newText })
  end
  table.sort(spans, function(a, b) return a[1] < b[1] end)
  for i = 2, #spans do
    if spans[i][1] < spans[i - 1][2] then return nil, "two edits overlap" end
  end
  for i = #spans, 1, -1 do
    text = text:sub(1, spans[i][1]) .. spans[i][3] .. text:sub(spans[i][2] + 1)
  end
  return text
end

-- Whether a request is one to review here.
function M.reviews(params)
  local args = params.args
  return type(args) == "table" and type(args.path) == "string"
    and ((params.toolName == "write" and type(args.content) == "string")
         or (params.toolName == "edit" and calls.edits_ok(args)))
end

-- The file's path, its text now (nil: a new file) and the proposed text; or nil and why not.
function M.proposal(params, root)
  local path = editfs.changed_file(params.args.path, root)
  local now = M.current_text(path)
  if params.toolName == "write" then return path, now, params.args.content end
  if not now then return nil, "the file does not exist" end
  local proposed, why = M.apply_edits(now, params.args.edits)
  if not proposed then return nil, why end
  return path, now, proposed
end

local function lines(text)
  local out = vim.split(text or "", "\n", { plain = true })
  if #out > 1 and out[#out] == "" then table.remove(out) end
  return out
end

local function scratch(name, text, filetype)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines(text))
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.bo[buf].modifiable = false
  if filetype then vim.bo[buf].filetype = filetype end
  return buf
end

local function bar(text) return (text:gsub("%%", "%%%%")) end

-- The winbar of the proposed side: the keys that answer (g?: each choice's full label); the
-- left side's names the request and the sides.
function M.winbar(params)
  local keys = {}
  for _, k in ipairs(M.KEYS) do
    if vim.tbl_contains(params.options, k[1]) then table.insert(keys, k[2] .. " " .. k[3]) end
  end
  table.insert(keys, "g? all")
  return bar(" " .. table.concat(keys, " · "))
end

-- Shows the review of `params` and calls `done(outcome)` once, when answered or closed.
-- `label(outcome)`: the picker's label of an outcome (g?). Returns false and why when the
-- proposed text cannot be made (the caller asks with the picker then).
function M.show(params, root, title, label, done)
  local path, now, proposed = M.proposal(params, root)
  if not path then return false, now end
  local filetype = vim.filetype.match({ filename = path })
  local id = params.toolCallId
  local shown = vim.fn.fnamemodify(path, ":~:.")
  vim.cmd.stopinsert()
  vim.cmd("tabnew")
  local tab = vim.api.nvim_get_current_tabpage()
  local left = vim.api.nvim_get_current_win()
  local before = scratch("pi://review/" .. id .. "/now/" .. shown, now, filetype)
  local old_buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_win_set_buf(left, before)
  if vim.api.nvim_buf_is_valid(old_buf) and old_buf ~= before then pcall(vim.api.nvim_buf_delete, old_buf, {}) end
  local after = scratch("pi://review/" .. id .. "/proposed/" .. shown, proposed, filetype)
  local right = vim.api.nvim_open_win(after, true, { split = "right", win = left })
  for _, win in ipairs({ left, right }) do vim.api.nvim_win_call(win, function() vim.cmd("diffthis") end) end
  vim.wo[left].winbar = bar((" %s: %s · proposed →"):format(title, now and "now" or "a new file"))
  vim.wo[right].winbar = M.winbar(params)
  local answered = false
  local review = { id = id }
  local function finish(outcome)
    if answered then return end
    answered = true
    open[review] = nil
    vim.schedule(function()
      if vim.api.nvim_tabpage_is_valid(tab) then
        for _, win in ipairs(vim.api.nvim_tabpage_list_wins(tab)) do
          if #vim.api.nvim_list_tabpages() > 1 or #vim.api.nvim_tabpage_list_wins(tab) > 1 then
            pcall(vim.api.nvim_win_close, win, true)
          end
        end
      end
    end)
    done(outcome)
  end
  review.close = function() finish("cancelled") end
  open[review] = true
  for _, buf in ipairs({ before, after }) do
    for _, k in ipairs(M.KEYS) do
      if vim.tbl_contains(params.options, k[1]) then
        vim.keymap.set("n", k[2], function() finish(k[1]) end, { buffer = buf, desc = "pi: " .. k[3] })
      end
    end
    vim.keymap.set("n", "g?", function()
      pick.select(params.options, { prompt = title, kind = "pi.permission", format_item = label }, function(choice)
        if choice then finish(choice) end
      end)
    end, { buffer = buf, desc = "pi: all the choices" })
    vim.api.nvim_create_autocmd("BufWipeout", { buffer = buf, once = true, callback = function() finish("cancelled") end })
  end
  return true
end

-- From inside a server request: shows the review and waits for its answer (the editor goes
-- on meanwhile). nil and why when there is nothing to show.
function M.await(params, root, title, label)
  local co = coroutine.running()
  local ok, why = M.show(params, root, title, label, function(outcome)
    vim.schedule(function() coroutine.resume(co, outcome) end)
  end)
  if not ok then return nil, why end
  return coroutine.yield()
end

-- The reviews still open (of the call `id`; nil: all) are cancelled and closed: the daemon
-- stopped waiting for them, or the run they belonged to has ended.
function M.close(id)
  for review in pairs(open) do
    if id == nil or review.id == id then review.close() end
  end
end

-- How many reviews are open (for tests).
function M.count() return vim.tbl_count(open) end

return M
