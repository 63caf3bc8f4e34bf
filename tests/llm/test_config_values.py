"""apiKey and header values of models.json: literal, environment, command."""

import asyncio
import time

import pytest

from pi_daemon.llm import config_values as V


@pytest.mark.parametrize("spec, value", [
    ("sk-literal", "sk-literal"),
    ("ollama", "ollama"),
    ("$LOOP_KEY", "k-1"),
    ("${LOOP_KEY}", "k-1"),
    ("Bearer ${LOOP_KEY}", "Bearer k-1"),
    ("LOOP_KEY", "k-1"),                 # Pi's older form: a variable's name
    ("NOT_SET_ANYWHERE", "NOT_SET_ANYWHERE"),  # a name nobody set is the text itself
    ("$$5", "$5"),
    ("$!not-a-command", "!not-a-command"),
    ("$MISSING_VAR", None),
    ("x-${MISSING_VAR}", None),
])
def test_expand(monkeypatch, spec, value):
    monkeypatch.setenv("LOOP_KEY", "k-1")
    monkeypatch.delenv("MISSING_VAR", raising=False)
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    assert V.expand(spec) == value


def test_references_and_commands(monkeypatch):
    monkeypatch.delenv("UNSET_NAME", raising=False)
    assert V.env_references("a $ONE and ${TWO} $$THREE") == ["ONE", "TWO"]
    assert V.env_references("!echo $ONE") == [] and V.is_command("!echo")
    assert not V.reads_environment("UNSET_NAME") and V.reads_environment("$UNSET_NAME")


async def test_a_command_times_out_and_the_failure_is_remembered(monkeypatch):
    monkeypatch.setattr(V, "COMMAND_TIMEOUT_S", 0.3)
    monkeypatch.setattr(V, "commands", V._Commands())
    started = time.monotonic()
    value, why = await V.resolve("!sleep 30")
    assert value is None and why == "the apiKey/header command did not finish within 0.3 s"
    assert time.monotonic() - started < 15  # not the 30 s sleep
    assert V.secret_failure("!sleep 30") == why and V.resolved_now("!sleep 30") is None


async def test_concurrent_requests_run_a_command_once(monkeypatch, tmp_path):
    monkeypatch.setattr(V, "commands", V._Commands())
    count = tmp_path / "count"
    spec = f"!echo x >> {count}; sleep 0.2; printf ' key-9 \\n'"
    results = await asyncio.gather(*[V.resolve(spec) for _ in range(5)])
    assert results == [("key-9", None)] * 5 and count.read_text() == "x\n"
    assert V.resolved_now(spec) == "key-9"
