-- Commands of pi.nvim; everything else is in lua/pi/. Keymaps come with require("pi").setup().
if vim.g.loaded_pi then return end
vim.g.loaded_pi = true
local pi = function() return require("pi") end
local command = vim.api.nvim_create_user_command
command("Pi", function(o)
  if o.args == "" then pi().ask() else pi().send(o.args) end
end, { nargs = "*", desc = "Ask pi (steer / follow-up while it works); no text opens a prompt window",
       complete = function(lead, line) return pi().complete(lead, line) end })
command("PiSteer", function(o) pi().steer(o.args) end, { nargs = "+" })
command("PiFollowUp", function(o) pi().follow_up(o.args) end, { nargs = "+" })
command("PiAbort", function() pi().abort() end, {})
command("PiSessions", function() pi().sessions() end, {})
command("PiNew", function() pi().new() end, {})
command("PiFork", function() pi().fork() end, {})
command("PiTree", function(o) pi().tree(o.bang) end, { bang = true, desc = "Continue from an entry of the session tree (! summarises the branch left)" })
command("PiModel", function() pi().model() end, {})
command("PiChat", function() pi().open() end, {})
command("PiLog", function() pi().show_log() end, { desc = "The daemon's log (its stderr)" })
