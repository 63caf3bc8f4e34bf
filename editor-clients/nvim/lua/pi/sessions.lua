-- Sessions: :PiSessions (resume one), :PiFork (a new session from before a message of yours)
-- and :PiTree (continue from any entry of the session's tree). `pi` is require("pi").
local chat = require("pi.chat")
local render = require("pi.render")
local pick = require("pi.pick")
local M = {}

local function when(iso)
  return iso and iso ~= vim.NIL and (iso:gsub("T", " "):sub(1, 16)) or "?"
end

M.TITLE = 80 -- a session's title in the list is cut to this width

function M.label(s)
  local title = s.name ~= vim.NIL and s.name or s.firstMessage
  if title == nil or title == vim.NIL or title == "" then title = "(empty)" end
  title = pick.one_line(title, M.TITLE)
  return ("%s  %s  (%d messages)"):format(when(s.updatedAt), title, s.messageCount)
end

-- The sessions to resume: a subagent's (parentSessionId) right under its parent, marked ↳
-- (loading it continues that child on its own); one whose parent is gone stays in its place.
function M.resume_items(sessions)
  local present, children = {}, {}
  for _, s in ipairs(sessions) do present[s.sessionId] = true end
  for _, s in ipairs(sessions) do
    local parent = s.parentSessionId
    if parent and parent ~= vim.NIL and present[parent] then
      children[parent] = children[parent] or {}
      table.insert(children[parent], s)
    end
  end
  local items = {}
  local function add(s, depth)
    table.insert(items, { session = s, line = (depth > 0 and "  ↳ " or "") .. M.label(s) })
    for _, child in ipairs(children[s.sessionId] or {}) do add(child, depth + 1) end
  end
  for _, s in ipairs(sessions) do
    local parent = s.parentSessionId
    if not (parent and parent ~= vim.NIL and present[parent]) then add(s, 0) end
  end
  return items
end

function M.resume(pi)
  pi.request("session/list", {}, function(result)
    pick.select(M.resume_items(result.sessions),
                  { prompt = "Resume session", format_item = function(i) return i.line end }, function(item)
      if not item then return end
      chat.clear()
      pi.open()
      pi.request("session/load", { sessionId = item.session.sessionId, replay = true },
                 function() pi.refresh_status() end)
    end)
  end)
end

function M.fork(pi)
  pi.request("session/entries", {}, function(result)
    local users = vim.tbl_filter(function(e) return e.type == "message" and e.message.role == "user" end, result.entries)
    pick.select(users, { prompt = "Fork from", format_item = function(e) return render.content_text(e.message) end },
      function(choice)
        if not choice then return end
        pi.request("session/fork", { entryId = choice.id }, function(forked)
          chat.clear()
          pi.request("session/load", { sessionId = forked.sessionId, replay = true })
          vim.fn.setreg("p", forked.text)
          vim.notify("pi: forked; the message is in register p")
        end)
      end)
  end)
end

-- The session tree as select items, depth first: linear runs at one depth, one level
-- deeper at each branch point; the current entry is marked ●, its path │.
function M.tree_items(tree)
  local children, roots = {}, {}
  for _, node in ipairs(tree.nodes) do
    local parent = node.parentId
    if parent == nil or parent == vim.NIL then table.insert(roots, node)
    else
      children[parent] = children[parent] or {}
      table.insert(children[parent], node)
    end
  end
  local items, stack = {}, {}
  for i = #roots, 1, -1 do table.insert(stack, { node = roots[i], depth = #roots > 1 and 1 or 0 }) end
  while #stack > 0 do
    local top = table.remove(stack)
    local node = top.node
    local text = node.type == "message" and (node.role .. ": " .. (node.text or "")):gsub("%s+", " ")
      or node.type:gsub("_", " ")
    local mark = node.id == tree.leafId and "● " or (node.onPath and "│ " or "  ")
    local label = node.label and node.label ~= vim.NIL and ("  [" .. node.label .. "]") or ""
    table.insert(items, { id = node.id, current = node.id == tree.leafId,
                          line = string.rep("  ", top.depth) .. mark .. text:sub(1, 80) .. label })
    local kids = children[node.id] or {}
    for i = #kids, 1, -1 do table.insert(stack, { node = kids[i], depth = top.depth + (#kids > 1 and 1 or 0) }) end
  end
  return items
end

-- :PiTree — pick an entry of the session's tree and continue from there (redraws the chat).
function M.tree(pi, summarize)
  pi.request("session/tree", {}, function(tree)
    pick.select(M.tree_items(tree), { prompt = "Continue from", format_item = function(i) return i.line end },
      function(choice)
        if not choice then return end
        pi.request("session/navigate", { entryId = choice.id, summarize = summarize or false }, function(moved)
          pi.status().session = moved.state.sessionId
          pi.redraw()
        end)
      end)
  end)
end

return M
