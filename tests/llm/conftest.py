import pytest

from loopback import LoopbackServer


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()
