"""The agent's habits in a real terminal Neovim under tmux, typed into as a user (the helpers
of test_terminal.py): the plan drawn above the input area, updating live and back after a
reload; a question answered with words of the user's own; permission answers that steer
(a refusal with a reason, an edited command, reject and stop).

Run: .venv/bin/python -m pytest editor-clients/nvim/tests/test_terminal_habits.py
(PI_NVIM_SCREENS=folder keeps the screens as text.)
"""

from __future__ import annotations

import pytest

from test_terminal import SHOWING_INPUT, chat_rows, open_terminal, pick_line

def plan(call_id: str, *steps: tuple[str, str]) -> dict:
    return {"content": [{"type": "toolCall", "id": call_id, "name": "update_plan",
                         "arguments": {"plan": [{"step": s, "status": status} for s, status in steps]}}],
            "stopReason": "toolUse"}


def text(words: str) -> dict:
    return {"content": [{"type": "text", "text": words}]}


def calls(*commands: tuple[str, str]) -> dict:
    return {"content": [{"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": command}}
                        for call_id, command in commands], "stopReason": "toolUse"}


PLAN_REPLIES = [
    plan("p1", ("Read the code", "in_progress"), ("Fix the off-by-one", "pending"), ("Run the tests", "pending")),
    {"content": [{"type": "text", "text": "Reading the code first. " * 12},
                 *plan("p2", ("Read the code", "completed"), ("Fix the off-by-one", "in_progress"),
                       ("Run the tests", "pending"))["content"]], "stopReason": "toolUse"},
    text("The code is read; fixing next."),
]


@pytest.fixture
def plan_terminal(tmp_path):
    yield from open_terminal(tmp_path, PLAN_REPLIES)


def test_the_plan_above_the_input_updates_live_and_comes_back_after_a_reload(plan_terminal):
    term = plan_terminal
    term.command("Pi fix the off-by-one")
    screen = term.wait_for("Plan 0/3")
    assert "▶ Read the code" in screen and "○ Fix the off-by-one" in screen
    term.capture("plan-live-first")
    screen = term.wait_for("Plan 1/3")  # the same place, ticked as the agent goes
    assert "✓ Read the code" in screen and "▶ Fix the off-by-one" in screen and "Plan 0/3" not in screen
    term.wait_for("The code is read; fixing next.")
    rows = [row.rstrip() for row in chat_rows(term.screen())]
    title = next(i for i, row in enumerate(rows) if row == "Plan 1/3")
    # right above the input area's text, under the chat and its winbar
    assert rows[title + 1:title + 4] == ["  ✓ Read the code", "  ▶ Fix the off-by-one", "  ○ Run the tests"], rows
    assert rows[title - 1].lstrip().startswith("Ask pi") or "pi is working" in rows[title - 1], rows
    term.capture("plan-live")

    term.command("PiNew")
    term.wait_gone("Plan 1/3")
    term.command("PiSessions")
    screen = term.wait_for("fix the off-by-one  (")
    term.keys(pick_line(screen, term.evaluate("strftime('%Y')")))
    screen = term.wait_for("Plan 1/3")
    assert "▶ Fix the off-by-one" in screen and "The code is read; fixing next." in screen
    term.capture("plan-after-reload")


QUESTION_REPLIES = [
    {"content": [{"type": "toolCall", "id": "q1", "name": "ask_user",
                  "arguments": {"question": "Which port should the dev server use?",
                                "options": [{"label": "8000"}, {"label": "8080", "description": "the usual"}],
                                "allowText": True}}], "stopReason": "toolUse"},
    text("Port noted."),
]

STEER_REPLIES = [
    calls(("r1", "rm -rf build")),
    text("Understood: keeping build."),
    calls(("e1", "echo from-the-model")),
    text("Ran it."),
    calls(("s1", "echo one"), ("s2", "echo two")),
    text("This should never be said."),
]


@pytest.fixture
def question_terminal(tmp_path):
    yield from open_terminal(tmp_path, QUESTION_REPLIES, extra=SHOWING_INPUT)


@pytest.fixture
def steer_terminal(tmp_path):
    yield from open_terminal(tmp_path, STEER_REPLIES, extra=SHOWING_INPUT)


def open_chat_folds(term) -> None:
    term.command("lua vim.api.nvim_set_current_win(vim.fn.win_findbuf(vim.fn.bufnr('pi://chat'))[1])")
    term.command("normal! zRG")


def test_a_question_answered_with_words_of_the_users_own(question_terminal):
    term = question_terminal
    term.command("Pi set up the dev server")
    screen = term.wait_for("Which port should the dev server use?")
    assert "1. 8000" in screen and "2. 8080 — the usual" in screen
    term.capture("question")
    term.keys(pick_line(screen, "Other…"))
    term.wait_for("Your answer:")
    term.type("port 9000, 8000 is taken")
    term.keys("Enter")
    term.wait_for("Port noted.")
    open_chat_folds(term)
    term.wait_for("The user wrote: port 9000, 8000 is taken")  # the call's result: what the model reads
    term.capture("question-answered")


def test_permission_answers_that_steer(steer_terminal):
    term = steer_terminal
    # a refusal with a reason: the model reads it and the run goes on
    term.command("Pi clean up")
    screen = term.wait_for("Reject with reason…")
    assert "Edit command…" in screen and "Reject and stop" in screen
    term.capture("permission-choices")
    term.keys(pick_line(screen, "Reject with reason…"))
    term.wait_for("Reject: why? (pi reads this)")
    term.type("build holds my release")
    term.keys("Enter")
    term.wait_for("Understood: keeping build.")
    open_chat_folds(term)
    term.wait_for("The user declined this call: build holds my release")

    # the command edited before it ran: what ran is the user's, shown above its output
    term.command("Pi say hi")
    screen = term.wait_for("Edit command…")
    term.keys(pick_line(screen, "Edit command…"))
    term.wait_for("Run instead · <C-s> run · q back")  # a float holding the command, the cursor at its end
    term.keys(*["BSpace"] * len("model"))
    term.type("user")
    term.capture("command-editing")
    term.keys("C-s")
    term.wait_for("Ran it.")
    open_chat_folds(term)
    screen = term.wait_for("✎ bash, edited by you; what ran:")
    term.capture("command-edited")
    rows = [row.rstrip() for row in chat_rows(screen)]
    edited = rows.index("✎ bash, edited by you; what ran:")
    assert rows[edited - 2:edited + 3] == ["→ bash", "  command: echo from-the-model", "✎ bash, edited by you; what ran:",
                                           "  command: echo from-the-user", "bash output {{{"], rows
    assert "from-the-user" in rows[edited + 3:edited + 7] and "from-the-model" not in rows[edited + 3:], rows

    # reject and stop: the run ends there, the other call is not asked about
    term.command("Pi run both")
    screen = term.wait_for("Reject and stop")
    assert "Run `echo one`" in screen
    term.keys(pick_line(screen, "Reject and stop"))
    term.wait_for("— stopped: you rejected a call —")
    term.wait_until("luaeval(\"require('pi').status().settled\")", "3")
    screen = term.screen()
    assert "Run `echo two`" not in screen and "This should never be said." not in screen
    term.capture("reject-and-stop")
