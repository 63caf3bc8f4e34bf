"""``pi-daemon serve``, ``attach`` and ``ps``: one server per workspace on a Unix socket.

* :mod:`.runtime` — the runtime folder (checked before use) and a workspace's files in it;
* :mod:`.instance` — the lock that makes one server per workspace, and the info file ``ps`` reads;
* :mod:`.peer` — who is on the other end of a connection (refused unless it is this user);
* :mod:`.listener` — the socket, its connections, the idle exit;
* :mod:`.attach` — stdin/stdout bridged to the socket, the server started when none runs (kept
  small: it imports only what it needs);
* :mod:`.ps` — the running servers of this user.
"""
