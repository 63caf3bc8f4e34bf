"""LSP's vocabulary loaded on first use (:mod:`pi_daemon.rpc.lsp`)."""

import time
from concurrent.futures import ThreadPoolExecutor

import lsprotocol.converters

from pi_daemon.rpc import lsp


def test_the_converter_is_made_once_when_several_threads_ask_for_it_together(monkeypatch):
    # Two edits of one message each load it in a thread; lsprotocol's converters built in two
    # threads at once failed one of the edits on a busy machine.
    made = []

    def slow_converter():
        made.append(object())
        time.sleep(0.2)  # long enough for the other threads to reach the load meanwhile
        return made[-1]

    monkeypatch.setattr(lsprotocol.converters, "get_converter", slow_converter)
    monkeypatch.setattr(lsp, "_made", None)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: lsp.converter(), range(4)))
    assert len(made) == 1 and all(c is made[0] for c in got)
