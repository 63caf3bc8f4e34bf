-- The editor's language servers as the agent's: the daemon's editor/* requests answered by the
-- language servers attached in Neovim (vim.lsp), and vim.diagnostic for diagnostics.
-- A handler runs in the coroutine vim.lsp.rpc gives each server request and yields while the
-- servers work, so the editor never waits. A file with no server attached gets a clear error;
-- editor/languageStatus says which servers cover a file and which are still loading, so that
-- the daemon never takes "no server" or "not ready" for "no errors".
local M = {}

M.features = { diagnostics = true, definition = true, references = true, documentSymbols = true,
               workspaceSymbols = true, hover = true, status = true }

-- $/progress work in flight (a project being loaded, indexed, linted), per client id: the
-- tokens begun and not yet ended, kept from LspProgress since this module was loaded.
local in_flight = {}
vim.api.nvim_create_autocmd("LspProgress", {
  group = vim.api.nvim_create_augroup("pi.language.progress", { clear = true }),
  callback = function(event)
    local params = event.data and event.data.params or {}
    local value, id = params.value, event.data and event.data.client_id
    if type(value) ~= "table" or not id then return end
    in_flight[id] = in_flight[id] or {}
    if value.kind == "begin" then in_flight[id][params.token] = true
    elseif value.kind == "end" then in_flight[id][params.token] = nil end
  end,
})

local QUIET_MS, QUIET_CLEAN_MS = 400, 2500 -- see settle()
local ATTACH_MS, ANSWER_MS = 5000, 20000
local FIRST_REPORT_MS = 10000 -- at most, for the diagnostics of a file loaded to be asked about

-- Runs start(resume) and yields until resume is called or `ms` pass (then returns nil).
local function await(start, ms)
  local co = coroutine.running()
  local done = false
  local timer = vim.uv.new_timer()
  local function resume(...)
    if done then return end
    done = true
    timer:stop()
    timer:close()
    local args = { ... }
    vim.schedule(function() coroutine.resume(co, unpack(args)) end)
  end
  timer:start(ms, 0, function() resume(nil) end)
  start(resume)
  return coroutine.yield()
end

local function path_of(uri) return vim.uri_to_fname(uri) end

-- The buffer Neovim has for a file, or nil: none is made (a buffer made for a file that does not
-- exist yet would refuse to save over it once the agent creates it).
local function existing(uri)
  local bufnr = vim.fn.bufnr(vim.uri_to_fname(uri))
  return bufnr > 0 and bufnr or nil
end

-- The file's buffer, loaded (the language servers attach to buffers of their filetypes).
local function buffer(uri)
  local bufnr = existing(uri) or vim.uri_to_bufnr(uri)
  if not vim.api.nvim_buf_is_loaded(bufnr) then vim.fn.bufload(bufnr) end
  if vim.bo[bufnr].filetype == "" then
    vim.api.nvim_buf_call(bufnr, function() vim.cmd("filetype detect") end)
  end
  return bufnr
end

local function clients(bufnr, method)
  return vim.tbl_filter(function(c) return not method or c:supports_method(method, bufnr) end,
                        vim.lsp.get_clients({ bufnr = bufnr }))
end

-- The buffer's servers that answer `method` (nil: any), waiting a little for one to attach to a
-- buffer just loaded.
local function servers(bufnr, method)
  local found = clients(bufnr, method)
  if #found > 0 then return found end
  await(function(resume)
    vim.api.nvim_create_autocmd("LspAttach", { buffer = bufnr, once = true, callback = function() resume(true) end })
  end, ATTACH_MS)
  return clients(bufnr, method)
end

local function no_server(uri, method)
  return nil, vim.lsp.rpc.rpc_response_error(-32603, ("no language server attached to %s in Neovim answers %s")
                                             :format(path_of(uri), method))
end

-- Every attached server's answer to an LSP request about a buffer, as one list.
local function missing(uri)
  if vim.uv.fs_stat(vim.uri_to_fname(uri)) or existing(uri) then return nil end
  return vim.lsp.rpc.rpc_response_error(-32603, ("%s does not exist"):format(path_of(uri)))
end

local function ask(uri, method, params)
  local gone = missing(uri)
  if gone then return nil, gone end
  local bufnr = buffer(uri)
  if #servers(bufnr, method) == 0 then return no_server(uri, method) end
  local results = await(function(resume) vim.lsp.buf_request_all(bufnr, method, params, resume) end, ANSWER_MS)
  if results == nil then
    return nil, vim.lsp.rpc.rpc_response_error(-32603, method .. ": the language servers did not answer in time")
  end
  local all = {}
  for _, answer in pairs(results) do
    local result = answer.result
    if type(result) == "table" and result[1] == nil and next(result) ~= nil then result = { result } end
    for _, item in ipairs(type(result) == "table" and result or {}) do table.insert(all, item) end
  end
  return all
end

local function location(l)
  if l.targetUri then return { uri = l.targetUri, range = l.targetSelectionRange or l.targetRange } end
  return { uri = l.uri, range = l.range }
end

local function locations(found, err)
  if found == nil then return nil, err end
  return vim.tbl_map(location, found)
end

local function text_position(params)
  return { textDocument = { uri = params.uri }, position = params.position }
end

function M.definition(params)
  return locations(ask(params.uri, "textDocument/definition", text_position(params)))
end

function M.references(params)
  local request = vim.tbl_extend("force", text_position(params),
                                 { context = { includeDeclaration = params.includeDeclaration ~= false } })
  return locations(ask(params.uri, "textDocument/references", request))
end

local function document_symbol(s)
  if s.location then -- SymbolInformation: a flat list
    return { name = s.name, kind = s.kind, range = s.location.range, selectionRange = s.location.range }
  end
  return { name = s.name, kind = s.kind, range = s.range, selectionRange = s.selectionRange, detail = s.detail,
           children = s.children and vim.tbl_map(document_symbol, s.children) or nil }
end

function M.documentSymbols(params)
  local found, err = ask(params.uri, "textDocument/documentSymbol", { textDocument = { uri = params.uri } })
  if found == nil then return nil, err end
  return vim.tbl_map(document_symbol, found)
end

function M.workspaceSymbols(params)
  local all = vim.tbl_filter(function(c) return c:supports_method("workspace/symbol") end, vim.lsp.get_clients())
  if #all == 0 then
    return nil, vim.lsp.rpc.rpc_response_error(-32603, "no language server in Neovim answers workspace/symbol")
  end
  local found = {}
  for _, client in ipairs(all) do
    local answer = await(function(resume)
      client:request("workspace/symbol", { query = params.query }, function(_, result) resume(result or {}) end)
    end, ANSWER_MS)
    for _, s in ipairs(answer or {}) do
      table.insert(found, { name = s.name, kind = s.kind, location = location(s.location),
                            containerName = s.containerName })
    end
  end
  return found
end

local function marked(content)
  if type(content) == "string" then return content end
  if content.language then return "```" .. content.language .. "\n" .. content.value .. "\n```" end
  if content.kind then return content.value end
  return table.concat(vim.tbl_map(marked, content), "\n\n")
end

function M.hover(params)
  local gone = missing(params.uri)
  if gone then return nil, gone end
  local bufnr = buffer(params.uri)
  if #servers(bufnr, "textDocument/hover") == 0 then return no_server(params.uri, "textDocument/hover") end
  local results = await(function(resume)
    vim.lsp.buf_request_all(bufnr, "textDocument/hover", text_position(params), resume)
  end, ANSWER_MS) or {}
  local parts = {}
  for _, answer in pairs(results) do
    if answer.result and answer.result.contents then
      local shown = marked(answer.result.contents)
      if vim.trim(shown) ~= "" then table.insert(parts, shown) end
    end
  end
  if #parts == 0 then return vim.NIL end
  return { contents = { kind = "markdown", value = table.concat(parts, "\n\n---\n\n") } }
end

-- Diagnostics of buffers the agent just changed, once their servers have reported on the change:
-- a report, then a quiet moment (longer after a report of no problems: servers report in steps),
-- at most `ms` in all. A buffer no server is attached to is answered at once.
local function settle(buffers, ms)
  local watched = vim.tbl_filter(function(b) return #vim.lsp.get_clients({ bufnr = b }) > 0 end, buffers)
  if #watched == 0 or ms <= 0 then return end
  await(function(resume)
    local quiet
    local group = vim.api.nvim_create_augroup("pi.settle." .. tostring(coroutine.running()), { clear = true })
    local function finish()
      pcall(vim.api.nvim_del_augroup_by_id, group)
      resume(true)
    end
    vim.api.nvim_create_autocmd("DiagnosticChanged", { group = group, buffer = nil, callback = function(event)
      if not vim.tbl_contains(watched, event.buf) then return end
      if quiet then quiet:stop() quiet:close() end
      local problems = false
      for _, b in ipairs(watched) do problems = problems or #vim.diagnostic.get(b) > 0 end
      quiet = vim.defer_fn(finish, problems and QUIET_MS or QUIET_CLEAN_MS)
    end })
    vim.defer_fn(finish, ms)
  end, ms + 100)
end

local function diagnostic(d, bufnr)
  local lsp = d.user_data and d.user_data.lsp
  if lsp and lsp.range then
    return { range = lsp.range, message = lsp.message or d.message, severity = lsp.severity or d.severity,
             code = lsp.code, source = lsp.source }
  end
  local line = vim.api.nvim_buf_get_lines(bufnr, d.lnum, d.lnum + 1, false)[1] or ""
  local character = vim.str_utfindex(line, "utf-16", math.min(d.col, #line))
  local at = { line = d.lnum, character = character }
  return { range = { start = at, ["end"] = at }, message = d.message, severity = d.severity, code = d.code,
           source = d.source }
end

function M.diagnostics(params)
  local pairs_ = {}
  local opened = {}
  if params.uris and params.uris ~= vim.NIL then
    for _, uri in ipairs(params.uris) do
      local bufnr = existing(uri)
      if not (bufnr and vim.api.nvim_buf_is_loaded(bufnr)) then
        bufnr = nil
        -- a file that a running server covers (M.status) but no buffer holds has no report yet:
        -- it is loaded, so that the server looks at it, and its first report waited for
        if #M.status({ uri = uri }).servers > 0 and not missing(uri) then
          bufnr = buffer(uri)
          servers(bufnr, nil)
          table.insert(opened, bufnr)
        end
      end
      table.insert(pairs_, { uri, bufnr })
    end
  else
    for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
      local name = vim.api.nvim_buf_get_name(bufnr)
      if vim.api.nvim_buf_is_loaded(bufnr) and name ~= "" and #vim.diagnostic.get(bufnr) > 0 then
        table.insert(pairs_, { vim.uri_from_bufnr(bufnr), bufnr })
      end
    end
  end
  local loaded = vim.tbl_map(function(p) return p[2] end, vim.tbl_filter(function(p) return p[2] ~= nil end, pairs_))
  if type(params.waitMs) == "number" then settle(loaded, params.waitMs)
  elseif #opened > 0 then settle(opened, FIRST_REPORT_MS) end
  local items = {}
  for _, p in ipairs(pairs_) do
    local list = p[2] and vim.tbl_map(function(d) return diagnostic(d, p[2]) end, vim.diagnostic.get(p[2])) or {}
    table.insert(items, { uri = p[1], diagnostics = list })
  end
  return { items = items }
end

-- Whether `path` is under one of a client's roots (its root_dir, its workspace folders).
local function under_root(client, path)
  local roots = client.root_dir and { client.root_dir } or {}
  for _, folder in ipairs(client.workspace_folders or {}) do table.insert(roots, vim.uri_to_fname(folder.uri)) end
  for _, root in ipairs(roots) do
    root = vim.fs.normalize(root)
    if path == root or vim.startswith(path, root .. "/") then return true end
  end
  return false
end

-- editor/languageStatus: the language servers that cover a file (attached to its buffer, or
-- running for its filetype with a root it is under when no buffer holds it) and those of them
-- with $/progress work in flight.
function M.status(params)
  local path = vim.fs.normalize(vim.uri_to_fname(params.uri))
  local bufnr = existing(params.uri)
  local found = {}
  if bufnr and vim.api.nvim_buf_is_loaded(bufnr) then
    for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr })) do found[client.id] = client end
  end
  local filetype = bufnr and vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].filetype
  if not filetype or filetype == "" then filetype = vim.filetype.match({ filename = path }) end
  for _, client in ipairs(vim.lsp.get_clients()) do
    local types = client.config.filetypes
    if filetype and types and vim.tbl_contains(types, filetype) and under_root(client, path) then
      found[client.id] = client
    end
  end
  local servers, loading = {}, {}
  for id, client in pairs(found) do
    if not client:is_stopped() then
      table.insert(servers, client.name)
      if next(in_flight[id] or {}) then table.insert(loading, client.name) end
    end
  end
  table.sort(servers)
  table.sort(loading)
  return { servers = servers, loading = loading }
end

local handlers = {
  ["editor/languageStatus"] = M.status,
  ["editor/diagnostics"] = M.diagnostics, ["editor/definition"] = M.definition,
  ["editor/references"] = M.references, ["editor/documentSymbols"] = M.documentSymbols,
  ["editor/workspaceSymbols"] = M.workspaceSymbols, ["editor/hover"] = M.hover,
}

-- (handled, result, error) for a request from the daemon.
function M.server_request(method, params)
  local handler = handlers[method]
  if not handler then return false end
  local result, err = handler(params)
  return true, result, err
end

return M
