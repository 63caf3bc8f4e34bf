-- :PiKey — manage model access: each provider as the daemon reaches it (modelAccess): where a
-- hosted provider's key comes from, which local servers there are, and the last refusal. A key
-- is entered, replaced or removed (kept as lua/pi/firstrun.lua keeps keys; one removed or
-- replaced is not sent again at the next start), a local server added or removed. Offered from
-- the chat when a provider refuses the credentials (an answer with errorKind "auth").
-- `pi` is require("pi").
local firstrun = require("pi.firstrun")
local pick = require("pi.pick")
local M = {}

local function notify(msg, level) vim.notify("pi: " .. msg, level or vim.log.levels.INFO) end

local KEY = { environment = "key from $%s", client = "key entered here", none = "no key ($%s): choose to enter one" }

-- One line per provider: its name, its key or server, how many models it gives, its last refusal.
---@param p pi.ProviderAccess
function M.label(p)
  local parts = { p.provider }
  if p.kind == "hosted" then table.insert(parts, KEY[p.key or "none"]:format(p.keyVariable or "?"))
  elseif p.kind == "server" then table.insert(parts, "server " .. (p.baseUrl or "?"))
  else table.insert(parts, "built in, no key") end
  -- (a hosted provider without a key: its reason would say to set the variable, which this view does)
  if not (p.kind == "hosted" and (p.key or "none") == "none") then
    table.insert(parts, p.models > 0 and ("%d model(s)"):format(p.models) or (p.reason or "no models"))
  end
  if p.lastError then table.insert(parts, "refused: " .. p.lastError) end
  return table.concat(parts, " · ")
end

-- What can be done about one provider.
local function actions(pi, p, again)
  local items = {}
  if p.kind == "hosted" then
    local verb = p.key == "client" and "Replace" or "Enter"
    local note = p.key == "environment" and (" ($%s is set: it wins while it is)"):format(p.keyVariable) or ""
    table.insert(items, { label = ("%s the %s key%s"):format(verb, p.provider, note), run = function()
      firstrun.ask_key(pi, p.provider, p.keyVariable, function(models)
        if not models then return notify("no key typed; nothing changed") end
        notify(("the %s key is set: %d model(s); :PiModel chooses one"):format(p.provider, #models))
      end)
    end })
    if p.key == "client" then
      table.insert(items, { label = ("Remove the %s key entered here"):format(p.provider), run = function()
        firstrun.forget_key(pi, p.provider, function() notify(("the %s key is removed"):format(p.provider)) again() end)
      end })
    end
  elseif p.kind == "server" and p.removable then
    table.insert(items, { label = ("Remove the server %s (%s)"):format(p.provider, p.baseUrl or ""), run = function()
      pi.request("removeModelServer", { name = p.provider }, function()
        notify(("the model server %s is removed"):format(p.provider))
        again()
      end)
    end })
  end
  return items
end

-- The view: the providers, then adding a local server. `provider`: go straight to that one's actions.
function M.manage(pi, provider)
  pi.start()
  local again = function() M.manage(pi) end
  pi.request("modelAccess", {}, function(result)
    local providers = vim.tbl_filter(function(p) return p.kind ~= "builtin" end, result.providers)
    for _, p in ipairs(providers) do
      if p.provider == provider and #actions(pi, p, again) > 0 then
        local items = actions(pi, p, again)
        return pick.select(items, { prompt = M.label(p), kind = "pi.access",
                                    format_item = function(i) return i.label end },
                           function(choice) if choice then choice.run() end end)
      end
    end
    local items = vim.tbl_map(function(p) return { provider = p, label = M.label(p) } end, providers)
    table.insert(items, { label = "Add a local model server (Ollama, llama.cpp, or a URL)", run = function()
      firstrun.local_server(pi, function(model)
        if model then notify(("model %s/%s, from the server added"):format(model.provider, model.id)) end
      end)
    end })
    pick.select(items, { prompt = "Model access", kind = "pi.access", format_item = function(i) return i.label end },
      function(choice)
        if not choice then return end
        if choice.run then return choice.run() end
        local todo = actions(pi, choice.provider, again)
        if #todo == 0 then return notify(choice.label .. ": nothing to change here") end
        if #todo == 1 then return todo[1].run() end
        pick.select(todo, { prompt = choice.label, kind = "pi.access", format_item = function(i) return i.label end },
                    function(action) if action then action.run() end end)
      end)
  end)
end

-- An answer failed because `provider` refused the credentials: say so, and offer to fix it.
---@param message pi.AssistantMessage
function M.refused(pi, message)
  local provider = message.errorProvider or "the provider"
  local items = { { label = "Manage model access (:PiKey)", run = function() M.manage(pi) end },
                  { label = "Not now", run = function() end } }
  if vim.tbl_contains(firstrun.KEY_PROVIDERS, provider) then
    table.insert(items, 1, { label = ("Enter a new %s key"):format(provider), run = function() M.manage(pi, provider) end })
  end
  pick.select(items, { prompt = ("%s refused the credentials (%s)"):format(provider, message.errorMessage or "no reason"),
                       kind = "pi.access", format_item = function(i) return i.label end },
              function(choice) if choice then choice.run() end end)
end

return M
