"""Another editor on the same server, for tests/attach.lua: attaches to the workspace's server
(`pi-daemon attach`), holds the session given, answers the first permission request it is sent
with allow_once and prints "answered".

Run: python other_client.py WORKSPACE SESSION_ID (XDG_RUNTIME_DIR names the runtime folder)
"""

from __future__ import annotations

import sys
import threading

from pi_daemon.client import Client

workspace, session = sys.argv[1], sys.argv[2]
answered = threading.Event()


def allow(params: object) -> dict[str, str]:
    answered.set()
    return {"outcome": "allow_once"}


with Client("attach", "--workspace", workspace, handlers={"permission/request": allow}) as pi:
    pi.request("initialize", {"capabilities": {"permissions": True}})
    pi.request("session/load", {"sessionId": session})
    if not answered.wait(30):
        sys.exit("no permission request came")
    print("answered", flush=True)
