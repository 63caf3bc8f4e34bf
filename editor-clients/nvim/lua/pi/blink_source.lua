-- The blink.cmp source of the chat's input area (`@file`, `#buffer`, `/command`), answered by
-- lua/pi/complete.lua; added as provider "pi" by it when blink.cmp is installed.
local complete = require("pi.complete")
local source = {}

function source.new() return setmetatable({}, { __index = source }) end

function source:enabled() return vim.b.pi_input == true end

function source:get_trigger_characters() return { "@", "#", "/" } end

-- `ctx.line`, `ctx.cursor` ({ row 1-based, col 0-based }) as blink.cmp gives them.
function source:get_completions(ctx, callback)
  local row, col = ctx.cursor[1], ctx.cursor[2]
  local start, items = complete.at(ctx.line:sub(1, col), row == 1)
  callback({ is_incomplete_forward = true, is_incomplete_backward = true,
             items = start and complete.lsp_items(row, start, col, items) or {} })
end

return source
