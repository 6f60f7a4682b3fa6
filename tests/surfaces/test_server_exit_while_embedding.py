"""A server that ends while its --watch catch-up sync embeds must not die of SIGABRT (stdio, HTTP).

Found walking docs/getting-started.md on a fresh clone: notes added while no session ran are
embedded by the watcher when the next server starts; a short session (one /recall, then quit)
closed stdin mid-embedding and the server died of "terminate called without an active exception"
(exit -6). The real shipped model runs here, since the abort came from onnxruntime itself.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time

from helpers import CLI, write

NOTES = 150  # enough chunks that embedding outlasts the session on any machine (one chunk each)
SESSION_S = 1.5  # the session's length after the handshake (the model loads meanwhile)


def _env(home) -> dict:
    return {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "VAULT_RERANK": "0"}


def _changed_notes(folder) -> None:
    """Notes changed while no server ran: the next server's catch-up sync embeds them."""
    for i in range(NOTES):
        write(folder, f"note-{i}.md", f"# Note {i}\n\n" + f"Sentence {i} about the wombat rota. " * 28 + "\n")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _send(proc, message: dict) -> None:
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()


def test_closing_stdin_while_the_watcher_embeds_exits_cleanly_and_the_embedding_resumes(tmp_path):
    home = tmp_path / "home"
    notes = home / "notes"
    env = _env(home)
    write(notes, "first.md", "# First\n\nThe first note.\n")
    subprocess.run([CLI, "index", str(notes)], env=env, cwd=home, check=True, capture_output=True, timeout=300)
    _changed_notes(notes)
    proc = subprocess.Popen([CLI, "--watch"], env=env, cwd=home, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "test", "version": "0"}}})
        assert json.loads(proc.stdout.readline())["id"] == 1
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        time.sleep(SESSION_S)
        proc.stdin.close()  # the session ends, as Claude Code ends it
        code = proc.wait(timeout=30)
    finally:
        proc.kill()
        err = proc.stderr.read()
    assert "terminate called" not in err, err[-2000:]
    assert code == 0, err[-2000:]
    # nothing was lost: the next sync finishes the embedding the session cut short
    subprocess.run([CLI, "index"], env=env, cwd=home, check=True, capture_output=True, timeout=600)
    status = json.loads(subprocess.run([CLI, "status", "--json"], env=env, cwd=home, check=True,
                                       capture_output=True, text=True, timeout=120).stdout)
    assert status["files"] == NOTES + 1, status
    assert status["vectors"] == status["chunks"] > NOTES, status


def test_ctrl_c_on_serve_http_while_the_watcher_embeds_exits_cleanly(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env, vault, port = _env(home), home / "team-vault", _free_port()
    subprocess.run([CLI, "init", str(vault)], env=env, cwd=home, check=True, capture_output=True, timeout=300)
    subprocess.run([CLI, "token", "new", "--role", "editor"], env=env, cwd=vault, check=True, capture_output=True,
                   timeout=120)
    _changed_notes(vault / "research")
    proc = subprocess.Popen([CLI, "serve", "--http", str(port), "--watch"], env=env, cwd=vault,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # serving: the watcher started beside it
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        time.sleep(SESSION_S)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
        err = proc.stderr.read()
    assert "terminate called" not in err, err[-2000:]
    assert code == 0, err[-2000:]
