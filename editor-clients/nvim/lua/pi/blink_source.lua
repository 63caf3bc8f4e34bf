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
  local before = ctx.line:sub(1, col)
  local start, items = complete.at(before, row == 1)
  local kinds = { File = 17, Buffer = 17, Command = 3 } -- LSP CompletionItemKind: File, Function
  callback({ is_incomplete_forward = true, is_incomplete_backward = true, items = vim.tbl_map(function(i)
    return { label = i.word, filterText = i.word, kind = kinds[i.kind], labelDetails = { description = i.menu },
             textEdit = { newText = i.word, range = { start = { line = row - 1, character = start },
                                                      ["end"] = { line = row - 1, character = col } } } }
  end, start and items or {}) })
end

return source
