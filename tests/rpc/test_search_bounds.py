"""``grep`` and ``find`` through the daemon on what big repositories hold: results held to
50 KB whatever the limit asked, megabyte-long lines, files far larger than a read block."""

from test_confinement_e2e import call, run_calls, said


def many_files(ws, count: int) -> None:
    for n in range(count):
        folder = ws / f"pkg{n // 100:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"module_{n:04d}.py").write_text(f"# EVERYWHERE in module {n}\nvalue = {n}\n")


def test_a_search_that_matches_everywhere_stops_at_50_kb_whatever_its_limit(spawn, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    many_files(ws, 3000)
    ends = run_calls(spawn, tmp_path, ws, [
        call("g", "grep", {"pattern": "EVERYWHERE", "limit": 1_000_000}),
        call("f", "find", {"pattern": "**/*.py", "limit": 1_000_000}),
        call("small", "grep", {"pattern": "EVERYWHERE", "limit": 3}),
    ])
    grep, find = said(ends["g"]), said(ends["f"])
    for result in (grep, find):
        assert 40_000 < len(result) <= 51_200 + 100, len(result)
        assert result.endswith("\n[stopped at 50 KB of output; narrow the search]"), result[-200:]
    shown = grep.splitlines()[:-1]
    assert len(shown) > 500 and all(":1:# EVERYWHERE in module " in line for line in shown)
    for line in shown[:50]:  # each line is the file's own
        path, _, rest = line.partition(":1:")
        assert (ws / path).read_text().splitlines()[0] == rest
    paths = find.splitlines()[:-1]
    assert paths == sorted(paths) and len(paths) > 1000 and all((ws / p).is_file() for p in paths)
    assert said(ends["small"]).endswith("[stopped at 3 lines; narrow the search or raise limit]")


def test_a_megabyte_long_line_is_found_and_shown_cut(spawn, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    minified = "var a=1;" * 2_500_000 + "NEEDLE();" + "b()" * 100  # one line of 20 MB
    (ws / "bundle.min.js").write_text(minified + "\nNEEDLE on a short line\n")
    (ws / "wide.txt").write_text("é" * 600 + " NEEDLE\n")
    ends = run_calls(spawn, tmp_path, ws, [call("g", "grep", {"pattern": "NEEDLE", "context": 1})])
    assert not ends["g"]["isError"], said(ends["g"])
    lines = said(ends["g"]).splitlines()
    assert "bundle.min.js:1:" + "var a=1;" * 62 + "var " + " … [line cut]" in lines
    assert "bundle.min.js:2:NEEDLE on a short line" in lines
    assert "wide.txt:1:" + "é" * 500 + " … [line cut]" in lines
    assert len(said(ends["g"])) < 2000


def test_matches_deep_in_a_file_larger_than_a_read_block(spawn, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    lines = [f"line {n}: " + "x" * (n % 97) for n in range(300_000)]  # ~17 MB
    lines[5] = "MATCH near the start"
    lines[150_000] = "MATCH in the middle " + "y" * 3_000_000  # across read blocks
    lines[-1] = "MATCH on the last line, which has no line end"
    (ws / "big.log").write_text("\n".join(lines))
    ends = run_calls(spawn, tmp_path, ws, [call("g", "grep", {"pattern": "MATCH"})])
    assert said(ends["g"]).splitlines() == [
        "big.log:6:MATCH near the start",
        "big.log:150001:MATCH in the middle " + "y" * 480 + " … [line cut]",
        "big.log:300000:MATCH on the last line, which has no line end",
    ]


def test_symlink_loops_and_symlinks_out_are_not_followed(spawn, tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "src").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.py").write_text("OUTSIDE-SECRET = 1\n")
    (ws / "src" / "app.py").write_text("INSIDE = 1\n")
    (ws / "src" / "loop").symlink_to("..")  # src/loop/src/loop/... without end
    (ws / "self").symlink_to("self")
    (ws / "out").symlink_to(outside)
    (ws / "out.py").symlink_to(outside / "secret.py")
    ends = run_calls(spawn, tmp_path, ws, [
        call("g", "grep", {"pattern": "SECRET|INSIDE"}),
        call("f", "find", {"pattern": "**/*.py"}),
    ])
    assert said(ends["g"]) == "src/app.py:1:INSIDE = 1"
    assert said(ends["f"]) == "src/app.py"
