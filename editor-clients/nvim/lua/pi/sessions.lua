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

-- Loads a session into the chat; `query`: the cursor goes to the first line holding it once drawn.
local function load(pi, session_id, query)
  chat.clear()
  pi.open()
  if query then
    pi.status().after_replay = function()
      local buf = chat.buffer()
      for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
        if l:lower():find(query:lower(), 1, true) then
          for _, win in ipairs(vim.fn.win_findbuf(buf)) do vim.api.nvim_win_set_cursor(win, { i, 0 }) end
          return
        end
      end
    end
  end
  pi.request("session/load", { sessionId = session_id, replay = true }, function() pi.refresh_status() end)
end

M.SEARCH = "Search what was said in the sessions…"

-- The matches of session/search for `query`, each "date  title: snippet".
function M.match_label(m)
  local title = m.name ~= vim.NIL and m.name or m.firstMessage
  return ("%s  %s: %s"):format(when(m.timestamp), pick.one_line(title or "", 40), pick.one_line(m.snippet, M.TITLE))
end

-- :PiSessions {query}: the sessions whose text holds it, the one picked opened at the match.
function M.search(pi, query)
  pi.request("session/search", { query = query }, function(result)
    if #result.matches == 0 then vim.notify(("pi: no session says “%s”"):format(query)) return end
    pick.select(result.matches, { prompt = ("Sessions saying “%s”%s"):format(query, result.truncated and " (the first ones)" or ""),
                                  kind = "pi.sessions", format_item = M.match_label }, function(match)
      if match then load(pi, match.sessionId, query) end
    end)
  end)
end

-- :PiSessions: resume one, or (the last item) search their text.
function M.resume(pi, query)
  if query and query ~= "" then return M.search(pi, query) end
  pi.request("session/list", {}, function(result)
    local items = M.resume_items(result.sessions)
    if #items > 0 then table.insert(items, { line = M.SEARCH }) end
    pick.select(items, { prompt = "Resume session", kind = "pi.sessions", format_item = function(i) return i.line end },
      function(item)
        if not item then return end
        if item.session then return load(pi, item.session.sessionId) end
        vim.ui.input({ prompt = "Search the sessions for: " }, function(text)
          if text and vim.trim(text) ~= "" then M.search(pi, vim.trim(text)) end
        end)
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
