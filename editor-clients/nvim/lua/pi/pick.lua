-- The plugin's pickers: vim.ui.select with every item and the prompt on one line (newlines
-- and tabs flattened; items cut at 200 cells with "…"), so a multi-line message, title or
-- command never breaks a picker's list. `question` and `await` ask from inside a server
-- request without blocking the editor.
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

-- A question asked from inside a server request, which the daemon may withdraw while its
-- picker or input is open (it stopped waiting). vim.lsp.rpc runs each server request handler
-- in a coroutine and sends its return value as the reply, so the handler yields until the
-- picker calls back, whenever that is (dressing, snacks, telescope draw later from the event
-- loop). `withdraw()` resumes it at once with M.WITHDRAWN (and closes what `q.await(start)`'s
-- `start` returned a closer for); an answer that comes after that is dropped and `late` (a
-- message) is shown.
M.WITHDRAWN = setmetatable({}, { __tostring = function() return "withdrawn" end })

function M.question(late)
  local q = { co = coroutine.running() }
  -- the token of the picker or input open now; its closer, and whether it is being closed
  local waiting, close, closing = nil, nil, false
  function q.await(start)
    local token = {}
    waiting = token
    close = start(function(value)
      if waiting ~= token then
        if q.withdrawn and late and not closing then vim.notify(late) end
        return
      end
      waiting = nil
      vim.schedule(function() coroutine.resume(q.co, value) end)
    end)
    return coroutine.yield()
  end
  function q.select(items, opts) return q.await(function(done) M.select(items, opts, done) end) end
  function q.input(opts) return q.await(function(done) vim.ui.input(opts, done) end) end
  function q.withdraw()
    q.withdrawn = true
    if waiting then
      waiting = nil
      if close then
        closing = true
        pcall(close)
        closing = false
      end
      vim.schedule(function() coroutine.resume(q.co, M.WITHDRAWN) end)
    end
  end
  return q
end

-- Asks with vim.ui.select from inside a server request (never withdrawn).
function M.await(items, opts) return M.question().select(items, opts) end

return M
