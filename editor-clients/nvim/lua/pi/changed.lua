-- :PiChanged — the agent's edits to files no window showed. They land in buffers Neovim loads
-- for them (undo works, the review reads them), unsaved: git and a terminal do not see them and
-- :qa refuses. They are listed here and written when the user says so, or at once when the user
-- allowed that (setup's `write_unshown_edits`, or "from now on" in the list). A run that leaves
-- some says so when it ends.
local pick = require("pi.pick")
local M = {}

local unshown = {} -- buffer -> true: the agent changed it while no window showed it

-- An agent edit changed `buf`; `shown`: a window showed it then.
function M.edited(buf, shown)
  if shown then return end
  unshown[buf] = true
  if require("pi").config.write_unshown_edits then vim.schedule(function() M.write({ buf }) end) end
end

-- The buffers changed so that are still unsaved: { buf, path } by path.
function M.list()
  local out = {}
  for buf in pairs(unshown) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified then
      table.insert(out, { buf = buf, path = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ":~:.") })
    else
      unshown[buf] = nil
    end
  end
  table.sort(out, function(a, b) return a.path < b.path end)
  return out
end

-- Writes the buffers; says what was written and what could not be.
function M.write(bufs)
  local written, failed = {}, {}
  for _, buf in ipairs(bufs) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified then
      local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ":~:.")
      local ok, err = pcall(vim.api.nvim_buf_call, buf, function() vim.cmd("silent update") end)
      if ok then table.insert(written, name) else table.insert(failed, name .. " (" .. tostring(err) .. ")") end
    end
  end
  if #written > 0 then vim.notify("pi: wrote " .. table.concat(written, ", ")) end
  if #failed > 0 then vim.notify("pi: could not write " .. table.concat(failed, "; "), vim.log.levels.ERROR) end
end

local function bufs(list) return vim.tbl_map(function(c) return c.buf end, list) end

-- :PiChanged (bang: write them all without asking). `pi` is require("pi").
function M.run(pi, bang)
  local list = M.list()
  if #list == 0 then vim.notify("pi: no unsaved agent edits in buffers no window shows") return end
  if bang then return M.write(bufs(list)) end
  local names = table.concat(vim.tbl_map(function(c) return c.path end, list), ", ")
  local items = { { label = "Write them: " .. names, run = function() M.write(bufs(list)) end },
                  { label = "Write them, and from now on write such edits at once (this Neovim)", run = function()
                    pi.config.write_unshown_edits = true
                    M.write(bufs(list))
                  end } }
  for _, c in ipairs(list) do
    table.insert(items, { label = "Open " .. c.path, run = function() vim.cmd.sbuffer(c.buf) end })
  end
  pick.select(items, { prompt = ("%d file(s) the agent changed are unsaved, in buffers no window shows"):format(#list),
                       kind = "pi.changed", format_item = function(i) return i.label end }, function(choice)
    if choice then choice.run() end
  end)
end

-- After a run: a word when it left such edits unsaved.
function M.remind()
  local list = M.list()
  if #list == 0 then return end
  vim.notify(("pi: %d file(s) the agent changed are unsaved in buffers no window shows: :PiChanged lists them, "
              .. ":PiChanged! writes them"):format(#list), vim.log.levels.WARN)
end

return M
