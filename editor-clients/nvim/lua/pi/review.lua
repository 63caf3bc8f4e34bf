-- Review before applying: a permission request for `write` or `edit` opens a tab with the
-- file as it is now (the editor's buffer when loaded, else the disk) beside the text the call
-- would leave in it (the daemon's `proposed`), both in diff mode. The proposed side is the
-- user's to change: `do` takes a hunk back as it is now (`dp` from the left side too), any
-- line can be edited, and an accept sends that text when it is not the proposal. Keys shown
-- in the winbar answer (ga accept, gr reject, the remembering choices, g? all of them in a
-- picker, with "Reject with reason…" and "Reject and stop"); answering closes the tab, closing
-- it unanswered cancels.
local editfs = require("pi.editfs")
local pick = require("pi.pick")
local M = {}

M.KEYS = { { "allow_once", "ga", "accept" }, { "reject_once", "gr", "reject" },
           { "allow_session", "gs", "session" }, { "allow_always", "gA", "always" }, { "reject_always", "gR", "never" } }

-- The g? choice that asks why (REASON_PROMPT), then rejects with the user's words (lua/pi/permission.lua).
M.REASON, M.REASON_PROMPT = "reject_with_reason", "Reject: why? (pi reads this) "

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

-- Whether a request is one to review here: a write or edit the daemon computed the result of.
function M.reviews(params)
  return (params.toolName == "write" or params.toolName == "edit") and type(params.proposed) == "table"
end

-- The file's path, its text now (nil: a new file) and the text the call would leave in it
-- (the daemon's `proposed`, made by its own tool code).
function M.proposal(params, root)
  local path = editfs.changed_file(params.proposed.path, root)
  return path, M.current_text(path), params.proposed.text
end

local function lines(text)
  local out = vim.split(text or "", "\n", { plain = true })
  if #out > 1 and out[#out] == "" then table.remove(out) end
  return out
end

-- `name` is what the tab's title shows; `id` makes it unique when another review has it.
local function scratch(name, id, text, filetype, modifiable)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines(text))
  if not pcall(vim.api.nvim_buf_set_name, buf, name) then pcall(vim.api.nvim_buf_set_name, buf, name .. " " .. id) end
  vim.bo[buf].modifiable = modifiable
  if filetype then vim.bo[buf].filetype = filetype end
  return buf
end

-- The text of the proposed side as the user left it (its last line ends as the proposal's does).
function M.edited_text(buf, proposed)
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  if proposed:sub(-1) == "\n" then text = text .. "\n" end
  return text
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

-- Shows the review of `params` and calls `done(outcome, content, reason)` once, when answered
-- or closed (`content`: the user's version, when an allow takes one other than the proposal;
-- `reason`: the user's words with a reject). `label(choice)`: the picker's label of a choice
-- (g?), which lists `choices` (default: the request's options).
function M.show(params, root, title, label, done, choices)
  local path, now, proposed = M.proposal(params, root)
  local filetype = vim.filetype.match({ filename = path })
  local id = params.toolCallId
  local shown = vim.fn.fnamemodify(path, ":~:.")
  vim.cmd.stopinsert()
  vim.cmd("tabnew")
  local tab = vim.api.nvim_get_current_tabpage()
  local left = vim.api.nvim_get_current_win()
  local before = scratch(shown .. " (now)", id, now, filetype, false)
  local old_buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_win_set_buf(left, before)
  if vim.api.nvim_buf_is_valid(old_buf) and old_buf ~= before then pcall(vim.api.nvim_buf_delete, old_buf, {}) end
  local after = scratch(shown .. " (proposed)", id, proposed, filetype, true)
  local right = vim.api.nvim_open_win(after, true, { split = "right", win = left })
  for _, win in ipairs({ left, right }) do vim.api.nvim_win_call(win, function() vim.cmd("diffthis") end) end
  local head = (" %s: %s · proposed →"):format(title, now and "now" or "a new file")
  local hint = " (do rejects a hunk; edit it freely)" -- where it fits beside the title
  if vim.fn.strdisplaywidth(head .. hint) <= vim.api.nvim_win_get_width(left) then head = head .. hint end
  vim.wo[left].winbar = bar(head)
  vim.wo[right].winbar = M.winbar(params)
  local answered = false
  local review = { id = id }
  local function finish(outcome, reason)
    if answered then return end
    answered = true
    -- the user's version (hunks rejected with `do`, lines edited) goes with an allow
    local content = vim.startswith(outcome, "allow") and vim.api.nvim_buf_is_valid(after)
      and M.edited_text(after, proposed) or nil
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
    done(outcome, content ~= proposed and content or nil, reason)
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
      pick.select(choices or params.options, { prompt = title, kind = "pi.permission", format_item = label },
                  function(choice)
        if choice ~= M.REASON then if choice then finish(choice) end return end
        vim.ui.input({ prompt = M.REASON_PROMPT }, function(reason)
          reason = reason and vim.trim(reason)
          if reason then finish("reject_once", reason ~= "" and reason or nil) end
        end)
      end)
    end, { buffer = buf, desc = "pi: all the choices" })
    vim.api.nvim_create_autocmd("BufWipeout", { buffer = buf, once = true, callback = function() finish("cancelled") end })
  end
end

-- From inside a server request: shows the review and waits for its answer (the editor goes
-- on meanwhile): the outcome, the user's version of the text when it is not the proposal, the
-- user's reason for a reject.
function M.await(params, root, title, label, choices)
  local co = coroutine.running()
  M.show(params, root, title, label, function(outcome, content, reason)
    vim.schedule(function() coroutine.resume(co, outcome, content, reason) end)
  end, choices)
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
