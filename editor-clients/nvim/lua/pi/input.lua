-- The chat's input area: a window under the transcript (as codecompanion's) where the prompt
-- is written over as many lines as needed and sent with a key (<CR> in normal mode, <C-s> in
-- both; while pi works it steers or follows up), with the prompts sent before a key away
-- (<C-p> / <C-n> in normal mode). Its winbar says what sending does and what goes along
-- (a selection from :'<,'>Pi); the session's plan (lua/pi/plan.lua) and the queue of steers
-- and follow-ups waiting are drawn just above the text, so they stay in view while the chat
-- follows its end.
local pick = require("pi.pick")
local complete = require("pi.complete")
local M = {}

M.defaults = { height = 5, send = "<CR>", send_insert = "<C-s>", previous = "<C-p>", next = "<C-n>" }
M.config = vim.deepcopy(M.defaults)

local ns = vim.api.nvim_create_namespace("pi_queue")
-- `top`: how many lines are drawn above the text (the sections)
local s = { buf = nil, history = {}, at = nil, draft = nil, context = nil, top = 0 }

-- What is drawn above the text, top to bottom: the plan (lua/pi/plan.lua), then the queue.
M.SECTIONS = { "plan", "queue" }
local sections = {} -- name -> virtual lines ({ { {text, hl_group} } })
local draw_sections -- (below)

local function text_of(buf) return vim.trim(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")) end
-- Replaces what is written in the input area.
function M.set_text(text) vim.api.nvim_buf_set_lines(M.buffer(), 0, -1, false, vim.split(text, "\n", { plain = true })) end

-- The window showing the input, if any.
function M.window()
  return s.buf and vim.api.nvim_buf_is_valid(s.buf) and vim.fn.win_findbuf(s.buf)[1] or nil
end

-- The sections' lines sit above line 1 (virtual lines there show only as the window's top
-- filler); with them emptied no filler is kept (it would show as a row of dashes).
local function show_top()
  local win = M.window()
  if win then
    vim.api.nvim_win_call(win, function()
      if vim.fn.line("w0") == 1 then vim.fn.winrestview({ topfill = s.top }) end
    end)
  end
end

-- A prompt sent (from here or with :Pi text) goes to the end of the history.
function M.remember(text)
  if s.history[#s.history] ~= text then table.insert(s.history, text) end
  s.at, s.draft = nil, nil
end

-- Steps through the history (-1: older, 1: newer); past the newest is what was being written.
function M.recall(step)
  local buf = M.buffer()
  if #s.history == 0 then return end
  if not s.at then
    if step > 0 then return end
    s.draft, s.at = text_of(buf), #s.history + 1
  end
  s.at = math.max(1, s.at + step)
  if s.at > #s.history then
    s.at = nil
    M.set_text(s.draft or "")
  else
    M.set_text(s.history[s.at])
  end
end

-- Sends what is written (with the pending context), empties the area.
function M.submit()
  local buf = M.buffer()
  local text = text_of(buf)
  if text == "" then return end
  -- the selection given with :'<,'>Pi, then the files and buffers named with @ and #
  local context = vim.list_extend(vim.deepcopy(s.context or {}), complete.context(text))
  if #context == 0 then context = nil end
  s.context = nil
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
  require("pi").send(text, context)
end

function M.buffer()
  if s.buf and vim.api.nvim_buf_is_valid(s.buf) then return s.buf end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, "pi://input")
  vim.bo[buf].buftype = "nofile"
  vim.b[buf].pi_input = true -- (the completion sources answer here only)
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].filetype = "markdown"
  local keys, opts = M.config, function(desc) return { buffer = buf, desc = "pi: " .. desc } end
  if keys.send then vim.keymap.set("n", keys.send, M.submit, opts("send")) end
  if keys.send_insert then vim.keymap.set({ "n", "i" }, keys.send_insert, M.submit, opts("send")) end
  if keys.previous then vim.keymap.set("n", keys.previous, function() M.recall(-1) end, opts("previous prompt")) end
  if keys.next then vim.keymap.set("n", keys.next, function() M.recall(1) end, opts("next prompt")) end
  vim.keymap.set("n", "g?", function() require("pi.keyhelp").show() end, opts("the keys"))
  vim.bo[buf].omnifunc = "v:lua.require'pi.complete'.omnifunc"
  complete.attach(buf)
  vim.api.nvim_create_autocmd({ "TextChanged", "TextChangedI", "CursorMoved", "CursorMovedI", "BufWinEnter" },
                              { buffer = buf, callback = show_top })
  s.buf = buf
  draw_sections()
  return buf
end

-- The key that sends and where the others are (the winbar is short of room: g? lists them all).
local function keys_label()
  local send = M.config.send or M.config.send_insert
  return (send and (send .. " send · ") or "") .. "g? keys"
end

-- What sending does in each mode (lua/pi/modes.lua), when pi is not working.
M.TITLES = { plan = "Plan with pi (read-only)", ask = "Ask pi", ["auto-edit"] = "Ask pi (auto-edit: edits without asking)" }

-- The winbar: what sending does now (the mode, or that pi works), what goes along, the state
-- (model, tokens, cost: lua/pi/init.lua), the keys.
function M.winbar()
  local ok, pi = pcall(require, "pi")
  local status = ok and pi.status() or {}
  local title = status.busy and "%#PiWorking#pi is working: steer or follow up%*"
    or (M.TITLES[status.mode] or "Ask pi"):gsub("%%", "%%%%")
  if s.context then
    local names = {}
    for _, item in ipairs(s.context) do
      local span = item.range and ("lines %d-%d"):format(item.range.start.line + 1, item.range["end"].line) or ""
      table.insert(names, vim.fn.fnamemodify(item.path, ":t") .. " " .. span)
    end
    title = title .. (" about " .. table.concat(names, ", ")):gsub("%%", "%%%%")
  end
  local state = ok and pi.state_text():gsub("%%", "%%%%") or ""
  return (" %s · %s %%<%%=%s "):format(title, state, keys_label():gsub("%%", "%%%%"))
end

-- A window under `chat_win` showing the input area (made when there is none).
function M.open(chat_win)
  local win = M.window()
  if win then return win end
  win = vim.api.nvim_open_win(M.buffer(), false, { split = "below", win = chat_win, height = M.config.height + s.top })
  vim.wo[win].number = false
  vim.wo[win].relativenumber = false
  -- no 'winfixheight': with it a later :split in a crowded layout hung Neovim (0.11) in its
  -- window sizing; show_queue sets the height again
  vim.wo[win].signcolumn = "no"
  vim.wo[win].wrap = true
  vim.wo[win].winbar = "%{%v:lua.require'pi.input'.winbar()%}"
  vim.api.nvim_create_autocmd("WinClosed", { pattern = tostring(chat_win), once = true, callback = function()
    vim.schedule(function() if vim.api.nvim_win_is_valid(win) then pcall(vim.api.nvim_win_close, win, false) end end)
  end })
  show_top()
  return win
end

-- Focus the input area (in insert mode); `context`: editor context items sent with the next
-- prompt (nil: none). Returns its buffer and window.
function M.focus(context, chat_win)
  s.context = context
  local win = M.open(chat_win)
  vim.api.nvim_set_current_win(win)
  vim.cmd.startinsert()
  vim.cmd("redrawstatus!")
  return M.buffer(), win
end

-- Draws `lines` (virtual lines: { { {text, hl_group} }, … }; {} removes them) as the section
-- `name` above the text; the window grows by as many rows. (Drawn once the buffer is made, which
-- this leaves to the input area's opening: its keys are the configuration's then.)
function M.set_section(name, lines)
  sections[name] = lines
  if s.buf and vim.api.nvim_buf_is_valid(s.buf) then draw_sections() end
end

function draw_sections()
  local buf = M.buffer()
  local all = {}
  for _, section in ipairs(M.SECTIONS) do vim.list_extend(all, sections[section] or {}) end
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  s.top = #all
  if #all > 0 then vim.api.nvim_buf_set_extmark(buf, ns, 0, 0, { virt_lines = all, virt_lines_above = true }) end
  local win = M.window()
  if win then vim.api.nvim_win_set_height(win, M.config.height + #all) end
  show_top()
end

-- The queue (a queue_update's steering and followUp texts), one line each above the text.
function M.show_queue(queue)
  local lines = {}
  for _, text in ipairs(queue.steering or {}) do table.insert(lines, { { pick.one_line("queued steer: " .. text), "Comment" } }) end
  for _, text in ipairs(queue.followUp or {}) do
    table.insert(lines, { { pick.one_line("queued follow-up: " .. text), "Comment" } })
  end
  M.set_section("queue", lines)
end

-- The lines of the section `name` shown, as text (for tests).
function M.section_lines(name)
  return vim.tbl_map(function(l)
    return table.concat(vim.tbl_map(function(chunk) return chunk[1] end, l))
  end, sections[name] or {})
end

function M.queue_lines() return M.section_lines("queue") end

return M
