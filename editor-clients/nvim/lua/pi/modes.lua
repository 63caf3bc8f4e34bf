-- The session's mode: plan (read-only tools, the agent answers with a plan), ask (the
-- default) or auto-edit (writes and edits without asking, commands still ask).
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

return M
