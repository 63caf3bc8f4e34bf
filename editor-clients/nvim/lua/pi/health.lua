-- :checkhealth pi
local M = {}

function M.check()
  vim.health.start("pi.nvim")
  if vim.fn.has("nvim-0.10") == 1 then vim.health.ok("Neovim " .. tostring(vim.version()))
  else vim.health.error("Neovim 0.10 or newer is needed") end
  local pi = require("pi")
  local cmd, why_not = require("pi.daemon").command(pi.config)
  if cmd then
    local out = vim.fn.system(vim.list_extend(vim.deepcopy(cmd), { "--version" }))
    if vim.v.shell_error == 0 then vim.health.ok(vim.trim(out) .. " (" .. cmd[1] .. ")")
    else vim.health.error("`" .. cmd[1] .. " --version` failed: " .. out) end
  else
    vim.health.error(why_not, { ":PiInstall installs it into a venv of its own",
                                "or point pi.nvim at it: require('pi').setup({ cmd = { '/path/to/pi-daemon' } })" })
  end
  if pi.did_setup then vim.health.ok("setup() was called; keymaps: " .. vim.inspect(pi.config.keymaps, { newline = " ", indent = "" }))
  else vim.health.info("setup() was not called: the commands work, no keymaps are set") end
end

return M
