"""settings.json layering: an untrusted workspace may only make things stricter."""

import json

import pytest

from pi_daemon import settings
from pi_daemon.guard import trust


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    home, ws = tmp_path / "home", tmp_path / "ws"
    (ws / ".pi").mkdir(parents=True)
    home.mkdir()
    monkeypatch.setenv("PI_DAEMON_HOME", str(home))
    return home, ws


def write(path, data):
    path.write_text(json.dumps(data))


def test_an_untrusted_workspace_can_add_prompts_but_not_remove_them(dirs):
    home, ws = dirs
    write(ws / ".pi" / "settings.json", {"permissions": {"ask": ["read"], "withoutClient": "reject", "other": 1},
                                         "compaction": {"reserveTokens": 10}, "sandbox": {"network": True}})
    layered = settings.layered(ws)
    assert layered.values["permissions"] == {"ask": ["write", "edit", "bash", "read"], "withoutClient": "reject"}
    assert layered.values["compaction"] == {"reserveTokens": 10} and "sandbox" not in layered.values
    assert [(i.field, i.effect) for i in layered.ignored] == [
        ("permissions.ask", "would run write, edit, bash without asking"),
        ("permissions.other", "could lower the permission checks"),
        ("sandbox.network", "could loosen the sandbox the agent's bash runs in")]


def test_the_users_own_values_are_the_baseline(dirs):
    home, ws = dirs
    write(home / "settings.json", {"permissions": {"ask": ["bash"], "withoutClient": "allow"}})
    write(ws / ".pi" / "settings.json", {"permissions": {"ask": ["bash"], "withoutClient": "allow"}})
    layered = settings.layered(ws)
    assert layered.values["permissions"] == {"ask": ["bash"], "withoutClient": "allow"}
    assert layered.ignored == []  # nothing the workspace set lowers what the user chose


def test_once_trusted_the_workspace_wins(dirs):
    home, ws = dirs
    write(home / "settings.json", {"permissions": {"withoutClient": "reject"}})
    write(ws / ".pi" / "settings.json", {"permissions": {"ask": [], "withoutClient": "allow"},
                                         "workspace": {"extraRoots": ["/opt"]}})
    assert settings.load(ws)["permissions"] == {"withoutClient": "reject", "ask": ["write", "edit", "bash"]}
    trust.set_trusted(ws, True)
    assert settings.load(ws) == {"permissions": {"ask": [], "withoutClient": "allow"},
                                 "workspace": {"extraRoots": ["/opt"]}}
    assert settings.layered(ws).ignored == []
    assert trust.decision(ws) is True and (home / "trust.json").is_file()
    trust.set_trusted(ws, False)
    assert settings.load(ws)["permissions"]["withoutClient"] == "reject"
