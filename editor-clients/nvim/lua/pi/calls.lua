-- How a tool call reads in the chat: an edit as the diff of each of its replacements, a write
-- as the start of the new file, a plan as its checklist, a question with its choices, any
-- other call as its arguments one per line (multi-line strings as indented blocks). Each line
-- comes with the highlight group of its whole line (diff lines: DiffAdd / DiffDelete), or nil.
local M = {}

M.WRITE_LINES = 30 -- a write shows this many lines of the new file
M.DIFF_LINES = 80 -- an edit shows this many diff lines

-- The lines of `text` ({} for none); the chat splits tool output with it too.
function M.split(text)
  if text == nil or text == "" then return {} end
  return vim.split(text, "\n", { plain = true })
end

local split = M.split

local function format_args(args)
  local out = {}
  if type(args) ~= "table" then return { "  " .. vim.json.encode(args) } end
  local keys = vim.tbl_keys(args)
  table.sort(keys)
  for _, key in ipairs(keys) do
    local value = args[key]
    if type(value) == "string" and value:find("\n", 1, true) then
      table.insert(out, "  " .. key .. ":")
      for _, l in ipairs(split(value)) do table.insert(out, "    " .. l) end
    elseif type(value) == "string" then
      table.insert(out, "  " .. key .. ": " .. value)
    else
      table.insert(out, "  " .. key .. ": " .. vim.json.encode(value))
    end
  end
  return out
end

local diff = (vim.text and vim.text.diff) or vim.diff

-- The diff lines of replacing `old` by `new` (both snippets of a file): context, -, + lines
-- without the snippet-relative @@ headers; hunks apart are separated by "⋯".
local function diff_lines(old, new)
  local out = {}
  local unified = diff(old .. "\n", new .. "\n", { result_type = "unified", ctxlen = 3 })
  for _, l in ipairs(split(unified)) do
    if l:sub(1, 2) == "@@" then
      if #out > 0 then table.insert(out, { "  ⋯" }) end
    elseif l ~= "" and l ~= "\\ No newline at end of file" then
      local kind = l:sub(1, 1)
      table.insert(out, { "  " .. l, kind == "+" and "DiffAdd" or kind == "-" and "DiffDelete" or nil })
    end
  end
  return out
end

local function bounded(lines, limit, what)
  if #lines <= limit then return lines end
  local out = vim.list_slice(lines, 1, limit)
  table.insert(out, { ("  … %d more %s"):format(#lines - limit, what), "Comment" })
  return out
end

local function edit_lines(args)
  local out = {}
  for n, e in ipairs(args.edits) do
    if n > 1 then table.insert(out, { "  ⋯" }) end
    vim.list_extend(out, diff_lines(e.oldText or "", e.newText or ""))
  end
  return bounded(out, M.DIFF_LINES, "diff lines")
end

local function write_lines(args)
  local out = {}
  for _, l in ipairs(split(args.content)) do table.insert(out, { "    " .. l }) end
  if #out == 0 then out = { { "  (empty file)", "Comment" } } end
  return bounded(out, M.WRITE_LINES, "lines")
end

-- Whether an edit call's arguments hold a list of {oldText, newText} replacements.
function M.edits_ok(args)
  if type(args.edits) ~= "table" or #args.edits == 0 then return false end
  for _, e in ipairs(args.edits) do
    if type(e) ~= "table" or type(e.oldText) ~= "string" or type(e.newText) ~= "string" then return false end
  end
  return true
end

local PLAN_MARKS = { completed = "✓", in_progress = "▶", pending = "○" }

-- update_plan as the checklist it sets; ask_user as its question and choices.
local function plan_lines(args)
  local out = {}
  if type(args.explanation) == "string" then table.insert(out, { "  " .. args.explanation, "Comment" }) end
  for _, e in ipairs(args.plan) do
    local step = type(e) == "table" and e.step or e
    table.insert(out, { ("  %s %s"):format(PLAN_MARKS[type(e) == "table" and e.status] or "○", tostring(step)) })
  end
  return out
end

local function question_lines(args)
  local out = {}
  for _, l in ipairs(split(args.question)) do table.insert(out, { "  " .. l }) end
  for _, o in ipairs(type(args.options) == "table" and args.options or {}) do
    local label = type(o) == "table" and o.label or o
    local more = type(o) == "table" and type(o.description) == "string" and (" — " .. o.description) or ""
    table.insert(out, { ("  %s %s%s"):format(args.multiSelect and "☐" or "•", tostring(label), more) })
  end
  return out
end

-- The lines of a call: { {text, hl_group|nil} }, the first one "→ name …".
function M.lines(call)
  local args = call.arguments
  if call.name == "update_plan" and type(args) == "table" and type(args.plan) == "table" then
    return { { "→ update_plan" }, unpack(plan_lines(args)) }
  elseif call.name == "ask_user" and type(args) == "table" and type(args.question) == "string" then
    return { { "→ ask_user" }, unpack(question_lines(args)) }
  end
  if type(args) == "table" and type(args.path) == "string" then
    if call.name == "edit" and M.edits_ok(args) then
      return { { "→ edit " .. args.path }, unpack(edit_lines(args)) }
    elseif call.name == "write" and type(args.content) == "string" then
      return { { "→ write " .. args.path }, unpack(write_lines(args)) }
    end
  end
  local out = { { "→ " .. call.name } }
  if call.name == "bash" and type(args) == "table" and args.background == true then
    -- the id it runs as comes with the result (lua/pi/processes.lua draws it under these lines)
    out[1][1] = "→ bash, in the background"
    args = vim.deepcopy(args)
    args.background = nil
  end
  for _, l in ipairs(format_args(args or vim.empty_dict())) do table.insert(out, { l }) end
  return out
end

return M
