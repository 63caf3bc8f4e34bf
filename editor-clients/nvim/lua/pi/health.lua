-- :checkhealth pi
local M = {}

function M.check()
  vim.health.start("pi.nvim")
  if vim.fn.has("nvim-0.10") == 1 then vim.health.ok("Neovim " .. tostring(vim.version()))
  else vim.health.error("Neovim 0.10 or newer is needed") end
  local cmd = require("pi").config.cmd
  if vim.fn.executable(cmd[1]) == 1 then
    local out = vim.fn.system(vim.list_extend(vim.deepcopy(cmd), { "--version" }))
    if vim.v.shell_error == 0 then vim.health.ok(vim.trim(out)) else vim.health.error("`" .. cmd[1] .. " --version` failed: " .. out) end
  else
    vim.health.error("`" .. cmd[1] .. "` is not executable", { "pip install pi-daemon, or set require('pi').setup({cmd = {...}})" })
  end
end

return M
