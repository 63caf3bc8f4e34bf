"""The file-access seam: the file tools reach files only through their FileAccess."""

from pathlib import Path

from test_confinement import run, text

from pi_daemon.tools.builtin import coding_tools
from pi_daemon.tools.file_access import DiskFiles
from pi_daemon.guard.workspace import Workspace


class Buffers(DiskFiles):
    """An editor: confined like the disk, but its text lives in buffers."""

    def __init__(self, workspace: Workspace) -> None:
        super().__init__(workspace)
        self.buffers: dict[Path, bytes] = {}

    async def read(self, path, purpose="read"):
        data, target = await super().read(path, purpose)  # the confinement
        return self.buffers.get(target, data), target

    async def write(self, path, data, purpose="write"):
        place = self.workspace.locate(path, purpose)
        existed = place.path in self.buffers or place.path.exists()
        self.buffers[place.path] = data
        return existed, place.path


async def test_file_tools_read_and_write_through_their_file_access(tmp_path):
    (tmp_path / "a.txt").write_text("disk\n")
    ws = Workspace(str(tmp_path))
    files = Buffers(ws)
    tools = {t.name: t for t in coding_tools(ws, files)}
    files.buffers[ws.root / "a.txt"] = b"buffer one\n"
    assert "buffer one" in text(await run(tools["read"], {"path": "a.txt"}))
    edited = await run(tools["edit"], {"path": "a.txt", "edits": [{"oldText": "one", "newText": "two"}]})
    assert not edited.is_error, text(edited)
    assert files.buffers[ws.root / "a.txt"] == b"buffer two\n"
    written = await run(tools["write"], {"path": "b.txt", "content": "new"})
    assert "Created b.txt" in text(written) and files.buffers[ws.root / "b.txt"] == b"new"
    assert (tmp_path / "a.txt").read_text() == "disk\n" and not (tmp_path / "b.txt").exists()


async def test_the_confinement_comes_before_the_file_access(tmp_path):
    ws = Workspace(str(tmp_path / "ws"))
    (tmp_path / "ws").mkdir()
    (tmp_path / "secret.txt").write_text("secret")
    files = Buffers(ws)
    tools = {t.name: t for t in coding_tools(ws, files)}
    outside = await run(tools["write"], {"path": "../secret.txt", "content": "x"})
    state = await run(tools["write"], {"path": ".pi/settings.json", "content": "{}"})
    read = await run(tools["read"], {"path": "../secret.txt"})
    assert outside.is_error and state.is_error and read.is_error
    assert files.buffers == {}


async def test_without_a_file_access_the_tools_use_the_disk(tmp_path):
    ws = Workspace(str(tmp_path))
    tools = {t.name: t for t in coding_tools(ws)}
    await run(tools["write"], {"path": "c.txt", "content": "on disk"})
    assert (tmp_path / "c.txt").read_text() == "on disk"
    assert isinstance(tools["read"].files, DiskFiles)
