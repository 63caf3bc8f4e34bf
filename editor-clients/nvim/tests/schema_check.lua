-- What the plugin receives from the daemon, checked against protocol.schema.json.
-- A small validator for the subset of JSON Schema the schema uses ($ref, type, const, enum,
-- anyOf, oneOf, properties, required, additionalProperties, items). vim.lsp.rpc decodes a
-- JSON null inside an object as a missing key, so a missing key whose schema allows null passes.
local S = { violations = {} }

local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h:h:h")
local schema = vim.json.decode(table.concat(vim.fn.readfile(root .. "/protocol.schema.json"), "\n"))

local function resolve(s)
  while s["$ref"] do s = schema["$defs"][s["$ref"]:match("^#/%$defs/(.+)$")] end
  return s
end

local function allows_null(s)
  s = resolve(s)
  if s.type == "null" then return true end
  for _, key in ipairs({ "anyOf", "oneOf" }) do
    for _, branch in ipairs(s[key] or {}) do if allows_null(branch) then return true end end
  end
  return next(s) == nil
end

local function is_type(value, kind)
  if kind == "null" then return value == vim.NIL or value == nil end
  if kind == "string" then return type(value) == "string" end
  if kind == "boolean" then return type(value) == "boolean" end
  if kind == "number" then return type(value) == "number" end
  if kind == "integer" then return type(value) == "number" and math.floor(value) == value end
  if kind == "array" then return type(value) == "table" and (vim.tbl_isempty(value) or vim.islist(value)) end
  if kind == "object" then return type(value) == "table" and (vim.tbl_isempty(value) or not vim.islist(value)) end
  return false
end

local check

local function errors_of(value, s, path)
  local errs = {}
  check(value, s, path, errs)
  return errs
end

function check(value, s, path, errs)
  s = resolve(s)
  if s.const ~= nil and value ~= s.const then
    table.insert(errs, path .. ": expected " .. vim.inspect(s.const)) return
  end
  if s.enum and not vim.tbl_contains(s.enum, value) then table.insert(errs, path .. ": not one of the enum") return end
  if s.type and not is_type(value, s.type) then
    table.insert(errs, path .. ": expected " .. s.type .. ", got " .. type(value)) return
  end
  local branches = s.anyOf or s.oneOf
  if branches then
    local tagged = type(value) == "table" and (value.type or value.role)
    for _, branch in ipairs(branches) do
      local target = resolve(branch)
      local tag = target.properties and (target.properties.type or target.properties.role)
      if not tagged or not tag or tag.const == tagged then
        if #errors_of(value, branch, path) == 0 then return end
      end
    end
    table.insert(errs, path .. ": fits none of " .. #branches .. " alternatives") return
  end
  if type(value) ~= "table" then return end
  if s.items then for i, item in ipairs(value) do check(item, s.items, path .. "/" .. i, errs) end end
  if s.properties then
    for _, key in ipairs(s.required or {}) do
      if value[key] == nil and not allows_null(s.properties[key]) then table.insert(errs, path .. ": missing " .. key) end
    end
    for key, item in pairs(value) do
      local prop = s.properties[key]
      if prop then check(item, prop, path .. "/" .. key, errs)
      elseif s.additionalProperties == false then table.insert(errs, path .. ": unexpected " .. key) end
    end
  elseif type(s.additionalProperties) == "table" then
    for key, item in pairs(value) do check(item, s.additionalProperties, path .. "/" .. key, errs) end
  end
end

-- kind: "notification" | "request" (daemon -> client) | "result" (of a method the plugin called)
function S.check(kind, method, value)
  -- the wire's own notification (docs/protocol.md, `$/cancelRequest`): the daemon withdraws a request it stopped waiting for
  if kind == "notification" and method == "$/cancelRequest" then
    if type(value) ~= "table" or (type(value.id) ~= "string" and type(value.id) ~= "number") then
      table.insert(S.violations, "$/cancelRequest: no id")
    end
    return
  end
  local entry
  if kind == "notification" then entry = schema["x-notifications"][method]
  elseif kind == "request" then entry = schema["x-clientRequests"][method]
  else entry = schema["x-methods"][method] end
  if not entry then table.insert(S.violations, kind .. " " .. method .. ": not in the schema") return end
  local s = kind == "result" and entry.result or entry.params
  for _, err in ipairs(errors_of(value, s, method)) do table.insert(S.violations, err) end
end

-- The violations so far (and forget them).
function S.take()
  local found = S.violations
  S.violations = {}
  return found
end

return S
