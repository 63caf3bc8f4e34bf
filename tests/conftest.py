import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent / "rpc"))
sys.path.insert(0, str(Path(__file__).parent / "llm"))


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
