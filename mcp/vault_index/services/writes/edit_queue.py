"""Hand-off of edited notes from the PostToolUse hook to the running server (ADR 0010).

The hook is a fresh process per edit: with vectors live, re-indexing there means loading the
embedding model every time (0.65-1.5 s). A running server has the model loaded already. So the
server listens on a Unix socket beside the index file (`<db>.sock`, mode 0600, same user only),
the hook sends the edited path and returns, and the server re-indexes with its loaded model.

The channel carries one thing: an edited path, either as a line or inside the hook's forwarded
PostToolUse payload (the hook then need not import `json`). The server applies the same rules as
a full sync (inside a registered source, a note there, never `secrets/` or hidden folders) before
it queues it, and answers `queued` or `refused`; anything else (no path, too long, another user)
is dropped.
When no server listens, `hand_off` says so at once and the hook re-indexes in its own process.

The same socket answers the prompt hook's search (`search\n<JSON>`, edit_client.ask_search) when the
server gives the listener a `search` function: each such request runs on a thread of its own, so a
search never holds an edit's hand-off, and at most MAX_SEARCHES at once (beyond: "busy").

The hook's side (`hand_off`) lives in services/writes/edit_client.py, which imports `os` and `socket`
only; this module is the server's side.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vault_index.services.writes.edit_client import (  # the hook's side; re-exported for callers
    HAND_OFF_TIMEOUT_S,
    MAX_PAYLOAD_BYTES,
    MAX_SEARCH_REQUEST_BYTES,
    MAX_SOCKET_PATH_BYTES,
    PAYLOAD_PREFIX,
    QUEUED,
    REFUSED,
    SEARCH_PREFIX,
    SOCKET_SUFFIX,
    edited_note,
    hand_off,
    hand_off_payload,
    socket_name,
    usable,
)

__all__ = ["EditListener", "HAND_OFF_TIMEOUT_S", "MAX_SOCKET_PATH_BYTES", "SOCKET_SUFFIX", "hand_off",
           "hand_off_payload", "socket_path"]

SOCKET_MODE = 0o600
MAX_REQUEST_BYTES = 4096  # a path; PATH_MAX on Linux
READ_TIMEOUT_S = 0.5  # the server waits this long for a client's one line, then drops it
MAX_SEARCHES = 4  # prompt searches answered at once; they share the server's one search lock anyway


def socket_path(db_path: Path | str) -> Path:
    """The socket that serves the index at `db_path`: named after it, in the same folder."""
    return Path(socket_name(db_path))


def _usable(path: Path) -> bool:
    return usable(path)


def _same_user(conn: socket.socket) -> bool:
    """Only the user who runs the server may hand it paths (the 0600 mode says the same)."""
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is None:
        return True  # macOS: no SO_PEERCRED; the socket's mode is the guard there
    _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i")))
    return uid == os.getuid()


@dataclass(frozen=True)
class Search:
    """A search request read off the socket: the JSON object the hook sent."""

    request: dict


def _read_request(conn: socket.socket) -> str | Search | None:
    """The note a client names, as an absolute path; "" for a well-formed payload that names
    no note (answered `refused`); a Search for the prompt hook's request; None for anything else
    (no answer).

    Two forms: one line holding an absolute path, or a hook's forwarded payload
    (`payload <base>\n<JSON>` up to EOF; edit_client.hand_off_payload), whose edited note is read
    with the rules the hook applies itself when no server runs (edit_client.edited_note).
    Trigger: the per-recv timeout let a client trickle a byte at a time hold the one listener
    thread (and every hook's hand-off behind it) for minutes. Outcome: READ_TIMEOUT_S bounds the
    whole request, not each read."""
    deadline = time.monotonic() + READ_TIMEOUT_S
    chunks: list[bytes] = []
    size, limit = 0, MAX_REQUEST_BYTES
    while size <= limit:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        conn.settimeout(left)
        part = conn.recv(min(1 << 20, limit + 1 - size))
        if not part:
            break
        chunks.append(part)
        size += len(part)
        if len(chunks) == 1 and part.startswith(PAYLOAD_PREFIX[:size]):
            limit = MAX_REQUEST_BYTES + MAX_PAYLOAD_BYTES  # a payload: read to EOF
        elif len(chunks) == 1 and part.startswith(SEARCH_PREFIX[:size]):
            limit = MAX_SEARCH_REQUEST_BYTES  # a search request: read to EOF
        elif limit == MAX_REQUEST_BYTES and b"\n" in part:
            break
    if size > limit:
        return None
    data = b"".join(chunks)
    if data.startswith(SEARCH_PREFIX):
        return _search_request(data[len(SEARCH_PREFIX):])
    line, newline, rest = data.partition(b"\n")
    if not newline or not line or b"\x00" in line:
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if line.startswith(PAYLOAD_PREFIX):
        return _payload_note(text[len(PAYLOAD_PREFIX):], rest)
    return text if os.path.isabs(text) else None


def _payload_note(base: str, raw: bytes) -> str | None:
    try:
        payload = json.loads(raw.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(payload, dict) or not os.path.isabs(base):
        return None
    return edited_note(payload, base) or ""  # "": a payload, but no note in it (refused)


def _search_request(raw: bytes) -> Search | None:
    try:
        request = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    return Search(request) if isinstance(request, dict) else None


class EditListener:
    """Listen on the index's socket; re-index what hooks hand over, on a thread of its own.

    `open_app` is called on each of the two threads (SQLite connections stay on their thread):
    the listener's App only checks paths against the sources, the worker's re-indexes them.
    `search` (the server's, surfaces/hook_search.py) answers the prompt hook's requests: request
    dict -> answer dict; without it a search request is answered {"status": "off"}.
    """

    def __init__(self, db_path: Path | str, open_app: Callable, search: Callable[[dict], dict] | None = None):
        self.path = socket_path(db_path)
        self.open_app = open_app
        self.search = search
        self._searches = threading.BoundedSemaphore(MAX_SEARCHES)
        self.paths: queue.Queue = queue.Queue()
        self.done = 0  # notes re-indexed (tests and status read it)
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._server: socket.socket | None = None
        self._threads: list[threading.Thread] = []

    def start(self) -> bool:
        """Bind and start; False when the path cannot hold a socket or another server owns it."""
        if not _usable(self.path) or self._taken():
            return False
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()  # a stale socket: _taken() found no one answering on it
            server.bind(str(self.path))
            # Trigger: bind creates the file with the umask's mode. Why: nobody can connect before
            # listen(), so narrowing the mode here leaves no window. Outcome: 0600 before listen.
            os.chmod(self.path, SOCKET_MODE)
            server.listen(16)
        except OSError:
            server.close()
            return False
        server.settimeout(0.2)
        self._server = server
        for name, target in (("vault-index-edits-listen", self._listen), ("vault-index-edits-work", self._work)):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return True

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(OSError):
                self.path.unlink()

    def _taken(self) -> bool:
        """Whether a live server already answers on the socket (two sessions on one index)."""
        if not self.path.exists():
            return False
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(HAND_OFF_TIMEOUT_S)
            try:
                probe.connect(str(self.path))
            except OSError:
                return False
        return True

    def _listen(self) -> None:
        from vault_index.engine.indexer import is_indexable  # the rule reindex_file applies

        app = self.open_app()
        try:
            while not self._stop.is_set():
                try:
                    conn, _ = self._server.accept()
                except TimeoutError:
                    continue
                except OSError:
                    break
                if not self._answer(app, conn, is_indexable):
                    conn.close()
        finally:
            app.close()

    def _answer(self, app, conn: socket.socket, is_indexable: Callable) -> bool:
        """Answer one client; True when a search thread took the connection (it closes it)."""
        try:
            if not _same_user(conn):
                return False
            note = _read_request(conn)
            if note is None:
                return False
            if isinstance(note, Search):
                return self._start_search(conn, note.request)
            if note and is_indexable(app.store, note):
                self.paths.put(note)
                conn.sendall(QUEUED)
            else:
                conn.sendall(REFUSED)
        except Exception as exc:  # noqa: BLE001 - one bad client must not stop the listener
            self._note_error(f"edit hand-off: {exc}")
        return False

    def _start_search(self, conn: socket.socket, request: dict) -> bool:
        if self.search is None or not self._searches.acquire(blocking=False):
            self._send(conn, {"status": "off" if self.search is None else "busy"})
            return False
        thread = threading.Thread(target=self._run_search, args=(conn, request), name="vault-index-hook-search",
                                  daemon=True)
        thread.start()
        return True

    def _run_search(self, conn: socket.socket, request: dict) -> None:
        try:
            with conn:
                try:
                    answer = self.search(request)
                except Exception as exc:  # noqa: BLE001 - the hook then searches by itself
                    self._note_error(f"prompt search: {type(exc).__name__}: {exc}")
                    answer = {"status": "error"}
                self._send(conn, answer)
        finally:
            self._searches.release()

    def _send(self, conn: socket.socket, answer: dict) -> None:
        try:
            conn.settimeout(READ_TIMEOUT_S)
            conn.sendall(json.dumps(answer).encode("utf-8"))
        except OSError:
            pass  # the hook gave up waiting: it searched by itself

    def _work(self) -> None:
        app = self.open_app()
        try:
            while not self._stop.is_set():
                try:
                    first = self.paths.get(timeout=0.2)
                except queue.Empty:
                    continue
                batch = {first}
                while not self.paths.empty():
                    batch.add(self.paths.get_nowait())
                for note in sorted(batch):
                    try:
                        app.reindex_file(note)
                        self.done += 1
                    except Exception as exc:  # noqa: BLE001 - a busy index or a bad file: the watcher or next sync retries
                        self._note_error(f"re-index {note}: {exc}")
        finally:
            app.close()

    def _note_error(self, message: str) -> None:
        self.errors = (self.errors + [message])[-100:]
        print(f"vault-index: {message}", file=sys.stderr)
