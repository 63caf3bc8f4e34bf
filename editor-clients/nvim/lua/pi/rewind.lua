-- :PiRewind — go back to before a user message: the conversation and (if the user agrees)
-- the workspace's files as they were there. The daemon's dry run lists what would change
-- and what it would leave alone (files changed by hand since), and the user confirms.
local chat = require("pi.chat")
local pick = require("pi.pick")
local M = {}

-- The user messages of a session tree (file order) as picker items; those on the current
-- path are marked │, the others belong to branches left earlier.
function M.items(tree)
  local items = {}
  for _, node in ipairs(tree.nodes) do
    if node.type == "message" and node.role == "user" then
      local text = (node.text or ""):gsub("%s+", " ")
      table.insert(items, { id = node.id, parent = node.parentId, text = node.text or "",
                            line = (node.onPath and "│ " or "  ") .. text:sub(1, 100) })
    end
  end
  return items
end

-- What the confirmation shows, on one line: the files to change and those left alone.
function M.summary(preview)
  local parts = {}
  for _, f in ipairs(preview.files) do table.insert(parts, f.action .. " " .. f.path) end
  local text = #parts > 0 and table.concat(parts, ", ") or "no file changes"
  local left = {}
  for _, c in ipairs(preview.conflicts) do table.insert(left, c.path .. " (" .. c.reason .. ")") end
  if #left > 0 then text = text .. "; left alone: " .. table.concat(left, ", ") end
  return text
end

M.CHOICES = { "files", "keep", "cancel" }

-- Ask, then rewind to before `item` (its parent entry; nil/vim.NIL: the session's start).
-- `pi` is require("pi"); `done(result, files)` is called after the rewind.
function M.confirm(pi, item, done)
  local target = item.parent == nil and vim.NIL or item.parent
  pi.request("session/rewind", { entryId = target, dryRun = true }, function(preview)
    local labels = { files = "Rewind conversation and files: " .. M.summary(preview),
                     keep = "Rewind conversation only (keep the files)", cancel = "Cancel" }
    local prompt = ("Rewind to before “%s”?"):format((item.text:gsub("%s+", " ")):sub(1, 60))
    pick.select(M.CHOICES, { prompt = prompt, kind = "pi.rewind", format_item = function(c) return labels[c] end },
      function(choice)
        if not choice or choice == "cancel" then return end
        local files = choice == "files" and "revert" or "keep"
        pi.request("session/rewind", { entryId = target, files = files }, function(result)
          if done then done(result, files) end
        end)
      end)
  end)
end

-- The outcome for the user: how many files were taken back, which were left alone.
function M.report(result, files)
  if files == "keep" then return "rewound the conversation; the files were kept" end
  local msg = ("rewound the conversation and %d file(s)"):format(#result.files)
  if #result.conflicts > 0 then
    local left = {}
    for _, c in ipairs(result.conflicts) do table.insert(left, c.path .. " (" .. c.reason .. ")") end
    msg = msg .. "; left alone: " .. table.concat(left, ", ")
  end
  return msg
end

-- :PiRewind — pick a user message and go back to before it; the chat is redrawn from the
-- session, the outcome said under it, and the message's text comes back in the input area
-- to be edited and sent again. `pi` is require("pi").
function M.run(pi)
  pi.request("session/tree", {}, function(tree)
    pick.select(M.items(tree), { prompt = "Rewind to before", format_item = function(i) return i.line end },
      function(item)
        if not item then return end
        M.confirm(pi, item, function(result, files)
          local report = M.report(result, files)
          pi.redraw(function() chat.mark_end("[" .. report .. "]") end)
          vim.notify("pi: " .. report, #result.conflicts > 0 and vim.log.levels.WARN or nil)
          pi.ask(nil, item.text)
        end)
      end)
  end)
end

return M
