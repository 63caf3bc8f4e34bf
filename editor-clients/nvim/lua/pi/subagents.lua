-- Subagents: the `task` tool's child sessions. Their progress shows in the task call's fold
-- (the daemon streams it as that call's output); here they are tracked by session id so the
-- chat ignores their own events, and :PiSubagents can open or stop one.
local M = { children = {}, order = {} }

function M.reset() M.children, M.order = {}, {} end

-- Events of a child are not the chat's, unless the user opened that child in it.
function M.owns(session_id)
  local child = M.children[session_id]
  return child ~= nil and not child.opened
end

---@param event pi.SubagentStart
function M.started(event)
  if not M.children[event.sessionId] then table.insert(M.order, event.sessionId) end
  M.children[event.sessionId] = { id = event.sessionId, toolCallId = event.toolCallId,
                                  description = event.description, status = "running" }
end

---@param event pi.SubagentEnd
function M.ended(event)
  local child = M.children[event.sessionId]
  if child then child.status = event.status child.cost = event.cost end
end

-- What a child is doing, from its own events: its latest tool, for the picker.
function M.child_event(params)
  local child = M.children[params.sessionId]
  local event = params.event
  if child and event.type == "tool_execution_start" then child.doing = event.toolName end
end

function M.items()
  local items = {}
  for _, id in ipairs(M.order) do
    local c = M.children[id]
    table.insert(items, { child = c, line = ("[%s] %s%s"):format(c.status, c.description,
                                                                 c.doing and c.status == "running" and (" · " .. c.doing) or "") })
  end
  return items
end

return M
