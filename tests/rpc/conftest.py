import pytest

from client import Daemon


@pytest.fixture
def spawn(tmp_path):
    started = []

    def start(*args, **kw):
        kw.setdefault("cwd", str(tmp_path))
        daemon = Daemon(*args, **kw)
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        daemon.kill()
    for daemon in started:
        # Expected failures are answered and logged in one line; a traceback is a bug.
        assert b"Traceback" not in daemon.stderr, daemon.stderr.decode()[-3000:]
