import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent / "rpc"))
sys.path.insert(0, str(Path(__file__).parent / "llm"))
sys.path.insert(0, str(Path(__file__).parent / "guard"))  # tests/tools shares its confinement helpers

import frame_check  # noqa: E402 (found through the path above)
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def frames_fit_the_protocol_schema():
    """Every frame a test exchanged with a daemon fits protocol.schema.json (see tests/rpc/frame_check.py)."""
    frame_check.take()
    yield
    violations = frame_check.take()
    assert not violations, "frames that do not fit protocol.schema.json:\n" + "\n".join(violations[:20])


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"{frame_check.CHECKED[0]} frames checked against protocol.schema.json")


def pytest_sessionfinish(session, exitstatus):
    # A skipped test is not a passed one: the suite fails unless everything ran.
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if skipped and exitstatus == 0:
        session.exitstatus = 1
        if reporter:
            reporter.write_line(f"FAILED: {skipped} test(s) were skipped; every test must run", red=True)


import os  # noqa: E402
import tempfile  # noqa: E402

# In-process tests never read the Pi installation's own models.json of whoever runs them.
os.environ["PI_CODING_AGENT_DIR"] = os.path.join(tempfile.mkdtemp(prefix="pi-agent-dir-"), "none")
# ... nor write into the daemon home of whoever runs them (the session index key lives there).
os.environ.setdefault("PI_DAEMON_HOME", tempfile.mkdtemp(prefix="pi-daemon-home-"))


def pytest_configure(config):
    config.addinivalue_line("markers", "llama_server: needs a real llama-server and the SmolLM2 weights")


def pytest_collection_modifyitems(config, items):
    # The real-server tests run where llama-server and the weights are installed, or where
    # PI_DAEMON_LLAMA=1 asks for them (then they fail without a server); elsewhere they are
    # deselected (not skipped: a skip fails the run).
    from llama_server_find import find_gguf, find_llama_server

    if (find_llama_server() and find_gguf()) or os.environ.get("PI_DAEMON_LLAMA") == "1":
        return
    kept = [item for item in items if item.get_closest_marker("llama_server") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept
