-- Completion in the chat's input area: `@file` (the workspace's files), `#buffer` (Neovim's
-- loaded buffers) and `/command` (the daemon's slash commands, first word only). One function,
-- M.at, answers the input area's 'omnifunc' and the nvim-cmp / blink.cmp sources
-- (lua/pi/cmp_source.lua, lua/pi/blink_source.lua). On sending, the files and buffers named go
-- along as editor context (M.context): the daemon reads them, a buffer with its unsaved text.
local M = {}

M.LIMIT = 200 -- items offered at once
M.SCAN = 5000 -- files looked at in the workspace
M.SKIP = { [".git"] = true, node_modules = true, [".venv"] = true, __pycache__ = true }

local function workspace()
  local ok, pi = pcall(require, "pi")
  return ok and pi.status().workspace or vim.fn.getcwd()
end

local function files(root)
  local out = {}
  for name, kind in vim.fs.dir(root, { depth = 8, skip = function(dir) return not M.SKIP[vim.fs.basename(dir)] end }) do
    if kind == "file" and not M.SKIP[vim.fs.basename(name)] then table.insert(out, name) end
    if #out >= M.SCAN then break end
  end
  table.sort(out)
  return out
end

-- Loaded buffers with a file name, as paths relative to the workspace (or absolute outside it).
local function buffers(root)
  local out = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if vim.bo[buf].buflisted and name ~= "" and vim.bo[buf].buftype == "" then
      local rel = vim.fs.relpath and vim.fs.relpath(root, name) or nil
      table.insert(out, { word = rel or name, path = name, modified = vim.bo[buf].modified })
    end
  end
  return out
end

local function commands()
  local ok, pi = pcall(require, "pi")
  return ok and pi.status().commands or {}
end

-- The word being completed at the end of `before`: its start (1-based), sigil and the rest;
-- nil unless a sigil begins it after a blank or at the line's start.
function M.word(before)
  local start, sigil, partial = before:match("()([@#/])([^%s@#]*)$")
  if not start or (start > 1 and not before:sub(start - 1, start - 1):match("%s")) then return nil end
  return start, sigil, partial
end

-- What completes at the end of `before` (the line up to the cursor; `first`: it is the text's
-- first line): the column (0-based) where the word starts and the items, each
-- { word, menu, kind } with `word` the whole replacement ("@src/app.py", "#notes.md", "/review").
function M.at(before, first)
  local start, sigil, partial = M.word(before)
  if not start then return nil, {} end
  local wanted, items = partial:lower(), {}
  local function add(word, menu, kind)
    if #items < M.LIMIT and word:lower():find(wanted, 1, true) then
      table.insert(items, { word = sigil .. word, menu = menu, kind = kind })
    end
  end
  local root = workspace()
  if sigil == "@" then
    for _, path in ipairs(files(root)) do add(path, "file", "File") end
  elseif sigil == "#" then
    for _, b in ipairs(buffers(root)) do add(b.word, b.modified and "buffer [+]" or "buffer", "Buffer") end
  elseif first and start == 1 then
    for _, c in ipairs(commands()) do
      if vim.startswith(c.name, partial) then
        local about = type(c.description) == "string" and c.description or ""
        table.insert(items, { word = "/" .. c.name, menu = about, kind = "Command" })
      end
    end
  else return nil, {} end
  return start - 1, items
end

-- The items as LSP CompletionItems replacing columns [start, col) of line `row` (1-based):
-- what nvim-cmp and blink.cmp take.
function M.lsp_items(row, start, col, items)
  local kinds = { File = 17, Buffer = 17, Command = 3 } -- CompletionItemKind: File, Function
  return vim.tbl_map(function(i)
    return { label = i.word, filterText = i.word, kind = kinds[i.kind], labelDetails = { description = i.menu },
             textEdit = { newText = i.word, range = { start = { line = row - 1, character = start },
                                                      ["end"] = { line = row - 1, character = col } } } }
  end, items)
end

-- 'omnifunc' of the input area (also usable as 'completefunc'). The second call completes
-- `base` (the word found by the first, sigil included) on its own.
local starts_text = false
function M.omnifunc(findstart, base)
  if findstart == 1 then
    local row, col = unpack(vim.api.nvim_win_get_cursor(0))
    local start = M.word(vim.api.nvim_get_current_line():sub(1, col))
    starts_text = row == 1 and start == 1
    return start and start - 1 or -3
  end
  local _, items = M.at(base, starts_text)
  return items
end

-- The editor context of a prompt's text: each `@path` that is a file in the workspace (".."
-- does not leave it) and each
-- `#name` that is a loaded buffer, once each, as ContextItems (path only: the daemon reads them).
---@return pi.ContextItem[]
function M.context(text)
  local root, out, seen = workspace(), {}, {}
  local function add(path)
    if not seen[path] then seen[path] = true table.insert(out, { path = path }) end
  end
  for sigil, word in text:gmatch("%f[^%s%z]([@#])([^%s@#]+)") do
    word = word:gsub("[%.,;:!?%)]+$", "")
    if sigil == "@" then
      -- a file of the workspace only (the daemon refuses a path outside it, failing the prompt)
      local path = vim.fs.normalize(vim.fs.joinpath(root, word))
      if vim.startswith(path, root .. "/") and vim.fn.filereadable(path) == 1 then add(path) end
    else
      for _, b in ipairs(buffers(root)) do if b.word == word then add(b.path) end end
    end
  end
  return out
end

-- The input area `buf` gets the pi source of nvim-cmp and blink.cmp when they are installed
-- (nothing is loaded otherwise).
function M.attach(buf)
  local has_cmp, cmp = pcall(require, "cmp")
  if has_cmp then
    if not M.cmp_registered then
      cmp.register_source("pi", require("pi.cmp_source").new())
      M.cmp_registered = true
    end
    vim.api.nvim_buf_call(buf, function()
      cmp.setup.buffer({ sources = { { name = "pi" }, { name = "buffer" } } })
    end)
  end
  local has_blink, blink = pcall(require, "blink.cmp")
  if has_blink and not M.blink_registered then
    -- enabled() of the source limits it to the input area
    pcall(blink.add_source_provider, "pi", { name = "pi", module = "pi.blink_source" })
    pcall(blink.add_filetype_source, "markdown", "pi")
    M.blink_registered = true
  end
end

return M
