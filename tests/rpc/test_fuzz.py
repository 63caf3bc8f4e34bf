"""Property-based fuzzing of both framings through one real daemon per framing.

Whatever mix of valid requests, malformed JSON, wrong types, odd ids, bad headers,
oversize or deeply nested frames and split or merged writes a client sends: every
request with a usable id gets exactly one reply, a request inside a damaged frame at
most one, the daemon keeps answering (a final ``getState`` round trip), stdout holds
nothing but frames, and stderr no traceback. The example count is bounded for CI; the
soak (``bench/fuzz_soak.py``) runs the same traffic for longer.
"""

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from client import Daemon
from fuzz_traffic import Traffic

MAX_FRAME = 8192
EXAMPLES = 300
_examples = itertools.count(1)


def stdout_messages(d: Daemon) -> list[dict]:
    """Every byte of stdout, read as frames of the daemon's framing (raises on anything else)."""
    import json

    raw, out = bytes(d.raw_stdout), []
    if d.framing == "ndjson":
        assert raw.endswith(b"\n") or not raw
        return [json.loads(line) for line in raw.split(b"\n")[:-1]]
    while raw:
        header, sep, rest = raw.partition(b"\r\n\r\n")
        assert sep and header.startswith(b"Content-Length: "), raw[:80]
        length = int(header[len(b"Content-Length: "):])
        assert len(rest) >= length
        out.append(json.loads(rest[:length]))
        raw = rest[length:]
    return out


@pytest.fixture(scope="module", params=["ndjson", "content-length"])
def daemon(request, tmp_path_factory):
    d = Daemon("--model", "faux/echo", "--max-frame-bytes", str(MAX_FRAME), framing=request.param,
               cwd=str(tmp_path_factory.mktemp("fuzz")))
    d.call("getState")
    yield d
    try:
        assert d.proc.poll() is None, "the daemon died"
        assert b"Traceback" not in d.stderr, d.stderr.decode()[-3000:]
        assert len(stdout_messages(d)) >= EXAMPLES
        assert d.close() == 0
    finally:
        d.kill()


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rnd=st.randoms(use_true_random=False), pieces=st.integers(1, 25))
def test_every_request_is_answered_once_and_the_daemon_keeps_serving(daemon, rnd, pieces):
    n = next(_examples)
    traffic = Traffic(daemon.framing, MAX_FRAME, prefix=f"e{n:07d}", base=10**12 + n * 10**5)
    for chunk in traffic.writes(rnd, pieces):
        daemon.send_raw(chunk)
    final = traffic.new_id(rnd)
    daemon.send_raw(traffic.get_state(final))
    assert "result" in daemon.wait_response(final)
    for rid in traffic.tracked:
        daemon.wait_response(rid)
    with daemon._cond:
        counts = {rid: daemon.response_counts.get(rid, 0) for rid in traffic.tracked + [final]}
        maybe = {rid: daemon.response_counts.get(rid, 0) for rid in traffic.at_most_once}
    assert all(c == 1 for c in counts.values()), counts
    assert all(c <= 1 for c in maybe.values()), maybe
    assert daemon.proc.poll() is None
    assert b"Traceback" not in daemon.stderr, daemon.stderr.decode()[-3000:]
