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
  local before, row = ctx.cursor_before_line, ctx.cursor.row
  local start, items = complete.at(before, row == 1)
  callback({ isIncomplete = true, items = start and complete.lsp_items(row, start, #before, items) or {} })
end

return source
