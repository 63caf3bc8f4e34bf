-- The session's plan (the agent's update_plan checklist), drawn above the input area's text
-- (lua/pi/input.lua), where it stays in view while the chat scrolls. It follows plan_updated:
-- live, on a replay (session/load sends it before replay_end) and after a rewind or a move in
-- the tree (the plan as it stood there); a chat cleared for another session clears it.
local input = require("pi.input")
local pick = require("pi.pick")
local M = {}

M.MAX = 8 -- at most this many steps are drawn; the completed ones give way first
M.MARKS = { completed = { "✓", "PiPlanDone" }, in_progress = { "▶", "PiPlanActive" },
            pending = { "○", "PiPlanPending" } }

local shown = { entries = {}, explanation = nil }

local function step_line(entry)
  local mark = M.MARKS[entry.status] or M.MARKS.pending
  return { { "  " .. mark[1] .. " ", mark[2] }, { pick.one_line(entry.step, pick.WIDTH), mark[2] } }
end

-- The virtual lines of a plan: a title with the count done, then the steps; a finished plan
-- is its title alone.
function M.lines(entries, explanation)
  if #entries == 0 then return {} end
  local done = #vim.tbl_filter(function(e) return e.status == "completed" end, entries)
  local title = ("Plan %d/%d"):format(done, #entries)
  if done == #entries then title = ("Plan: all %d steps done"):format(#entries) end
  if explanation and explanation ~= vim.NIL and explanation ~= "" then
    title = title .. " · " .. pick.one_line(explanation, 80)
  end
  local out = { { { title, "PiPlanTitle" } } }
  if done == #entries then return out end
  local first = 1
  if #entries > M.MAX then -- the leading completed steps as one line
    while first <= #entries and entries[first].status == "completed" and #entries - first + 2 > M.MAX do
      first = first + 1
    end
    if first > 1 then table.insert(out, { { ("  ✓ %d done"):format(first - 1), "PiPlanDone" } }) end
  end
  local room, last = M.MAX - (first > 1 and 1 or 0), #entries
  if last - first + 1 > room then last = first + room - 2 end
  for i = first, last do table.insert(out, step_line(entries[i])) end
  if last < #entries then table.insert(out, { { ("  … %d more"):format(#entries - last), "PiPlanPending" } }) end
  return out
end

---@param event pi.PlanUpdated
function M.update(event)
  shown = { entries = event.entries or {}, explanation = event.explanation }
  input.set_section("plan", M.lines(shown.entries, shown.explanation))
end

function M.clear() M.update({ entries = {} }) end

-- The plan shown: { entries, explanation } (for tests).
function M.current() return shown end

return M
