"""The edit hook's side of the hand-off to the running server (ADR 0010): send a path, read the answer.

Imports `os` and `socket` only. The hook imports this (and vault_index.locations) before anything
else and returns as soon as the server answers, so what it imports here is what every note edit
waits for while a server runs; the server's side (services/edit_queue.py: threads, a queue, peer
credentials) is never loaded by the hook.
"""

from __future__ import annotations

import os
import socket

SOCKET_SUFFIX = ".sock"
# sun_path holds 108 bytes on Linux (104 on macOS); longer socket paths cannot be bound.
MAX_SOCKET_PATH_BYTES = 100
# Trigger: the hook runs before Claude Code's next step. Why: a busy or hung server must never
# hold an edit up. Outcome: connect, send and read the answer within this, or do it ourselves.
HAND_OFF_TIMEOUT_S = 0.25
QUEUED, REFUSED = b"queued\n", b"refused\n"


def socket_name(db_path: str | os.PathLike) -> str:
    """The socket that serves the index at `db_path`: named after it, in the same folder."""
    return os.fspath(db_path) + SOCKET_SUFFIX


def usable(path: str | os.PathLike) -> bool:
    """Whether this platform has Unix sockets and `path` is short enough to bind."""
    return hasattr(socket, "AF_UNIX") and len(os.fsencode(os.fspath(path))) <= MAX_SOCKET_PATH_BYTES


def hand_off(db_path: str | os.PathLike, note: str, timeout: float = HAND_OFF_TIMEOUT_S) -> str | None:
    """Give `note` (an absolute path) to the server of `db_path`.

    Returns "queued" (the server will re-index it), "refused" (the server will not: outside
    every source or not a note there), or None (no server answered: re-index it yourself).
    """
    path = socket_name(db_path)
    if not usable(path) or not os.path.exists(path):
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(timeout)
            client.connect(path)
            client.sendall(os.fsencode(note) + b"\n")
            answer = client.recv(16)
    except OSError:
        return None
    return {QUEUED: "queued", REFUSED: "refused"}.get(answer)
