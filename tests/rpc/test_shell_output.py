"""Large outputs of the agent's bash cost linear time and bounded memory; spill files are bounded."""

import os
import time

from agent_shell import bash_call, script, tool_ends


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


def test_100_mb_of_output_is_fast_and_keeps_memory_bounded(spawn, tmp_path):
    size = 100 * 1024 * 1024
    d = spawn("--allow", "bash", "--faux-script", script(tmp_path, bash_call(f"yes 0123456789abcdef | head -c {size}")),
              "--model", "faux/s")
    d.call("getState")
    before = peak_rss_mb(d.proc.pid)
    began = time.monotonic()
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=60)
    elapsed = time.monotonic() - began
    end = tool_ends(d)[0]
    assert not end["isError"], end["result"]["content"][0]["text"][-500:]
    details = end["result"]["details"]
    assert details["truncated"] is True and os.path.getsize(details["fullOutputPath"]) == size
    assert len(end["result"]["content"][0]["text"]) < 60 * 1024
    assert elapsed < 15, f"{elapsed:.1f} s"
    assert peak_rss_mb(d.proc.pid) - before < 60


def test_spilled_outputs_are_bounded_by_age_and_size(spawn, tmp_path):
    spill = tmp_path / ".pi" / "tmp"
    spill.mkdir(parents=True)
    old, fresh, other = spill / "bash-old-1.log", spill / "bash-fresh-2.log", spill / "notes.txt"
    for f in (old, fresh, other):
        f.write_text("x")
    os.utime(old, (time.time() - 3 * 86400,) * 2)
    os.utime(other, (time.time() - 3 * 86400,) * 2)
    big = [spill / f"bash-big-{n}.log" for n in range(3)]
    for n, f in enumerate(big):
        with open(f, "wb") as out:
            out.truncate(200 * 1024 * 1024)  # sparse: the size counts, not the disk
        os.utime(f, (time.time() - 3600 + n,) * 2)
    d = spawn("--model", "faux/echo")
    d.call("getState")
    assert not old.exists() and fresh.exists() and other.exists()
    assert [f.exists() for f in big] == [False, True, True]  # the oldest goes past 512 MB
    (spill / "bash-old-3.log").write_text("x")
    os.utime(spill / "bash-old-3.log", (time.time() - 3 * 86400,) * 2)
    d.call("session/close", {})
    assert not (spill / "bash-old-3.log").exists()
