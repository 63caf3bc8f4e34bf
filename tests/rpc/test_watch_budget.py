"""The inotify watches of all of the user's daemons come from one budget, through real daemons:
the second daemon gets only what the first left, reads its tree in full instead (its turn diff
still right), and a killed daemon's share is free again."""

import os
import tempfile

import pytest

from helpers import git_repo, wait_until
from loopback import LoopbackServer, Reply, openai_text
from test_tools_e2e import calls, project

BUDGET = "40"  # all daemons together; each workspace needs 1 + 25 folders


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def watches(pid: int) -> int:
    """The inotify watches the process holds (the kernel's own count, /proc/<pid>/fdinfo)."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                count += sum(line.startswith("inotify wd:") for line in f)
        except OSError:
            pass
    return count


def workspace(root) -> None:
    root.mkdir()
    for n in range(25):
        (root / f"pkg{n}").mkdir()
        (root / f"pkg{n}" / "f.txt").write_text("one\n")
    (root / ".gitignore").write_text("/.pi/\n")
    git_repo(root)


def daemon(spawn, root, server, home: str):
    server.script(calls(("b", "bash", {"command": "echo two >> pkg7/f.txt"})), Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(root, server),
              env={"PI_DAEMON_HOME": home, "PI_DAEMON_INOTIFY_WATCHES": BUDGET})
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=60)
    diff = [e["event"] for e in d.events if e["event"]["type"] == "turn_diff"][-1]
    assert [(f["path"], f["diff"].splitlines()[-1]) for f in diff["files"]] == [("pkg7/f.txt", "+two")]
    return d


def test_daemons_share_one_budget_of_watches_and_a_killed_daemons_share_is_freed(spawn, tmp_path, server):
    home = tempfile.mkdtemp(prefix="pi-daemon-home-")  # one user's daemons: one home
    first, second = tmp_path / "first", tmp_path / "second"
    workspace(first)
    workspace(second)
    a = daemon(spawn, first, server, home)
    assert watches(a.proc.pid) == 26
    b = daemon(spawn, second, server, home)  # 14 left: not enough, so its tree is read in full
    assert watches(b.proc.pid) == 0 and watches(a.proc.pid) == 26
    a.proc.kill()
    a.proc.wait()
    c = daemon(spawn, second, server, home)  # the killed daemon's share is taken back
    wait_until(lambda: watches(c.proc.pid) == 26, "the third daemon watches its tree")
