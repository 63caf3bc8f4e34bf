"""Reading command files from their folders: confinement, the first definition wins, problems."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

Folder = tuple[Path, str, "Path | None"]  # the folder, its source (home / workspace), the root it must stay in


def inside(path: Path, root: Path | None) -> bool:
    """``path`` resolves beneath ``root`` (no root: anywhere). A repository's symlink to a
    file elsewhere (a key, say) is never read into a prompt."""
    return root is None or path.resolve().is_relative_to(root.resolve())


def collect(folders: Iterable[Folder], find: Callable[[Path], Iterable[Path]],
            confined: Callable[[Path, Path | None], bool], read: Callable[[Path, str], Any],
            label: Callable[[Any], str]) -> tuple[list[Any], list[str]]:
    """What ``read`` makes of every file ``find`` lists, folder by folder; an earlier file
    keeps a name (``item.name``). ``read`` returns the item or the reason it is unusable."""
    found: dict[str, Any] = {}
    problems: list[str] = []
    for folder, source, root in folders:
        if not folder.is_dir():
            continue
        for path in find(folder):
            if not confined(path, root):
                problems.append(f"{path}: resolves to {path.resolve()}, outside {root or path.parent}; not read")
                continue
            item = read(path, source)
            if isinstance(item, str):
                problems.append(item)
            elif item.name in found:
                problems.append(f"{path}: {label(item)} is already defined by {found[item.name].file}")
            else:
                found[item.name] = item
    return list(found.values()), problems
