"""Who is on the other end of a connection: the kernel's word (``SO_PEERCRED``), not the client's.

The folder's 0700 already keeps other users from the socket; the check is the second lock on
the door (a folder made reachable by mistake, a process that was handed the descriptor).
"""

from __future__ import annotations

import os
import socket
import struct
from typing import NamedTuple

_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


class Credentials(NamedTuple):
    pid: int
    uid: int
    gid: int


def credentials(conn: socket.socket) -> Credentials:
    return Credentials(*_UCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)))


def refusal(peer: Credentials, uid: int | None = None) -> str | None:
    """Why a connection from ``peer`` is refused (None: it is this user's, uid ``uid`` or ours)."""
    own = os.getuid() if uid is None else uid
    if peer.uid != own:
        return f"a connection from uid {peer.uid} (pid {peer.pid}) refused: only uid {own} may connect"
    return None
