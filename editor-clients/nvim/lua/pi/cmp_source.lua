-- The nvim-cmp source of the chat's input area (`@file`, `#buffer`, `/command`), answered by
-- lua/pi/complete.lua; registered by it when nvim-cmp is installed.
local complete = require("pi.complete")
local source = {}

function source.new() return setmetatable({}, { __index = source }) end

function source:is_available() return vim.b.pi_input == true end

function source:get_trigger_characters() return { "@", "#", "/" } end

function source:get_keyword_pattern() return [[[@#/][^[:space:]@#]*]] end

-- `params.context.cursor_before_line`, `params.context.cursor.row` (1-based) as nvim-cmp gives them.
function source:complete(params, callback)
  local ctx = params.context
  local start, items = complete.at(ctx.cursor_before_line, ctx.cursor.row == 1)
  if not start then return callback({ items = {}, isIncomplete = false }) end
  local kinds = { File = 17, Buffer = 17, Command = 3 } -- LSP CompletionItemKind: File, Function
  callback({ isIncomplete = true, items = vim.tbl_map(function(i)
    return { label = i.word, filterText = i.word, kind = kinds[i.kind],
             labelDetails = { description = i.menu },
             textEdit = { newText = i.word, range = {
               start = { line = ctx.cursor.row - 1, character = start },
               ["end"] = { line = ctx.cursor.row - 1, character = #ctx.cursor_before_line } } } }
  end, items) })
end

return source
