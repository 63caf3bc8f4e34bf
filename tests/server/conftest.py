import pytest

from servers import Runtime


@pytest.fixture
def rt(tmp_path):
    runtime = Runtime(tmp_path / "ws")
    yield runtime
    runtime.stop()
