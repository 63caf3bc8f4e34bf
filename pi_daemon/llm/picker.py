"""How the client's user picks a model: the phrase the daemon's own texts say (the offline demo's
answer, "no model is selected").

The client gives it at ``initialize`` (``clientInfo.modelPicker``, e.g. ":PiModel"); a client that
gives none (a shell pipe) is told the command line's way, ``--model``. It is client text echoed
into answers, so it is cut to :data:`MAX_CHARS` and stripped of control and format characters.
One client speaks to a daemon, so the phrase is the process's.
"""

from __future__ import annotations

MAX_CHARS = 200
_phrase: str | None = None


def set_phrase(text: str | None) -> None:
    global _phrase
    cleaned = " ".join("".join(c if c.isprintable() else " " for c in text or "").split())[:MAX_CHARS]
    _phrase = cleaned or None


def phrase() -> str | None:
    """The client's phrase, None when it gave none."""
    return _phrase


def choose_model(fallback: str) -> str:
    """``fallback`` (the command line's way) for a client without a phrase, else "choose one with <phrase>"."""
    return f"choose one with {_phrase}" if _phrase else fallback
