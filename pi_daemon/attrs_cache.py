"""A bytecode cache for the methods attrs generates, so start-up does not compile them again.

attrs writes the source of each class's ``__init__``, ``__repr__``, ``__eq__``, ... and
compiles it when the class is defined. lsprotocol (which pygls imports) defines about
700 classes and the daemon's own protocol types about 150 more: compiling their methods
was about a third of the CPU a daemon spends from spawn to its first prompt's answer.
Python caches a module's bytecode in ``__pycache__``; this does the same for those
generated methods, next to the package's own bytecode, following the same rules: the
cache is used when present, written when bytecode may be written
(``sys.dont_write_bytecode`` unset), and ``python -m pi_daemon.attrs_cache`` writes it
regardless (``pip install`` writes ``.pyc`` files the same way).

An entry is the generated source with its code object, keyed by the name attrs gives it
(``<attrs generated methods module.Class>``): a class whose source changed simply misses
and is compiled as before. Entries are grouped by top-level package, each group decoded
when its first class is defined. A generated ``__hash__`` (frozen and hashed classes) embeds
the ``hash()`` of a string, which differs in every process: such an entry is stored with that
number taken out of its source and the number it was compiled with, and served with this
process's number put in its code's constants.

Relies on ``attr._make._compile_and_eval`` (attrs is pinned; ``tests/test_attrs_cache.py``
fails if that seam moves).
"""

from __future__ import annotations

import logging
import marshal
import os
import re
import sys
from types import CodeType
from typing import Any, Mapping

log = logging.getLogger(__name__)

# The number attrs puts first in a generated __hash__'s tuple: hash(<a string>), salted per process.
_TYPE_HASH = re.compile(r"hash\(\(\n *(-?[0-9]+),\n")
_SEED = "<type hash>"  # stands for it in a stored source
# (the source attrs generated, with _SEED for its type hash; its code; the type hash it was compiled with)
Entry = tuple[str, CodeType, int | None]
_groups: dict[str, bytes | dict[str, Entry]] = {}  # by top-level package; decoded on first use
_used: dict[str, Entry] = {}
_missed = 0
_installed = False


def cache_path() -> str:
    # Not keyed by attrs's version: an entry is served only for the very source it was
    # compiled from (and attr.__version__ would cost an importlib.metadata search).
    folder = os.path.join(os.path.dirname(__file__), "__pycache__")
    return os.path.join(folder, f"attrs-methods.{sys.implementation.cache_tag}.marshal")


def _package(filename: str) -> str:
    """``lsprotocol`` for ``<attrs generated methods lsprotocol.types.Range>``."""
    return filename.rpartition(" ")[2].partition(".")[0]


def _group(package: str) -> dict[str, Entry]:
    group = _groups.get(package)
    if isinstance(group, bytes):
        # Decoded when its first class is defined: lsprotocol's ~700 classes only once pygls loads.
        try:
            decoded = marshal.loads(group)
        except (EOFError, ValueError, TypeError):
            decoded = None
        group = _groups[package] = decoded if isinstance(decoded, dict) else {}
    return group or {}


def lookup(filename: str) -> Entry | None:
    """The cached entry attrs's ``filename`` names, if any."""
    entry = _group(_package(filename)).get(filename)
    return entry if type(entry) is tuple and len(entry) == 3 else None


def _with_constant(code: CodeType, old: int, new: int) -> CodeType:
    """``code`` (and the functions it defines) with the constant ``old`` replaced by ``new``."""
    consts = tuple(new if type(c) is int and c == old else _with_constant(c, old, new) if isinstance(c, CodeType)
                   else c for c in code.co_consts)
    return code.replace(co_consts=consts)


def _compile_and_eval(script: str, globs: dict[str, Any] | None, locs: Mapping[str, object] | None = None,
                      filename: str = "") -> None:
    global _missed
    seed = None
    source = script
    if "def __hash__(self" in script:
        found = _TYPE_HASH.search(script)
        if found is None or _TYPE_HASH.search(script, found.end()) is not None:  # not the shape known: not cached
            eval(compile(script, filename, "exec"), globs, locs)  # noqa: S307 - as attrs itself runs it
            return
        seed = int(found.group(1))
        source = script[:found.start(1)] + _SEED + script[found.end(1):]
    entry = lookup(filename)
    if entry is None or entry[0] != source or (entry[2] is None) != (seed is None):
        entry = (source, compile(script, filename, "exec"), seed)
        _missed += 1
        code = entry[1]
    else:
        stored = entry[2]
        code = entry[1] if seed is None or stored is None or stored == seed else _with_constant(entry[1], stored, seed)
    _used[filename] = entry
    eval(code, globs, locs)  # noqa: S307 - the code attrs generated, as attrs itself runs it


def install() -> None:
    """Read the cache (if any) and serve attrs's compilations from it; call before the
    classes are defined. Idempotent."""
    global _installed
    if _installed:
        return
    try:
        with open(cache_path(), "rb") as f:
            data = marshal.loads(f.read())  # load(f) would read object by object
        if isinstance(data, dict):
            _groups.update({k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, bytes)})
    except (OSError, EOFError, ValueError, TypeError) as exc:
        if not isinstance(exc, FileNotFoundError):
            log.debug("attrs method cache unreadable (%s); compiling", exc)
    if "attr._make" not in sys.modules:
        # attrs defines classes of its own (validators, converters) as its package loads,
        # right after attr._make: served from the cache too when the seam is in place by then.
        sys.meta_path.insert(0, _SeamFinder)
        try:
            import attr._make
        finally:
            if _SeamFinder in sys.meta_path:
                sys.meta_path.remove(_SeamFinder)
    import attr._make

    attr._make._compile_and_eval = _compile_and_eval
    _installed = True


class _SeamFinder:
    """Finds nothing itself: wraps the loader of ``attr._make`` so that the seam is replaced
    as soon as that module has run, before the rest of the ``attr`` package defines its classes."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
        if name != "attr._make":
            return None
        sys.meta_path.remove(_SeamFinder)
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path, target)
        loader = getattr(spec, "loader", None)
        run = getattr(loader, "exec_module", None)
        if run is not None:
            def exec_module(module: Any) -> None:
                run(module)
                module._compile_and_eval = _compile_and_eval

            loader.exec_module = exec_module  # type: ignore[union-attr]
        return spec


def save(*, force: bool = False) -> bool:
    """Write the cache when this process compiled something it lacked; True if written.
    Entries read but not used stay (another start may load other modules)."""
    if not _installed or not _missed or (sys.dont_write_bytecode and not force):
        return False
    import tempfile  # not at start-up: it imports random, shutil, ...

    groups = {package: dict(_group(package)) for package in list(_groups)}
    for name, entry in _used.items():
        groups.setdefault(_package(name), {})[name] = entry
    encoded = {package: marshal.dumps(group) for package, group in groups.items()}
    path = cache_path()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".attrs-methods.")
        try:
            with os.fdopen(fd, "wb") as f:
                marshal.dump(encoded, f)
            os.chmod(tmp, 0o644)  # mkstemp makes it private; bytecode is world-readable
            os.replace(tmp, path)  # atomic: a daemon starting now reads the old or the new file
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:  # a read-only install: as with bytecode, nothing is cached
        log.debug("attrs method cache not written: %s", exc)
        return False
    return True


def prime() -> int:
    """Import every module of the package (as a daemon would, over its life) and write the cache."""
    import importlib
    import pkgutil

    install()
    import pi_daemon

    for info in pkgutil.walk_packages(pi_daemon.__path__, "pi_daemon."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError as exc:  # an optional dependency that is not installed
            log.debug("not imported: %s (%s)", info.name, exc)
    save(force=True)
    return len(_used)


if __name__ == "__main__":
    from pi_daemon import attrs_cache  # the package's copy of this module, the one the daemon uses

    print(f"{attrs_cache.prime()} attrs classes cached in {attrs_cache.cache_path()}")
