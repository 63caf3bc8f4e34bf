-- The plugin's pickers: vim.ui.select with every item and the prompt on one line (newlines
-- and tabs flattened; items cut at 200 cells with "…"), so a multi-line message, title or
-- command never breaks a picker's list. `await` asks from inside a
-- server request without blocking the editor.
local M = {}

-- `text` on one line, at most `width` display cells (nil: no limit).
function M.one_line(text, width)
  text = tostring(text):gsub("%s*\r?\n%s*", " ⏎ "):gsub("[\t\r]", " ")
  if width and vim.fn.strdisplaywidth(text) > width then
    local cut = vim.fn.strcharpart(text, 0, width - 1)
    while vim.fn.strdisplaywidth(cut) > width - 1 do cut = vim.fn.strcharpart(cut, 0, vim.fn.strchars(cut) - 1) end
    text = cut .. "…"
  end
  return text
end

-- Past any screen's width, so only a runaway item (a pasted file as a session's title) is cut.
M.WIDTH = 200

function M.select(items, opts, on_choice)
  opts = vim.tbl_extend("force", {}, opts or {})
  local format = opts.format_item or tostring
  opts.format_item = function(item) return M.one_line(format(item), M.WIDTH) end
  if opts.prompt then opts.prompt = M.one_line(opts.prompt) end
  vim.ui.select(items, opts, on_choice)
end

-- Asks from inside a server request. vim.lsp.rpc runs each server request handler in a
-- coroutine and sends its return value as the reply, so the handler yields until the picker
-- calls back, whenever that is (dressing, snacks, telescope draw later from the event loop).
function M.await(items, opts)
  local co = coroutine.running()
  local answered = false
  M.select(items, opts, function(item)
    if answered then return end
    answered = true
    vim.schedule(function() coroutine.resume(co, item) end)
  end)
  return coroutine.yield()
end

-- vim.ui.input asked from inside a server request, as `await` asks vim.ui.select: the text
-- typed, nil when dismissed.
function M.await_input(opts)
  local co = coroutine.running()
  local answered = false
  vim.ui.input(opts, function(text)
    if answered then return end
    answered = true
    vim.schedule(function() coroutine.resume(co, text) end)
  end)
  return coroutine.yield()
end

return M
