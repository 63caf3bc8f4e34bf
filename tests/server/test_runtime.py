"""The runtime folder is used only when it is this user's alone; every command says why not."""

from __future__ import annotations

import os

import pytest

from servers import INITIALIZE


def _refused(rt, needle: str) -> None:
    for command in (["attach"], ["serve"], ["ps"]):
        args = [*command, "--workspace", str(rt.workspace)] if command != ["ps"] else command
        result = rt.run(*args, input=INITIALIZE)
        assert result.returncode == 2, (command, result.stderr)
        assert needle in result.stderr.decode() and "refusing to use it" in result.stderr.decode(), result.stderr
        assert b'"id":1' not in result.stdout
    assert not list(rt.folder.glob("*.sock"))


@pytest.mark.parametrize("mode", [0o755, 0o770, 0o701])
def test_a_runtime_folder_others_may_reach_is_refused(rt, mode):
    rt.folder.mkdir()
    os.chmod(rt.folder, mode)
    _refused(rt, f"has mode {mode:04o}")


def test_a_runtime_folder_that_is_a_symlink_is_refused(rt, tmp_path):
    real = tmp_path / "elsewhere"
    real.mkdir(mode=0o700)
    rt.folder.symlink_to(real)
    _refused(rt, "is a symlink")
    assert not list(real.iterdir())


def test_a_runtime_folder_of_another_user_is_refused(rt):
    assert os.geteuid() == 0, "making a folder another user owns needs root (the test machine's user)"
    rt.folder.mkdir(mode=0o700)
    os.chown(rt.folder, 65534, 65534)
    _refused(rt, "belongs to uid 65534")


def test_the_runtime_folder_without_xdg_runtime_dir_is_per_user_in_tmpdir(rt):
    env = {k: v for k, v in rt.env.items() if k != "XDG_RUNTIME_DIR"}
    env["TMPDIR"] = rt.dir
    bridge_env = {**env}
    result = rt.run("attach", "--workspace", str(rt.workspace), "--model", "faux/echo", "--idle-timeout", "1",
                    input=INITIALIZE, env=bridge_env)
    assert result.returncode == 0 and b'"id":1' in result.stdout
    folder = os.path.join(rt.dir, f"pi-daemon-{os.getuid()}")
    assert os.stat(folder).st_mode & 0o777 == 0o700
