"""Reading a run's events off a daemon in end-to-end tests."""


def events(d, kind: str) -> list[dict]:
    """Every event of this type so far, in order."""
    return [e["event"] for e in d.events if e["event"]["type"] == kind]


def final_message(d, count: int = 1, timeout: float = 20) -> dict:
    """The last message once the ``count``-th run has settled."""
    d.wait_event("agent_settled", count, timeout=timeout)
    return events(d, "message_end")[-1]["message"]
