-- pi.nvim: the pi-daemon coding agent in Neovim.
-- Talks JSON-RPC (Content-Length framing) to the daemon through vim.lsp.rpc, streams the
-- answer into a chat buffer (thinking and tool output folded), asks permissions with
-- vim.ui.select, and manages sessions.
-- Types: lua/pi/protocol.lua (LuaCATS, generated from the daemon's protocol declaration).
local protocol = require("pi.protocol")
local M = {}

---Called with what the daemon sends: ("notification" | "request" | "result", method, value).
---@type fun(kind: string, method: string, value: any)|nil
M.on_receive = nil

M.config = {
  cmd = { "pi-daemon" }, -- the daemon; extra arguments can follow
  model = nil, -- "provider/id", passed as --model
  permissions = true, -- ask before write / edit / bash
}

local state = { rpc = nil, buf = nil, busy = false, queue = { steering = {}, followUp = {} }, session = nil,
                open_block = nil, settled = 0 }

local function chat_buffer()
  if state.buf and vim.api.nvim_buf_is_valid(state.buf) then return state.buf end
  local buf = vim.api.nvim_create_buf(true, true)
  vim.api.nvim_buf_set_name(buf, "pi://chat")
  vim.bo[buf].filetype = "markdown"
  vim.bo[buf].buftype = "nofile"
  state.buf = buf
  return buf
end

local function set_folds(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    vim.wo[win].foldmethod = "marker"
    vim.wo[win].foldlevel = 0
  end
end

local queue_ns = vim.api.nvim_create_namespace("pi_queue")

-- The queue is shown under the last line, as virtual lines that are not part of the text.
local function show_queue()
  local buf = chat_buffer()
  vim.api.nvim_buf_clear_namespace(buf, queue_ns, 0, -1)
  local lines = {}
  for _, text in ipairs(state.queue.steering) do table.insert(lines, { { "  queued steer: " .. text, "Comment" } }) end
  for _, text in ipairs(state.queue.followUp) do table.insert(lines, { { "  queued follow-up: " .. text, "Comment" } }) end
  if #lines > 0 then
    vim.api.nvim_buf_set_extmark(buf, queue_ns, vim.api.nvim_buf_line_count(buf) - 1, 0, { virt_lines = lines })
  end
end

-- Append text to the end of the buffer; "\n" starts new lines. Cheap for every delta.
local function append(text)
  local buf = chat_buffer()
  local last = vim.api.nvim_buf_line_count(buf) - 1
  local line = vim.api.nvim_buf_get_lines(buf, last, last + 1, false)[1] or ""
  local lines = vim.split(text, "\n", { plain = true })
  vim.api.nvim_buf_set_text(buf, last, #line, last, #line, lines)
  if #state.queue.steering + #state.queue.followUp > 0 then show_queue() end
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
  end
end

local function line(text) append("\n" .. text) end

---@param message pi.AgentMessage
local function content_text(message)
  if type(message.content) == "string" then return message.content end
  local out = {}
  for _, block in ipairs(message.content or {}) do
    if block.type == "text" then table.insert(out, block.text) end
  end
  return table.concat(out)
end

local handlers = {}

-- A stored message (a replay) comes whole; a streaming one grows through message_update.
---@param m pi.AssistantMessage
local function render_assistant(m)
  for _, block in ipairs(m.content or {}) do
    if block.type == "text" then line(block.text)
    elseif block.type == "thinking" then line("thinking {{{") line(block.thinking or "") line("}}}")
    elseif block.type == "toolCall" then line("→ " .. block.name .. " " .. vim.json.encode(block.arguments)) end
  end
end

---@param event pi.MessageStart
function handlers.message_start(event)
  local m = event.message
  if m.role == "user" then line("") line("## you") line(content_text(m))
  elseif m.role == "assistant" then
    line("") line("## pi") line("")
    if m.stopReason ~= "pending" then render_assistant(m) end
  elseif m.role == "toolResult" and not state.busy then -- live results were shown by tool_execution_*
    line(m.toolName .. " output {{{") line(content_text(m)) line("}}}")
  elseif m.role == "bashExecution" then line("") line("$ " .. m.command) line(m.output or "") end
end

---@param event pi.MessageUpdate
function handlers.message_update(event)
  local e = event.assistantMessageEvent
  if e.type == "text_start" then if state.open_block then line("") end state.open_block = "text"
  elseif e.type == "text_delta" or e.type == "thinking_delta" then append(e.delta)
  elseif e.type == "thinking_start" then line("thinking {{{") line("") state.open_block = "thinking"
  elseif e.type == "thinking_end" then line("}}}") state.open_block = nil
  elseif e.type == "toolcall_end" then line("→ " .. e.toolCall.name .. " " .. vim.json.encode(e.toolCall.arguments))
  end
end

---@param event pi.MessageEnd
function handlers.message_end(event)
  local m = event.message
  state.open_block = nil
  if m.role == "assistant" and (m.stopReason == "error" or m.stopReason == "aborted") then
    line("[" .. m.stopReason .. ": " .. (m.errorMessage or "") .. "]")
  end
end

---@param event pi.ToolExecutionStart
function handlers.tool_execution_start(event)
  line(event.toolName .. " output {{{")
end

---@param event pi.ToolExecutionEnd
function handlers.tool_execution_end(event)
  local out = {}
  for _, block in ipairs(event.result.content or {}) do
    if block.type == "text" then table.insert(out, block.text) end
  end
  line(table.concat(out)) line("}}}" .. (event.isError and " (error)" or ""))
  set_folds(chat_buffer())
end

---@param event pi.QueueUpdate
function handlers.queue_update(event)
  state.queue = { steering = event.steering, followUp = event.followUp }
  vim.b[chat_buffer()].pi_queue = state.queue
  show_queue()
end

function handlers.agent_start() state.busy = true end

---@param event pi.AgentSettled
function handlers.agent_settled(event)
  state.busy = false
  state.settled = state.settled + 1
  line("")
  line(event.aborted and "— aborted —" or "—")
end

---@param params pi.AgentEventParams
local function on_event(params)
  state.session = params.sessionId
  local handler = handlers[params.event.type]
  if handler then handler(params.event) end
end

local choice_labels = { allow_once = "Allow once", allow_session = "Allow this session", allow_always = "Always allow",
                        reject_once = "Reject", reject_always = "Always reject" }
local remembering = { allow_session = true, allow_always = true, reject_always = true }

-- One label per offered outcome; the ones that remember say what they would remember.
function M.permission_label(outcome, params)
  local label = choice_labels[outcome] or outcome
  if remembering[outcome] and params.remember then label = label .. ": " .. params.remember.label end
  return label
end

---@param params pi.PermissionRequestParams
---@return pi.PermissionRequestResult
local function permission(params)
  local items = params.options or { "allow_once", "allow_always", "reject_once", "reject_always" }
  local choice, done = nil, false
  vim.ui.select(items, { prompt = params.title, format_item = function(item) return M.permission_label(item, params) end },
                function(item) choice, done = item, true end)
  vim.wait(((params.timeoutSeconds or 600) + 1) * 1000, function() return done end, 50)
  return { outcome = choice or "cancelled" }
end

---@param event pi.PermissionTimeout
function handlers.permission_timeout(event)
  line(("[%s was not run: nobody answered the permission request within %s s]"):format(event.toolName,
                                                                                      event.timeoutSeconds))
end

-- workspace/trust: answered asynchronously. vim.lsp.rpc runs server requests in a coroutine,
-- so it yields until vim.ui.select calls back; no answer (dismissed) is an error reply,
-- which the daemon does not remember.
---@param params pi.WorkspaceTrustParams
---@return pi.WorkspaceTrustResult|nil, table|nil
local function workspace_trust(params)
  local co = coroutine.running()
  local lines = {}
  for _, r in ipairs(params.reasons or {}) do table.insert(lines, r.field .. ": " .. r.effect) end
  local prompt = "Trust workspace " .. params.workspace .. "? Until then pi ignores: " .. table.concat(lines, "; ")
  vim.ui.select({ "Trust", "Don't trust" }, { prompt = prompt }, function(item)
    vim.schedule(function() coroutine.resume(co, item) end)
  end)
  local item = coroutine.yield()
  if item == nil then return nil, vim.lsp.rpc.rpc_response_error(-32800, "not answered") end
  return { trusted = item == "Trust" }
end

---@param method string a method of protocol.methods
---@param params table|nil
---@param callback fun(result: any)|nil
function M.request(method, params, callback)
  assert(state.rpc, "pi-daemon is not running: call require('pi').start()")
  assert(protocol.methods[method] ~= nil, "pi: the daemon has no method " .. method)
  if params == nil or vim.tbl_isempty(params) then params = vim.empty_dict() end -- {} would be a JSON array
  state.rpc.request(method, params, function(err, result)
    vim.schedule(function()
      if not err and M.on_receive then M.on_receive("result", method, result) end
      if err then vim.notify("pi: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      elseif callback then callback(result) end
    end)
  end)
end

function M.start(opts)
  M.config = vim.tbl_deep_extend("force", M.config, opts or {})
  if state.rpc and not state.rpc.is_closing() then return end
  local cmd = vim.deepcopy(M.config.cmd)
  if M.config.model then vim.list_extend(cmd, { "--model", M.config.model }) end
  state.busy, state.settled, state.queue = false, 0, { steering = {}, followUp = {} }
  local rpc
  rpc = vim.lsp.rpc.start(cmd, {
    notification = function(method, params)
      if M.on_receive then M.on_receive("notification", method, params) end
      if method == "agent/event" then vim.schedule(function() on_event(params) end) end
    end,
    server_request = function(method, params)
      if M.on_receive then M.on_receive("request", method, params) end
      if method == "permission/request" then return permission(params) end
      if method == "workspace/trust" then return workspace_trust(params) end
      return nil, { code = -32601, message = "unknown method " .. method }
    end,
    on_exit = function(code, signal)
      vim.schedule(function()
        if state.rpc == rpc then state.rpc = nil end -- not a newer connection's
        if code ~= 0 and signal ~= 15 then vim.notify("pi-daemon exited: " .. code .. "/" .. signal) end
      end)
    end,
  }, { cwd = M.config.cwd or vim.fn.getcwd(), env = M.config.env })
  state.rpc = rpc
  M.request("initialize", { protocolVersion = protocol.PROTOCOL_VERSION, clientInfo = { name = "pi.nvim" },
                            capabilities = { permissions = M.config.permissions, workspaceTrust = true } })
end

function M.open()
  local buf = chat_buffer()
  if #vim.fn.win_findbuf(buf) == 0 then vim.cmd("botright vsplit") vim.api.nvim_win_set_buf(0, buf) end
  set_folds(buf)
end

function M.prompt(text, behaviour)
  M.start() M.open()
  M.request("prompt", { text = text, streamingBehavior = behaviour })
end

function M.send(text)
  if state.busy then
    vim.ui.select({ "steer", "followUp" }, { prompt = "pi is working; send as" }, function(choice)
      if choice then M.prompt(text, choice) end
    end)
  else M.prompt(text) end
end

function M.steer(text) M.request("steer", { text = text }) end
function M.follow_up(text) M.request("followUp", { text = text }) end
function M.abort() M.request("abort") end
function M.new() M.start() M.request("session/new", {}, function() vim.api.nvim_buf_set_lines(chat_buffer(), 0, -1, false, {}) end) end

function M.sessions()
  M.start()
  M.request("session/list", {}, function(result)
    vim.ui.select(result.sessions, {
      prompt = "Resume session",
      format_item = function(s) return (s.name or s.firstMessage) .. "  (" .. s.messageCount .. " messages)" end,
    }, function(choice)
      if not choice then return end
      vim.api.nvim_buf_set_lines(chat_buffer(), 0, -1, false, {})
      M.open()
      M.request("session/load", { sessionId = choice.sessionId, replay = true })
    end)
  end)
end

function M.fork()
  M.request("session/entries", {}, function(result)
    local users = vim.tbl_filter(function(e) return e.type == "message" and e.message.role == "user" end, result.entries)
    vim.ui.select(users, { prompt = "Fork from", format_item = function(e) return content_text(e.message) end },
      function(choice)
        if not choice then return end
        M.request("session/fork", { entryId = choice.id }, function(forked)
          vim.api.nvim_buf_set_lines(chat_buffer(), 0, -1, false, {})
          M.request("session/load", { sessionId = forked.sessionId, replay = true })
          vim.fn.setreg("p", forked.text)
          vim.notify("pi: forked; the message is in register p")
        end)
      end)
  end)
end

function M.model()
  M.start()
  M.request("listModels", {}, function(result)
    vim.ui.select(result.models, { prompt = "Model", format_item = function(m) return m.provider .. "/" .. m.id end },
      function(choice)
        if choice then M.request("setModel", { provider = choice.provider, modelId = choice.id }) end
      end)
  end)
end

function M.status() return state end

function M.stop()
  if state.rpc then state.rpc.terminate() state.rpc = nil end
end

return M
