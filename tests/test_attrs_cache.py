"""The cache of attrs-generated methods: used when present, never serving stale code, and
the attrs seam it replaces still there (see pi_daemon/attrs_cache.py)."""

from __future__ import annotations

import importlib.metadata
import inspect
import linecache
import subprocess
import sys
from pathlib import Path

import attr
import attr._make
import pytest

from pi_daemon import attrs_cache


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process's attrs served from a cache file in tmp_path (restored afterwards)."""
    path = tmp_path / "attrs-methods.marshal"
    monkeypatch.setattr(attrs_cache, "cache_path", lambda: str(path))
    monkeypatch.setattr(attr._make, "_compile_and_eval", attr._make._compile_and_eval)
    for name, value in (("_groups", {}), ("_used", {}), ("_missed", 0), ("_installed", False)):
        monkeypatch.setattr(attrs_cache, name, value)
    return path


def _define(body: str) -> type:
    namespace: dict[str, object] = {}
    exec(f"__name__ = 'probe'\nimport attrs\n@attrs.define\nclass Point:\n{body}", namespace)  # noqa: S102
    return namespace["Point"]  # type: ignore[return-value]


def test_a_cached_class_is_not_compiled_again_and_behaves_the_same(cache: Path) -> None:
    attrs_cache.install()
    first = _define("    x: int\n    y: int = 0\n")
    assert attrs_cache.save(force=True) and cache.exists()

    for name, value in (("_groups", {}), ("_used", {}), ("_missed", 0), ("_installed", False)):
        setattr(attrs_cache, name, value)
    attrs_cache.install()
    assert attrs_cache.lookup("<attrs generated methods probe.Point>") is not None
    second = _define("    x: int\n    y: int = 0\n")
    assert attrs_cache._missed == 0  # served from the file
    assert second(1) == second(1, 0) and second(1) != second(2)
    assert repr(second(3, 4)) == repr(first(3, 4)) == "Point(x=3, y=4)"
    assert not attrs_cache.save(force=True)  # nothing new: the file is left alone


def test_a_class_whose_source_changed_is_compiled_from_its_new_source(cache: Path) -> None:
    attrs_cache.install()
    _define("    x: int\n")
    attrs_cache.save(force=True)
    for name, value in (("_groups", {}), ("_used", {}), ("_missed", 0), ("_installed", False)):
        setattr(attrs_cache, name, value)
    attrs_cache.install()
    for name in [name for name in linecache.cache if "Point" in name]:
        del linecache.cache[name]  # as in a new process: attrs names the class's methods as before
    changed = _define("    x: int\n    label: str = 'p'\n")  # same name, other fields
    assert attrs_cache._missed == 1
    assert repr(changed(1)) == "Point(x=1, label='p')"


def test_a_damaged_cache_file_is_ignored(cache: Path) -> None:
    cache.write_bytes(b"\x00not marshal")
    attrs_cache.install()
    assert repr(_define("    x: int\n")(5)) == "Point(x=5)"


def test_the_daemon_starts_from_the_primed_cache_without_compiling() -> None:
    subprocess.run([sys.executable, "-m", "pi_daemon.attrs_cache"], check=True, capture_output=True)
    probe = ("from pi_daemon import attrs_cache; attrs_cache.install(); "
             "import pi_daemon.rpc.server, pi_daemon.rpc.engine, attr.validators as v; "
             "assert v.instance_of(int) == v.instance_of(int) and 'int' in repr(v.instance_of(int)); "
             "print(attrs_cache._missed, len(attrs_cache._used), sum(' attr.' in k for k in attrs_cache._used))")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout.split()
    missed, used, own = int(out[0]), int(out[1]), int(out[2])
    assert missed == 0 and used > 500  # lsprotocol's classes and the daemon's own
    assert own > 5  # attrs's own validators and converters, defined as its package loads


def test_the_attrs_seam_is_still_there() -> None:
    assert importlib.metadata.version("attrs") == "26.1.0"
    assert list(inspect.signature(attr._make._compile_and_eval).parameters) == ["script", "globs", "locs", "filename"]
    assert "_compile_and_eval(" in inspect.getsource(attr._make._linecache_and_compile)


_HASHED = """
import sys
from pi_daemon import attrs_cache
attrs_cache.cache_path = lambda: sys.argv[1]
if sys.argv[2] == "cached":
    attrs_cache.install()
import attrs

@attrs.frozen
class Point:
    x: int
    y: str = "p"

@attrs.define(unsafe_hash=True, cache_hash=True)
class Tag:
    name: str

print(attrs_cache._missed, hash(Point(1)), hash(Point(1, "q")), hash(Tag("t")), Point(2) == Point(2), repr(Point(3)))
attrs_cache.save(force=True)
"""


def test_a_hashed_class_is_served_from_the_cache_with_this_process_s_hash(tmp_path: Path) -> None:
    """A generated ``__hash__`` holds a number salted per process: the cached code gets this one's."""
    script, cache = tmp_path / "hashed.py", tmp_path / "attrs-methods.marshal"
    script.write_text(_HASHED)

    def run(seed: int, mode: str) -> list[str]:
        env = {"PYTHONHASHSEED": str(seed), "PYTHONPATH": str(Path(attrs_cache.__file__).parent.parent)}
        return subprocess.run([sys.executable, "-P", str(script), str(cache), mode], check=True, capture_output=True,
                              text=True, env=env).stdout.split(maxsplit=4)

    first = run(1, "cached")
    assert int(first[0]) >= 2 and cache.exists()  # both (and attrs's own classes) compiled, then stored
    served, plain = run(2, "cached"), run(2, "plain")
    assert served[0] == "0"  # nothing compiled
    assert served[1:] == plain[1:]  # the hashes attrs itself gives in this process, and the same behaviour
    assert served[1:4] != first[1:4]  # (which differ from the process that stored them)
