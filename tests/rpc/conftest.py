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
