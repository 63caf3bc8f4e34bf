"""Reading command files from their folders: confinement, the first definition wins, problems.

A file is read for a prompt only through :func:`read_text`: resolved inside its root, then
opened from the root with no symlink followed on the way (as the file tools open), a
regular file within a size, at the moment it is read. A symlink swapped in after the
folders were listed (a sandboxed command can do that in the workspace) is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

from ..guard.safe_open import read_beneath

Folder = tuple[Path, str, "Path | None"]  # the folder, its source (home / workspace), the root it must stay in


def inside(path: Path, root: Path | None) -> bool:
    """``path`` resolves beneath ``root`` (no root: anywhere). A repository's symlink to a
    file elsewhere (a key, say) is never read into a prompt."""
    return root is None or path.resolve().is_relative_to(root.resolve())


def read_text(path: Path, root: Path, limit: int) -> str:
    """The UTF-8 text of ``path``, a regular file of at most ``limit`` bytes beneath ``root``.
    OSError or UnicodeDecodeError saying why not."""
    return read_beneath(root, path, limit).decode("utf-8")


def collect(folders: Iterable[Folder], find: Callable[[Path], Iterable[Path]],
            confined: Callable[[Path, Path | None], bool], read: Callable[[Path, str, Path], Any],
            label: Callable[[Any], str]) -> tuple[list[Any], list[str]]:
    """What ``read`` makes of every file ``find`` lists, folder by folder; an earlier file
    keeps a name (``item.name``). ``read`` gets the path, its source and the root it is read
    beneath (the folder itself when it has none); it returns the item or why it is unusable."""
    found: dict[str, Any] = {}
    problems: list[str] = []
    for folder, source, root in folders:
        if not folder.is_dir():
            continue
        for path in find(folder):
            if not confined(path, root):
                problems.append(f"{path}: resolves to {path.resolve()}, outside {root or path.parent}; not read")
                continue
            item = read(path, source, root or folder)
            if isinstance(item, str):
                problems.append(item)
            elif item.name in found:
                problems.append(f"{path}: {label(item)} is already defined by {found[item.name].file}")
            else:
                found[item.name] = item
    return list(found.values()), problems
