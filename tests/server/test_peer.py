"""The peer-credential check: the kernel's word on who connected, and only this user passes."""

from __future__ import annotations

import os
import socket

from pi_daemon.server.peer import Credentials, credentials, refusal


def test_a_connection_of_this_user_passes_and_another_uid_is_refused():
    assert refusal(Credentials(pid=123, uid=1000, gid=1000), uid=1000) is None
    why = refusal(Credentials(pid=123, uid=1001, gid=1000), uid=1000)
    assert why is not None and "uid 1001" in why and "pid 123" in why and "only uid 1000" in why
    assert refusal(Credentials(pid=1, uid=0, gid=0), uid=1000) is not None  # root is another user too


def test_the_credentials_are_the_kernel_s():
    ours, theirs = socket.socketpair(socket.AF_UNIX)
    with ours, theirs:
        assert credentials(ours) == Credentials(os.getpid(), os.getuid(), os.getgid())
        assert refusal(credentials(ours)) is None
