-- Commands of pi.nvim; everything else is in lua/pi/init.lua.
if vim.g.loaded_pi then return end
vim.g.loaded_pi = true
local pi = function() return require("pi") end
local command = vim.api.nvim_create_user_command
command("Pi", function(o) pi().send(o.args) end, { nargs = "+", desc = "Ask pi (steer / follow-up while it works)" })
command("PiSteer", function(o) pi().steer(o.args) end, { nargs = "+" })
command("PiFollowUp", function(o) pi().follow_up(o.args) end, { nargs = "+" })
command("PiAbort", function() pi().abort() end, {})
command("PiSessions", function() pi().sessions() end, {})
command("PiNew", function() pi().new() end, {})
command("PiFork", function() pi().fork() end, {})
command("PiTree", function(o) pi().tree(o.bang) end, { bang = true, desc = "Continue from an entry of the session tree (! summarises the branch left)" })
command("PiModel", function() pi().model() end, {})
command("PiChat", function() pi().open() end, {})
