-- Commands of pi.nvim; everything else is in lua/pi/. Keymaps come with require("pi").setup().
if vim.g.loaded_pi then return end
vim.g.loaded_pi = true
local pi = function() return require("pi") end
local command = vim.api.nvim_create_user_command
command("Pi", function(o)
  local context = o.range > 0 and { require("pi.editfs").selection(o.line1, o.line2) } or nil
  if o.args == "" then pi().ask(context) return end
  pi().send(o.args, context)
end, { nargs = "*", range = true,
       desc = "Ask pi (steer / follow-up while it works); a range goes along as context; no text: the chat's input area",
       complete = function(lead, line) return pi().complete(lead, line) end })
command("PiSteer", function(o) pi().steer(o.args) end, { nargs = "+" })
command("PiFollowUp", function(o) pi().follow_up(o.args) end, { nargs = "+" })
command("PiAbort", function() pi().abort() end, {})
command("PiSessions", function(o) pi().sessions(o.args) end,
        { nargs = "*", desc = "Resume a session; with words: the sessions whose text holds them" })
command("PiNew", function() pi().new() end, {})
command("PiFork", function() pi().fork() end, {})
command("PiTree", function(o) pi().tree(o.bang) end, { bang = true, desc = "Continue from an entry of the session tree (! summarises the branch left)" })
command("PiModel", function() pi().model() end, {})
command("PiKey", function() pi().keys() end,
        { desc = "Manage model access: API keys per provider (enter, replace, remove), local model servers" })
command("PiRewind", function() pi().rewind() end,
        { desc = "Go back to before a message: the conversation, and the files if you confirm" })
command("PiMode", function(o) pi().mode(o.args) end, { nargs = "?", desc = "plan, ask or auto-edit",
        complete = function(lead)
          return vim.tbl_filter(function(m) return vim.startswith(m, lead) end, require("pi.modes").MODES)
        end })
command("PiExecutePlan", function(o) pi().execute_plan(o.bang) end,
        { bang = true, desc = "Carry out the plan: ask mode (! auto-edit) and tell the agent to go ahead" })
command("PiSubagents", function() pi().subagents() end, { desc = "Open or stop a subagent of this chat" })
command("PiProcesses", function() pi().processes() end,
        { desc = "The agent's background processes: stop one, read its output" })
command("PiContinue", function() pi().continue() end, { desc = "Answer again where the last answer was cut off" })
command("PiInstall", function() require("pi.install").run(pi()) end,
        { desc = "Install pi-daemon into a venv of its own (stdpath('data')/pi-daemon) from this plugin's repository" })
command("PiChanged", function(o) require("pi.changed").run(pi(), o.bang) end,
        { bang = true, desc = "The agent's unsaved edits to files no window shows: write them (! at once)" })
command("PiChat", function() pi().open() end, {})
command("PiLog", function() pi().show_log() end, { desc = "The daemon's log (its stderr)" })
command("PiInfo", function() pi().info() end,
        { desc = "How pi.nvim reaches the daemon: a shared server or a child, its pid, the session" })
local scopes = function() return { "hunk", "file", "run" } end
command("PiDiff", function(o) pi().diff(o.args) end, { nargs = "?", desc = "Review a run's changes (default: the latest)" })
command("PiAccept", function(o) pi().accept(o.args) end, { nargs = "?", complete = scopes })
command("PiRevert", function(o) pi().revert(o.args) end, { nargs = "?", complete = scopes })

-- Neovim opens, or :cd goes to, a workspace where you sent pi a prompt: the daemon is started
-- before it is asked for (lua/pi/used.lua; in attach mode the session shown last is loaded again
-- while its server runs, lua/pi/attach.lua). Elsewhere nothing more of the plugin is loaded.
-- Scheduled: a plugin manager calls setup() right after sourcing this file.
local group = vim.api.nvim_create_augroup("pi_prestart", {})
local function opened()
  vim.schedule(function() require("pi.used").opened(package.loaded["pi"] and package.loaded["pi"].config) end)
end
if vim.v.vim_did_enter == 1 then opened() else vim.api.nvim_create_autocmd("VimEnter", { group = group, once = true, callback = opened }) end
vim.api.nvim_create_autocmd("DirChanged", { group = group, callback = opened })
