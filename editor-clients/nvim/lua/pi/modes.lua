-- The session's mode: plan (read-only tools, the agent answers with a plan), ask (the
-- default) or auto-edit (writes and edits without asking, commands still ask).
local pick = require("pi.pick")
local M = { MODES = { "plan", "ask", "auto-edit" } }

M.DESCRIPTIONS = {
  plan = "plan — read-only: the agent investigates and proposes a plan",
  ask = "ask — asks before writes, edits and commands",
  ["auto-edit"] = "auto-edit — writes and edits without asking; commands still ask",
}

M.GO_AHEAD = "Go ahead with the plan."

function M.valid(mode) return vim.tbl_contains(M.MODES, mode) end

-- What the chat says when a run in plan mode settles: how to carry the plan out.
M.PLAN_READY = "[plan ready: :PiExecutePlan carries it out in ask mode, :PiExecutePlan! in auto-edit]"

-- :PiMode [mode] — sets it; without one, the user picks (`current` marked in the prompt).
-- `pi` is require("pi"); `done(mode)` after the daemon took it.
function M.choose(pi, mode, current, done)
  local function set(choice) pi.request("setMode", { mode = choice }, function(result) done(result.mode) end) end
  if mode and mode ~= "" then
    if not M.valid(mode) then
      vim.notify("pi: the modes are " .. table.concat(M.MODES, ", "), vim.log.levels.ERROR)
      return
    end
    return set(mode)
  end
  pick.select(M.MODES, { prompt = "Mode (now " .. current .. ")", kind = "pi.mode",
                           format_item = function(m) return M.DESCRIPTIONS[m] end }, function(choice)
    if choice then set(choice) end
  end)
end

-- :PiExecutePlan[!] — carry out the plan: ask mode (auto-edit with !), then tell the agent to go ahead.
function M.execute_plan(pi, auto, done)
  pi.request("setMode", { mode = auto and "auto-edit" or "ask" }, function(result)
    done(result.mode)
    pi.send(M.GO_AHEAD)
  end)
end

return M
