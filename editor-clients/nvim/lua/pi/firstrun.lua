-- The first run: a prompt the daemon refused because no model is chosen (or its key is
-- missing) is kept, and a vim.ui.select flow leads to a model — one that has a key, a key
-- entered now, a local server (Ollama, llama.cpp, any URL) or the offline demo — then the
-- prompt is sent. Keys are kept with `secret-tool` (the OS keyring) when it is installed, else
-- only for this Neovim session, and are given to the daemon (setApiKey) after each start.
-- Also :PiModel's picker, and the keys and servers :PiKey (lua/pi/access.lua) manages: a key
-- removed there is forgotten here too. `pi` is require("pi").
local pick = require("pi.pick")
local M = {}

M.KEY_PROVIDERS = { "anthropic", "openai", "openrouter", "google" } -- the hosted ones that take a key
local session_keys = {} -- provider -> key, when the keyring cannot hold it
-- provider -> key held in the keyring: looked up once per Neovim session (not at every daemon
-- start, crash restarts included), then kept in step with the keys stored from here
local keyring_keys, looked_up = {}, false
local forgotten = {} -- provider -> true: its key was removed (a keyring lookup still under way is dropped)

local function notify(msg, level) vim.notify("pi: " .. msg, level or vim.log.levels.INFO) end

local function keyring() return vim.fn.executable("secret-tool") == 1 end

local function keyring_args(provider) return { "service", "pi-daemon", "provider", provider } end

-- Keeps the key in the keyring (else for this session) and gives it to the daemon; `done(models)`.
function M.remember_key(pi, provider, key, done)
  forgotten[provider] = nil
  local function give()
    pi.request("setApiKey", { provider = provider, key = key }, function(result) done(result.models) end)
  end
  if not keyring() then
    session_keys[provider] = key
    notify(("the %s key is kept only until Neovim quits (install secret-tool to keep it in the keyring)")
           :format(provider))
    return give()
  end
  local cmd = vim.list_extend({ "secret-tool", "store", "--label=pi-daemon " .. provider .. " API key" },
                              keyring_args(provider))
  vim.system(cmd, { stdin = key }, vim.schedule_wrap(function(out)
    if out.code ~= 0 then
      session_keys[provider] = key
      notify(("secret-tool could not store the %s key (%s): kept only until Neovim quits")
             :format(provider, vim.trim(out.stderr or "")), vim.log.levels.WARN)
    else keyring_keys[provider] = key end
    give()
  end))
end

-- After each daemon start: the keys entered earlier (this session's, the keyring's).
function M.send_keys(pi)
  local function give(provider, key) pi.request("setApiKey", { provider = provider, key = key }) end
  for provider, key in pairs(session_keys) do give(provider, key) end
  for provider, key in pairs(keyring_keys) do
    if not session_keys[provider] then give(provider, key) end
  end
  if looked_up or not keyring() then return end
  looked_up = true
  for _, provider in ipairs(M.KEY_PROVIDERS) do
    if not session_keys[provider] and not keyring_keys[provider] then
      vim.system(vim.list_extend({ "secret-tool", "lookup" }, keyring_args(provider)), {}, vim.schedule_wrap(function(out)
        local key = vim.trim(out.stdout or "")
        if out.code == 0 and key ~= "" and not keyring_keys[provider] and not forgotten[provider] then
          keyring_keys[provider] = key
          if not session_keys[provider] then give(provider, key) end
        end
      end))
    end
  end
end

-- Forgets the key of `provider` here (this session's, the keyring's) and in the daemon
-- (removeApiKey): the next start does not send it again. `done(result)`: modelAccess's answer.
function M.forget_key(pi, provider, done)
  session_keys[provider], keyring_keys[provider], forgotten[provider] = nil, nil, true
  if keyring() then
    vim.system(vim.list_extend({ "secret-tool", "clear" }, keyring_args(provider)), {}, vim.schedule_wrap(function(out)
      if out.code ~= 0 then
        notify(("secret-tool could not remove the %s key: %s"):format(provider, vim.trim(out.stderr or "")),
               vim.log.levels.WARN)
      end
    end))
  end
  pi.request("removeApiKey", { provider = provider }, done)
end

-- A key is read with inputsecret() whatever vim.ui.input is installed: Neovim's own echoes what
-- is typed and others (snacks.nvim's) ignore `secret`.
local function read_secret(prompt, on_key)
  local ok, key = pcall(vim.fn.inputsecret, prompt)
  key = ok and type(key) == "string" and vim.trim(key) or ""
  on_key(key ~= "" and key or nil)
end

-- Reads a key for `provider`, keeps it and gives it to the daemon; `done(models)`, nil when
-- none was typed.
function M.ask_key(pi, provider, env_var, done)
  read_secret(("%s API key%s: "):format(provider, env_var and (" (" .. env_var .. ")") or ""), function(key)
    if not key then return done(nil) end
    M.remember_key(pi, provider, key, done)
  end)
end

-- The models to pick from: the current one marked, the unusable ones with the reason.
function M.model_items(result, current)
  local items = {}
  for _, m in ipairs(result.models) do
    local name = m.provider .. "/" .. m.id
    table.insert(items, { model = m, label = (name == current and "● " or "  ") .. name })
  end
  for _, u in ipairs(result.unavailable or {}) do
    -- the reason first: a picker cuts a long line at its end
    table.insert(items, { reason = u.reason,
                          label = "✗ " .. u.provider .. " — " .. u.reason .. ": " .. table.concat(u.models or {}, ", ") })
  end
  return items
end

local function set_model(pi, model, done)
  pi.request("setModel", { provider = model.provider, modelId = model.id }, function()
    pi.refresh_status()
    done(model)
  end)
end

-- Picks one of `result`'s models with vim.ui.select and sets it; `done(model)`, nil if dismissed.
function M.pick_model(pi, result, current, done)
  pick.select(M.model_items(result, current), { prompt = "Model (now " .. (current or "none") .. ")",
                                                  format_item = function(item) return item.label end },
    function(choice)
      if not choice then return done(nil) end
      if choice.reason then notify(choice.reason, vim.log.levels.WARN) return done(nil) end
      set_model(pi, choice.model, done)
    end)
end

-- Of a provider's models: the only one is taken, else the user picks.
local function use_one_of(pi, models, done)
  if #models == 0 then notify("that provider lists no models", vim.log.levels.ERROR) return done(nil) end
  if #models == 1 then return set_model(pi, models[1], done) end
  M.pick_model(pi, { models = models }, nil, done)
end

local function enter_key(pi, provider, env_var, done)
  M.ask_key(pi, provider, env_var, function(models)
    if not models then return done(nil) end
    use_one_of(pi, models, done)
  end)
end

-- A local model server found or typed in, added (addModelServer) and one of its models set;
-- `done(model)`, nil if the user gave up.
function M.local_server(pi, done)
  local function add(server)
    pi.request("addModelServer", { name = server.name, baseUrl = server.baseUrl }, function(added)
      use_one_of(pi, added.models, done)
    end)
  end
  local function typed(prompt)
    vim.ui.input({ prompt = prompt }, function(url)
      if not url or vim.trim(url) == "" then return done(nil) end
      pi.request("probeLocalServers", { urls = { vim.trim(url) } }, function(probed)
        local found = vim.tbl_filter(function(s) return s.baseUrl == vim.trim(url) end, probed.servers)
        if #found == 0 then
          notify(url .. " did not answer GET /models with a model list", vim.log.levels.ERROR)
          return done(nil)
        end
        add(found[1])
      end)
    end)
  end
  pi.request("probeLocalServers", {}, function(result)
    -- none answered: straight to the URL (a picker of one item would only lead there)
    if #result.servers == 0 then
      return typed("No Ollama (11434) or llama.cpp (8080) server answered. Server URL (OpenAI-compatible, "
                   .. "e.g. http://host:port/v1): ")
    end
    local items = {}
    for _, s in ipairs(result.servers) do
      table.insert(items, { server = s, label = ("%s at %s (%d models)"):format(s.name, s.baseUrl, #s.models) })
    end
    table.insert(items, { label = "Another server: enter its URL (OpenAI-compatible, e.g. http://host:port/v1)" })
    pick.select(items, { prompt = "Local model server", format_item = function(i) return i.label end }, function(choice)
      if not choice then return done(nil) end
      if choice.server then return add(choice.server) end
      typed("Server URL: ")
    end)
  end)
end

-- The ways to a model, as one picker; `done(model)` once one is set, nil if the user gave up.
function M.choose(pi, reason, done)
  pi.request("listModels", {}, function(result)
    local items = {}
    if reason.reason == "missingKey" and reason.provider then
      table.insert(items, { label = ("Enter the %s API key (%s)"):format(reason.provider, reason.envVar or "API key"),
                            run = function() enter_key(pi, reason.provider, reason.envVar, done) end })
    end
    local keyed = vim.tbl_filter(function(m) return m.provider ~= "faux" end, result.models)
    if #keyed > 0 then
      table.insert(items, { label = ("Use a model that has a key (%d)"):format(#keyed),
                            run = function() M.pick_model(pi, { models = keyed }, nil, done) end })
    end
    table.insert(items, { label = "Enter an API key (" .. table.concat(M.KEY_PROVIDERS, ", ") .. ")", run = function()
      pick.select(M.KEY_PROVIDERS, { prompt = "API key for" }, function(provider)
        if not provider then return done(nil) end
        enter_key(pi, provider, nil, done)
      end)
    end })
    table.insert(items, { label = "Use a local model server (Ollama, llama.cpp, or a URL)",
                          run = function() M.local_server(pi, done) end })
    table.insert(items, { label = "Try the offline demo (faux/echo: answers without a model, no key)",
                          run = function() set_model(pi, { provider = "faux", id = "echo" }, done) end })
    local prompt = reason.reason == "missingKey"
      and ("No %s API key (%s): how should pi answer?"):format(reason.provider or "", reason.envVar or "")
      or "No model is chosen yet: how should pi answer?"
    pick.select(items, { prompt = prompt, kind = "pi.firstrun", format_item = function(i) return i.label end },
                  function(choice)
                    if choice then choice.run() else done(nil) end
                  end)
  end)
end

-- A prompt failed: no model or no key leads to M.choose, and the prompt is sent once a model is
-- set (or, if the user gives up, put back in the input area); other errors are shown.
---@param prompt { text: string, behaviour: string|nil, context: table|nil }
function M.failed(pi, err, prompt)
  local data = type(err.data) == "table" and err.data or {}
  if err.code ~= -32004 or (data.reason ~= "noModel" and data.reason ~= "missingKey") then
    return notify(err.message or vim.inspect(err), vim.log.levels.ERROR)
  end
  notify("your message is kept and sent once a model is chosen")
  M.choose(pi, data, function(model)
    if model then
      notify(("model %s/%s; sending your message"):format(model.provider, model.id))
      return pi.prompt(prompt.text, prompt.behaviour, prompt.context)
    end
    notify("no model chosen (:PiModel chooses one); your message is back in the input area", vim.log.levels.WARN)
    pi.ask(prompt.context, prompt.text)
  end)
end

return M
