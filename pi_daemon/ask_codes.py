"""The exit codes of ``pi-daemon ask`` (:mod:`pi_daemon.ask`), and their text for ``ask --help``
(docs/scripting.md lists them too)."""

OK, MODEL_FAILED, USAGE, REFUSED, INTERRUPTED = 0, 1, 2, 3, 130
ASK_EXIT_CODES = f"""exit codes:
  {OK}    the agent answered, or the built-in command ran
  {MODEL_FAILED}    the model request failed (the error is on stderr)
  {USAGE}    bad usage, a request the daemon refused (an unknown /command, /compact with
       nothing to compact, an unknown --session …), or the daemon could not start
  {REFUSED}    a tool call was refused for want of permission (stderr names the tools;
       --allow TOOLS or --yes lets them run)
  {INTERRUPTED}  interrupted by Ctrl-C (the run is aborted first)
  141  killed by SIGPIPE (as a shell reports it): stdout's reader went away, e.g.
       `| head -1`; the run is aborted, nothing is printed"""
