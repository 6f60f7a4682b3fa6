"""The hooks' side of the index socket (ADR 0010): hand an edit to the running server, or ask it a search.

Imports `os` and CPython's C socket module only. The hook imports this (and vault_index.locations)
before anything else and returns as soon as the server answers, so what it imports here is what
every edit waits for while a server runs. It does not even parse its JSON payload: it forwards the
bytes and the server, which has `json` loaded already, reads the edited path out of them (with
`target_path` and `tool_failed` below, the same functions the hook uses when no server runs).
Measured as fresh processes on the 2-core machine at load 2.7: `python -c pass` 33 ms p50,
`import json` 99 ms, `import socket` 92 ms (it pulls in enum and selectors), `import _socket` 59 ms.
The server's side (services/writes/edit_queue.py: threads, a queue, peer credentials) is never loaded
by the hook.

The prompt hook asks for a search the same way (`ask_search`): `search\n<JSON request>` to EOF, and
the server answers one JSON object (services/prompt_recall.py's Injection, or why it did not search).
"""

from __future__ import annotations

import os
import stat  # os imports it already: free
import sys

try:  # the C module under `socket`: the same calls, without the Python wrapper's imports
    import _socket as _sock
except ImportError:  # another Python implementation
    import socket as _sock

SOCKET_SUFFIX = ".sock"
# sun_path holds 108 bytes on Linux (104 on macOS); longer socket paths cannot be bound.
MAX_SOCKET_PATH_BYTES = 100
# Trigger: the hook runs before Claude Code's next step. Why: a busy or hung server must never
# hold an edit up. Outcome: connect, send and read the answer within this, or do it ourselves.
HAND_OFF_TIMEOUT_S = 0.25
QUEUED, REFUSED = b"queued\n", b"refused\n"
# A hook's whole payload, forwarded: `PAYLOAD_PREFIX <base folder>\n<the JSON bytes>`, then EOF.
# The base folder resolves a relative file_path when the payload has no cwd. An absolute path
# never starts with this word, so the older one-line request (`<path>\n`) stays unambiguous.
PAYLOAD_PREFIX = b"payload "
# Trigger: a Write's payload holds the whole new file. Outcome: the server reads at most this
# much (a larger payload gets no answer and the hook re-indexes the note itself).
MAX_PAYLOAD_BYTES = 16 * 1024 * 1024
# The prompt hook's search request: `SEARCH_PREFIX<JSON>`, then EOF; the answer is JSON, then EOF.
# A path never starts with "search\n" (it is absolute) and a payload starts with "payload ".
SEARCH_PREFIX = b"search\n"
MAX_SEARCH_REQUEST_BYTES = 64 * 1024  # a prompt is cut to the query's 2,000 characters before it is sent
MAX_SEARCH_ANSWER_BYTES = 64 * 1024  # three notes of a line or two
# Trigger: the prompt waits for the hook. Why: the warm server answers in tens of milliseconds, but one
# busy loading its model or serving a long tool call must not hold the prompt. Outcome: past this the
# hook searches by keywords itself (the server finishes its search, and is warm for the next prompt).
SEARCH_TIMEOUT_S = 1.0
NOTE_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".txt"})  # = engine.sources.NOTE_SUFFIXES (tested)


def socket_name(db_path: str | os.PathLike) -> str:
    """The socket that serves the index at `db_path`: named after it, in the same folder."""
    return os.fspath(db_path) + SOCKET_SUFFIX


def usable(path: str | os.PathLike) -> bool:
    """Whether this platform has Unix sockets and `path` is short enough to bind."""
    return hasattr(_sock, "AF_UNIX") and len(os.fsencode(os.fspath(path))) <= MAX_SOCKET_PATH_BYTES


def _text(mapping: object, key: str) -> str:
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return value if isinstance(value, str) else ""


def tool_failed(response: object) -> bool:
    """Whether tool_response says the edit did not happen (PostToolUse normally means success)."""
    if not isinstance(response, dict):
        return False
    return response.get("success") is False or bool(response.get("error")) or response.get("is_error") is True


def target_path(payload: dict, base: str) -> str | None:
    """The edited file of a PostToolUse payload as an absolute path; None when there is none.

    A relative file_path is joined to the payload's cwd, else to `base` (CLAUDE_PROJECT_DIR or
    the hook's working folder)."""
    tool_input = payload.get("tool_input")
    raw = _text(tool_input, "file_path") or _text(tool_input, "notebook_path")
    if not raw or "\x00" in raw:
        return None
    path = os.path.expanduser(raw)
    if not os.path.isabs(path):
        path = os.path.join(_text(payload, "cwd") or base, path)
    return path


def edited_note(payload: dict, base: str) -> str | None:
    """The note a PostToolUse payload changed, or None: no path, a failed tool, not a note suffix."""
    path = target_path(payload, base)
    if path is None or tool_failed(payload.get("tool_response")):
        return None
    return path if os.path.splitext(path)[1].lower() in NOTE_SUFFIXES else None


def ours(path: str) -> bool:
    """Whether `path` is a socket (not a symlink to one) owned by this user.

    Trigger: the hook sent to any socket at `<index>.sock`, whoever had put it there (issue 22).
    Outcome: lstat first (no link is followed); the peer's uid is checked again after connecting."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(info.st_mode) and info.st_uid == os.getuid()


def _peer_is_us(client) -> bool:
    """The connected server runs as this user (SO_PEERCRED: pid, uid, gid); True where the platform
    cannot say (the lstat owner check stands alone there)."""
    option = getattr(_sock, "SO_PEERCRED", None)
    if option is None:
        return True
    creds = client.getsockopt(_sock.SOL_SOCKET, option, 12)
    return int.from_bytes(creds[4:8], sys.byteorder) == os.getuid()


def _exchange(db_path: str | os.PathLike, request: bytes, timeout: float, limit: int) -> bytes | None:
    """Send `request` to this user's server of `db_path` and read its answer to EOF (at most `limit`
    bytes); None when no server of ours answers in `timeout` seconds in all."""
    import time

    path = socket_name(db_path)
    if not usable(path) or not ours(path):
        return None
    deadline = time.monotonic() + timeout
    client = _sock.socket(_sock.AF_UNIX, _sock.SOCK_STREAM)
    try:
        client.settimeout(timeout)
        client.connect(path)
        if not _peer_is_us(client):
            return None
        client.sendall(request)
        client.shutdown(_sock.SHUT_WR)  # the end of the request
        parts, size = [], 0
        while size <= limit:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            client.settimeout(left)
            part = client.recv(min(65536, limit + 1 - size))
            if not part:
                break
            parts.append(part)
            size += len(part)
    except OSError:  # TimeoutError included
        return None
    finally:
        client.close()
    return b"".join(parts) if size <= limit else None


def _ask(db_path: str | os.PathLike, request: bytes, timeout: float) -> str | None:
    answer = _exchange(db_path, request, timeout, 16)
    return {QUEUED: "queued", REFUSED: "refused"}.get(answer) if answer is not None else None


def hand_off(db_path: str | os.PathLike, note: str, timeout: float = HAND_OFF_TIMEOUT_S) -> str | None:
    """Give `note` (an absolute path) to the server of `db_path`.

    Returns "queued" (the server will re-index it), "refused" (the server will not: outside
    every source or not a note there), or None (no server answered: re-index it yourself).
    """
    return _ask(db_path, os.fsencode(note) + b"\n", timeout)


def hand_off_payload(db_path: str | os.PathLike, payload: bytes, base: str,
                     timeout: float = HAND_OFF_TIMEOUT_S) -> str | None:
    """Forward a PostToolUse hook's raw JSON payload to the server of `db_path`, unparsed.

    The same answers as `hand_off`; "refused" also covers a payload that names no note (another
    file, a failed tool). None: no server, or it did not answer (parse and re-index yourself)."""
    if len(payload) > MAX_PAYLOAD_BYTES or "\n" in base or "\x00" in base:
        return None
    return _ask(db_path, PAYLOAD_PREFIX + os.fsencode(base) + b"\n" + payload, timeout)


def ask_search(db_path: str | os.PathLike, request: dict, timeout: float = SEARCH_TIMEOUT_S) -> dict | None:
    """Ask the server of `db_path` for the prompt hook's search: `request` is {"project", "prompt",
    "already"}. The answer is {"status": "ok", "injection": {...}}, or another status ("elsewhere":
    it serves another workspace; "busy"; "off") for which the hook searches itself; None when no
    server of this user answered in time."""
    import json

    data = SEARCH_PREFIX + json.dumps(request).encode("utf-8")
    if len(data) > MAX_SEARCH_REQUEST_BYTES:
        return None
    answer = _exchange(db_path, data, timeout, MAX_SEARCH_ANSWER_BYTES)
    if not answer:
        return None
    try:
        found = json.loads(answer.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    return found if isinstance(found, dict) else None
