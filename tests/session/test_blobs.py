"""The change log's content store: loose blobs (what older versions wrote), packs written once
per scan, and references to git's committed blobs, each read back only when it hashes to its
name; and a command's changes stored at its end, before the batch's ``turn_diff``."""

import asyncio
import json
import subprocess

from helpers import git_repo
from pi_daemon.events import ToolExecutionEnd, TurnEnd
from pi_daemon.messages import AssistantMessage, ToolResult, ToolResultMessage
from pi_daemon.session.blobs import Blobs, git_blob_id
from pi_daemon.session.changes import ChangeLog
from pi_daemon.session.store import SessionStore
from pi_daemon.worktree.snapshot import UNKNOWN
from pi_daemon.guard.workspace import Workspace

RAN = ToolResult.text("", details={"exitCode": 0})  # a bash call that ran (a refused one has no exit code)


def test_a_loose_blob_as_older_versions_wrote_it_is_read_and_checked(tmp_path):
    blobs = Blobs(tmp_path / "blobs")
    name = blobs.put(b"old\n")
    assert (tmp_path / "blobs" / name[:2] / name).read_bytes() == b"old\n"
    assert blobs.get(name) == b"old\n" and blobs.get(None) is None and blobs.get("?") is UNKNOWN
    (tmp_path / "blobs" / name[:2] / name).write_bytes(b"changed behind its back\n")
    assert blobs.get(name) is UNKNOWN
    assert blobs.get("0" * 64) is UNKNOWN


def test_a_pack_holds_many_contents_in_one_file_named_only_once_complete(tmp_path):
    blobs = Blobs(tmp_path / "blobs")
    pack = blobs.pack()
    names = [pack.add(b"one\n"), pack.add(b""), pack.add(b"two\n" * 1000), pack.add(b"one\n")]
    assert names[0] == names[3]  # the same content once
    assert list((tmp_path / "blobs" / "packs").iterdir())[0].name.endswith(".tmp")
    assert blobs.get(names[0]) is UNKNOWN  # not in place yet
    pack.close()
    assert [p.name for p in (tmp_path / "blobs" / "packs").iterdir()] == [pack.id]
    assert blobs.get_many(names) == [b"one\n", b"", b"two\n" * 1000, b"one\n"]
    digest, where = names[2].split("@")
    assert where.split(":")[1:] == ["4", "4000"]
    assert blobs.get(f"{digest}@{pack.id}:4:3999") is UNKNOWN  # a range that does not hash to the name
    assert blobs.get(f"{digest}@../{pack.id}:4:4000") is UNKNOWN  # not a pack name
    path = tmp_path / "blobs" / "packs" / pack.id
    path.write_bytes(path.read_bytes()[:10])  # cut short
    assert blobs.get(names[2]) is UNKNOWN and blobs.get(names[0]) == b"one\n"


def test_a_discarded_or_empty_pack_leaves_nothing(tmp_path):
    blobs = Blobs(tmp_path / "blobs")
    pack = blobs.pack()
    pack.close()
    pack = blobs.pack()
    pack.add(b"x")
    pack.discard()
    assert list((tmp_path / "blobs" / "packs").iterdir()) == []


def test_a_git_reference_is_read_from_the_repository_and_checked_by_its_blob_id(tmp_path):
    (tmp_path / "a.txt").write_text("committed\n")
    (tmp_path / "b.txt").write_text("other\n")
    git_repo(tmp_path)
    oid, other = (subprocess.run(["git", "rev-parse", f"HEAD:{name}"], cwd=tmp_path, capture_output=True,
                                 text=True).stdout.strip() for name in ("a.txt", "b.txt"))
    assert git_blob_id(b"committed\n", oid) == oid
    blobs = Blobs(tmp_path / ".pi" / "blobs", str(tmp_path))
    assert blobs.get_many([f"git:{oid}", None, f"git:{other}"]) == [b"committed\n", None, b"other\n"]
    assert blobs.get("git:" + "1" * 40) is UNKNOWN  # gone (a rewritten history, collected)
    assert blobs.get("git:HEAD") is UNKNOWN  # only blob ids are asked for
    for name in ("git:--batch-all-objects", "git:-h", f"git:{oid}\n{other}", f"git:{oid} ", f"git:{oid.upper()}"):
        assert blobs.get(name) is UNKNOWN, name  # nothing option-like, nothing a second line
    assert Blobs(tmp_path / "x", None).get(f"git:{oid}") is UNKNOWN  # no repository


def entries(store_path):
    return [json.loads(line) for line in store_path.read_text().splitlines()]


def test_a_commands_changes_are_stored_at_its_end_one_pack_and_git_references(tmp_path):
    files = {f"f{n}.txt": "".join(f"line {k}\n" for k in range(50)) for n in range(5)}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / ".gitignore").write_text("/.pi/\n")
    git_repo(tmp_path)
    (tmp_path / "f4.txt").write_text("dirty before the run\n")
    store_path = tmp_path / ".pi" / "sessions" / "s.jsonl"
    store = SessionStore.create(store_path, "s", str(tmp_path))
    log = ChangeLog(Workspace(str(tmp_path)), store, tmp_path / ".pi")
    emitted = []

    async def emit(event):
        emitted.append(event)

    async def run():
        log.start()
        await log.before_bash()  # what the bash tool does once the call is allowed
        for name in files:
            (tmp_path / name).write_text(files[name].replace("line 7\n", "line seven\n"))
        (tmp_path / "new.txt").write_text("new\n")
        await log.on_event(ToolExecutionEnd(tool_call_id="c", tool_name="bash", result=RAN), emit)
        # stored and diffed at the command's end: the batch's event only gathers
        assert all(t.blobs is not None and t.wire is not None for t in log.files.values())
        assert len(log.files) == 6 and not emitted
        packs = list((tmp_path / ".pi" / "blobs" / "packs").iterdir())
        assert len(packs) == 1
        results = [ToolResultMessage(tool_call_id="c", tool_name="bash")]
        await log.on_event(TurnEnd(message=AssistantMessage(), tool_results=results), emit)

    asyncio.run(run())
    log.finish()
    store.close()
    assert [e.type for e in emitted] == ["turn_diff"] and len(emitted[0].files) == 6
    stored = {f["path"].rsplit("/", 1)[1]: f for e in entries(store_path) if e["type"] == "turn_changes"
              for f in e["files"]}
    assert all(stored[f"f{n}.txt"]["before"].startswith("git:") for n in range(4))
    assert "@" in stored["f4.txt"]["before"] and stored["new.txt"]["before"] is None
    assert all("@" in f["after"] for f in stored.values())
    assert stored["f0.txt"]["after"].endswith("+" + stored["f0.txt"]["before"])  # a delta against git's blob
    loose = [p for p in (tmp_path / ".pi" / "blobs").iterdir() if p.name not in ("packs", ".gitignore")]
    assert not loose  # no loose blobs
    again = ChangeLog(Workspace(str(tmp_path)), SessionStore.open(store_path), tmp_path / ".pi")
    _, diffs = again.diffs(None)
    assert {d.path: d.diff for _, d, _, _ in diffs} == {f.path: f.diff for f in emitted[0].files}


def test_when_the_pack_cannot_be_written_the_event_stores_the_files_one_by_one(tmp_path):
    (tmp_path / "a.txt").write_text("a\n")
    git_repo(tmp_path)
    (tmp_path / ".pi" / "blobs").mkdir(parents=True)
    (tmp_path / ".pi" / "blobs" / "packs").write_text("not a folder")
    store = SessionStore.create(tmp_path / ".pi" / "sessions" / "s.jsonl", "s", str(tmp_path))
    log = ChangeLog(Workspace(str(tmp_path)), store, tmp_path / ".pi")

    async def run():
        log.start()
        await log.before_bash()
        (tmp_path / "a.txt").write_text("b\n")
        log._bash_ran = True
        await log.scan()

    asyncio.run(run())
    assert log.files[str(tmp_path / "a.txt")].blobs is None
    assert "+b\n" in log.turn_diff()[0]["diff"]
    log.finish()
    _, diffs = log.diffs(None)
    assert diffs[0][2:] == (b"a\n", b"b\n")
    store.close()


def test_a_content_stored_as_a_delta_against_its_base_is_read_back_through_it(tmp_path):
    blobs = Blobs(tmp_path / "blobs")
    base = "".join(f"line {k}\n" for k in range(2000)).encode()
    base_name = blobs.put(base)
    data = base.replace(b"line 7\n", b"line seven\n").replace(b"line 1500\n", b"") + b"one more\n"
    pack = blobs.pack()
    name = pack.add(data, (base, base_name))
    unrelated = pack.add(b"x\n" * 100, (base, base_name))  # a delta would not be smaller
    pack.close()
    assert name.endswith("+" + base_name) and int(name.split("+")[0].split(":")[-1]) < 200
    assert "+" not in unrelated
    assert blobs.get_many([name, unrelated, base_name]) == [data, b"x\n" * 100, base]
    path = tmp_path / "blobs" / base_name[:2] / base_name
    path.write_bytes(base.replace(b"line 3\n", b"line three\n"))  # the base changed behind its back
    assert blobs.get(name) is UNKNOWN
    path.unlink()
    assert blobs.get(name) is UNKNOWN and blobs.get(unrelated) == b"x\n" * 100
    assert blobs.get(name.replace("+", "+" + name.split("+")[0] + "+")) is UNKNOWN  # no delta of a delta
    itself = name.split("+")[0]
    assert blobs.get(f"{itself}+{itself}") is UNKNOWN  # a base naming its own bytes


def _within(seconds, read):
    """``read()``'s answer, or a failure when it does not answer in time (a read that blocks)."""
    import threading
    answer = []
    thread = threading.Thread(target=lambda: answer.append(read()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert answer, "the read blocked"
    return answer[0]


def test_a_crafted_name_reads_nothing_outside_the_store_and_never_blocks(tmp_path):
    import hashlib
    import os
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"a secret\n")
    digest = hashlib.sha256(outside.read_bytes()).hexdigest()
    os.mkfifo(tmp_path / "fifo")
    folder = tmp_path / "blobs"
    blobs = Blobs(folder)
    (folder / digest[:2]).mkdir(parents=True)
    (folder / digest[:2] / digest).symlink_to(outside)  # the right content, but outside the store
    (folder / "packs").mkdir()
    os.mkfifo(folder / "packs" / "ab")
    (folder / "packs" / "cd").symlink_to(tmp_path / "fifo")
    fifo_digest = "0" * 64
    (folder / fifo_digest[:2]).mkdir()
    (folder / fifo_digest[:2] / fifo_digest).symlink_to(tmp_path / "fifo")
    names = [digest, str(outside), "../" * 8 + str(outside)[1:], str(tmp_path / "fifo"), fifo_digest,
             f"{digest}@ab:0:9", f"{digest}@cd:0:9", f"{digest}@ab:0:9+{digest}", 7, ["x"], {"a": 1}]
    assert _within(5, lambda: blobs.get_many(names)) == [UNKNOWN] * len(names)


def test_offsets_and_sizes_beyond_a_pack_read_as_not_kept(tmp_path):
    blobs = Blobs(tmp_path / "blobs")
    pack = blobs.pack()
    name = pack.add(b"content\n")
    pack.close()
    digest = name.split("@")[0]
    for where in (f"0:{10 ** 15}", f"0:{10 ** 18 - 1}", f"{10 ** 18 - 1}:8", f"{2 ** 63 - 1}:8", f"0:{10 ** 30}",
                  f"{10 ** 30}:8", "1:8", "0:٨"):
        assert blobs.get(f"{digest}@{pack.id}:{where}") is UNKNOWN, where
    assert blobs.get(name) == b"content\n"


def test_a_crafted_delta_cannot_inflate_or_reach_outside_its_base():
    from pi_daemon.session.blobs import delta, undelta
    import pytest
    base = b"".join(b"line %04d\n" % n for n in range(1000))
    data = base.replace(b"line 0005\n", b"line five\n").replace(b"line 0500\n", b"")
    ops = delta(base, data)
    assert ops is not None and undelta(base, ops) == data
    for bad in (b"c 0 10000\n" * 2,  # the whole base twice: a crafted delta of n copies makes n bases
                b"c 5 10\nc 0 5\n",  # backwards
                b"c 9990 11\n",  # past the base's end
                b"c -5 5\n", b"c 0 +5\n", b"c 0 " + b"9" * 19 + b"\n",
                b"i 100\nshort",  # an insert longer than what follows
                b"x 1\n", b"c 1\n", b"c 1 2", b"i 1\n"):
        with pytest.raises(ValueError):
            undelta(base, b"pi-delta 1\n" + bad)


def test_a_name_named_many_times_is_read_once(tmp_path):
    blobs = Blobs(tmp_path / "blobs")
    name = blobs.put(b"x" * 1000)
    got = blobs.get_many([name] * 100)
    assert all(g is got[0] for g in got) and got[0] == b"x" * 1000


def test_packs_a_killed_daemon_left_half_written_are_removed_when_a_pack_is_next_written(tmp_path):
    import os
    import time
    packs = tmp_path / "blobs" / "packs"
    packs.mkdir(parents=True)
    stale, fresh, other = packs / ".0123456789abcdef.tmp", packs / ".fedcba9876543210.tmp", packs / ".notapack.tmp"
    linked, done = packs / ".aaaaaaaaaaaaaaaa.tmp", packs / "0123456789abcdef"
    for path in (stale, fresh, other, done, tmp_path / "target"):
        path.write_bytes(b"x")
    linked.symlink_to(tmp_path / "target")
    hour_ago = time.time() - 3600
    for path in (stale, other, done):
        os.utime(path, (hour_ago, hour_ago))
    os.utime(linked, (hour_ago, hour_ago), follow_symlinks=False)
    blobs = Blobs(tmp_path / "blobs")
    blobs.get("0" * 64)  # reading removes nothing
    assert stale.exists()
    pack = blobs.pack()
    pack.add(b"y")
    assert not stale.exists()  # the only one: a fresh one may be another daemon's, being written
    assert fresh.exists() and other.exists() and done.exists() and linked.is_symlink()
    assert (tmp_path / "target").exists()
    pack.close()
    assert sorted(p.name for p in packs.iterdir()) == sorted([fresh.name, other.name, linked.name, done.name, pack.id])


def test_every_delta_the_writer_makes_is_one_the_reader_accepts():
    import random
    from pi_daemon.session.blobs import delta, undelta
    rnd = random.Random(7)
    made = 0
    for _ in range(400):
        lines = [rnd.choice([b"a\n", b"b\n", b"\n", b"x" * rnd.randint(0, 40) + b"\n"])
                 for _ in range(rnd.randint(0, 200))]
        new = list(lines)
        for _ in range(rnd.randint(0, 6)):
            k = rnd.randint(0, len(new))
            if rnd.random() < 0.5:
                new.insert(k, rnd.choice([b"new\n", b"a\n", b"zz"]))
            elif new:
                del new[min(k, len(new) - 1)]
        base, data = b"".join(lines), b"".join(new)
        ops = delta(base, data)
        if ops is not None:
            made += 1
            assert undelta(base, ops) == data
    assert made > 100


def test_nothing_is_written_or_read_through_a_symlinked_folder_below_pi(tmp_path):
    import hashlib
    import pytest
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    state = tmp_path / ".pi"
    (state / "blobs").mkdir(parents=True)
    (state / "blobs" / "packs").symlink_to(elsewhere)  # as a cloned repository may hold it
    data = b"content\n"
    digest = hashlib.sha256(data).hexdigest()
    (state / "blobs" / digest[:2]).symlink_to(elsewhere)
    blobs = Blobs(state / "blobs")
    with pytest.raises(OSError):
        blobs.pack().add(data)
    with pytest.raises(OSError):
        blobs.put(data)
    assert list(elsewhere.iterdir()) == []
    (elsewhere / digest).write_bytes(data)  # the right content, behind a symlinked folder
    (elsewhere / "abcd").write_bytes(data)
    assert blobs.get_many([digest, f"{digest}@abcd:0:8"]) == [UNKNOWN, UNKNOWN]
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "blobs").symlink_to(elsewhere)
    with pytest.raises(OSError):
        Blobs(linked / "blobs").put(b"other\n")
    assert Blobs(linked / "blobs").get(digest) is UNKNOWN
    assert sorted(p.name for p in elsewhere.iterdir()) == sorted(["abcd", digest])
    (tmp_path / "own").mkdir()
    (tmp_path / "own-pi").symlink_to(tmp_path / "own")  # .pi itself linked elsewhere, by the user: used
    assert Blobs(tmp_path / "own-pi" / "blobs").get(Blobs(tmp_path / "own-pi" / "blobs").put(data)) == data


def test_a_tools_write_while_a_commands_changes_are_read_is_not_overwritten_by_the_older_read(tmp_path):
    import threading
    (tmp_path / "f.txt").write_text("one\n")
    git_repo(tmp_path)
    store = SessionStore.create(tmp_path / ".pi" / "sessions" / "s.jsonl", "s", str(tmp_path))
    log = ChangeLog(Workspace(str(tmp_path)), store, tmp_path / ".pi")
    read, written = threading.Event(), threading.Event()

    async def run():
        log.start()
        await log.before_bash()
        (tmp_path / "f.txt").write_text("two\n")  # the command's change
        real = log._changed

        def changed(snapshot):  # the scan reads the files; an edit of the same batch writes meanwhile
            found = real(snapshot)
            read.set()
            written.wait(5)
            return found

        log._changed = changed
        scan = asyncio.ensure_future(log.on_event(ToolExecutionEnd(tool_call_id="b", tool_name="bash", result=RAN), None))
        await asyncio.to_thread(read.wait, 5)
        (tmp_path / "f.txt").write_text("three\n")
        log.record(tmp_path / "f.txt", lambda: b"two\n", b"three\n")  # as the edit tool does
        written.set()
        await scan

    asyncio.run(run())
    assert log.files[str(tmp_path / "f.txt")].after == b"three\n"  # what the file holds
    assert log.files[str(tmp_path / "f.txt")].before == b"one\n"
    assert "-one\n+three\n" in log.turn_diff()[0]["diff"]
    log.finish()
    _, diffs = log.diffs(None)
    assert diffs[0][2:] == (b"one\n", b"three\n")
    store.close()


def test_one_read_makes_at_most_its_budget_however_often_a_large_content_is_named(tmp_path, monkeypatch):
    import hashlib
    from pi_daemon.session import blobs as blobs_module
    monkeypatch.setattr(blobs_module, "MAX_READ_BYTES", 3_500_000, raising=False)
    blobs = Blobs(tmp_path / "blobs")
    contents = [bytes([n]) * 1_000_000 for n in range(4)]
    pack = blobs.pack()
    names = [pack.add(data) for data in contents]
    base = contents[0]
    ops = b"pi-delta 1\nc 0 %d\n" % len(base)  # copies the whole base: a million bytes from a line
    at = len(b"".join(contents))
    pack._file.write(ops)
    pack.close()
    fake = [f"{hashlib.sha256(b'%d' % n).hexdigest()}@{pack.id}:{at}:{len(ops)}+{names[0]}" for n in range(1000)]
    got = blobs.get_many(names[:3] + fake + names[3:])
    assert got[:3] == contents[:3] and got[3:] == [UNKNOWN] * 1001  # past 3.5 MB nothing more is made
    assert blobs.get_many(names[3:]) == contents[3:]  # the budget is one read's


def test_a_blob_planted_as_a_symlink_or_cut_short_is_replaced_when_the_content_is_stored(tmp_path):
    import hashlib
    data = b"the content a run stores\n"
    digest = hashlib.sha256(data).hexdigest()
    folder = tmp_path / "blobs" / digest[:2]
    folder.mkdir(parents=True)
    (tmp_path / "target").write_bytes(data)
    (folder / digest).symlink_to(tmp_path / "target")  # a cloned repository's, in the way
    blobs = Blobs(tmp_path / "blobs")
    assert blobs.get(blobs.put(data)) == data
    assert not (folder / digest).is_symlink()
    other = b"another content\n"
    name = hashlib.sha256(other).hexdigest()
    (tmp_path / "blobs" / name[:2]).mkdir(exist_ok=True)
    (tmp_path / "blobs" / name[:2] / name).write_bytes(other[:3])
    assert blobs.get(blobs.put(other)) == other
