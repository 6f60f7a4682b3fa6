"""Issue 22 (Medium): the edit hook sends only the note's path, and only to a socket that is a
socket (not a symlink) owned by this user. On the old code the whole payload (the written file's
content included) went to whatever answered at `<index>.sock`."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest
from hookrun import hook_env, run_script

SECRET = "ghp_this-is-the-file-content-0123456789"


class Listener:
    """A real Unix socket server that records what each client sent and answers `queued`."""

    def __init__(self, path: Path):
        self.path = path
        self.received: list[bytes] = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(4)
        self.server.settimeout(30)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                data = b""
                while chunk := conn.recv(65536):
                    data += chunk
                self.received.append(data)
                conn.sendall(b"queued\n")

    def close(self) -> None:
        self.server.close()


def write_payload(note: Path) -> dict:
    return {"hook_event_name": "PostToolUse", "tool_name": "Write", "cwd": str(note.parent),
            "tool_input": {"file_path": str(note), "content": f"# Note\n\n{SECRET}\n"},
            "tool_response": {"filePath": str(note), "success": True}}


@pytest.fixture
def index(tmp_path) -> Path:
    db = tmp_path / "idx" / "index.db"
    db.parent.mkdir()
    db.write_bytes(b"")  # the hook only needs the index to exist before it looks for a server
    return db


def test_the_hook_sends_the_path_alone(tmp_path, index):
    note = tmp_path / "notes" / "a.md"
    note.parent.mkdir()
    note.write_text(f"# Note\n\n{SECRET}\n")
    listener = Listener(Path(str(index) + ".sock"))
    try:
        done = run_script("reindex_hook.py", write_payload(note), env=hook_env(VAULT_INDEX_DB=str(index)))
    finally:
        listener.close()
    assert done.returncode == 0, done.stderr
    assert len(listener.received) == 1
    assert listener.received[0] == os.fsencode(str(note)) + b"\n"  # old code: the payload, content included
    assert SECRET.encode() not in listener.received[0]


def test_a_symlink_at_the_socket_name_is_never_followed(tmp_path, index):
    rogue = Listener(tmp_path / "rogue.sock")
    os.symlink(tmp_path / "rogue.sock", str(index) + ".sock")
    note = tmp_path / "a.md"
    note.write_text("# Note\n")
    try:
        run_script("reindex_hook.py", write_payload(note), env=hook_env(VAULT_INDEX_DB=str(index)))
    finally:
        rogue.close()
    assert rogue.received == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a socket to another user needs root")
def test_a_socket_owned_by_another_user_gets_nothing(tmp_path, index):
    other = Listener(Path(str(index) + ".sock"))
    os.chown(str(index) + ".sock", 65534, 65534)  # nobody's socket, as another local user would leave it
    note = tmp_path / "a.md"
    note.write_text("# Note\n")
    try:
        run_script("reindex_hook.py", write_payload(note), env=hook_env(VAULT_INDEX_DB=str(index)))
    finally:
        other.close()
    assert other.received == []
