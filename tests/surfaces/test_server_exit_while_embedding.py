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
import sqlite3
import subprocess
import time

from helpers import CLI, write
from vault_index.engine.indexer import EMBED_COMMIT_BATCH

# One chunk each; the session ends once the first commit of vectors landed, so the watcher is
# inside the second batch's embedding on any machine, and the resume embeds what that cut short.
NOTES = 4 * EMBED_COMMIT_BATCH + 36  # several batches: a warm model (the prompt hook's warm-up) finished one alone


def _env(home, model_cache) -> dict:
    return {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "VAULT_RERANK": "0",
            "VAULT_MODEL_CACHE": str(model_cache)}  # the real shipped model, built once per run


def _changed_notes(folder) -> None:
    """Notes changed while no server ran: the next server's catch-up sync embeds them."""
    for i in range(NOTES):
        write(folder, f"note-{i}.md", f"# Note {i}\n\n" + f"Sentence {i} about the wombat rota. " * 6 + "\n")


def _status(env, cwd) -> dict:
    return json.loads(subprocess.run([CLI, "status", "--json"], env=env, cwd=cwd, check=True, capture_output=True,
                                     text=True, timeout=120).stdout)


def _wait_for_vectors(db: str, at_least: int, proc) -> None:
    """Until the index holds `at_least` vectors (read-only; the server keeps embedding)."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
                if conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] >= at_least:
                    return
        except sqlite3.OperationalError:
            pass  # not created yet
        time.sleep(0.05)
    raise AssertionError(f"the watcher stored fewer than {at_least} vectors (server exit code {proc.poll()})")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _send(proc, message: dict) -> None:
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()


def test_closing_stdin_while_the_watcher_embeds_exits_cleanly_and_the_embedding_resumes(tmp_path,
                                                                                        shipped_model_cache):
    home = tmp_path / "home"
    notes = home / "notes"
    env = _env(home, shipped_model_cache)
    write(notes, "first.md", "# First\n\nThe first note.\n")
    subprocess.run([CLI, "index", str(notes)], env=env, cwd=home, check=True, capture_output=True, timeout=300)
    db = _status(env, home)["db"]
    _changed_notes(notes)
    proc = subprocess.Popen([CLI, "--watch"], env=env, cwd=home, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "test", "version": "0"}}})
        assert json.loads(proc.stdout.readline())["id"] == 1
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _wait_for_vectors(db, 1 + EMBED_COMMIT_BATCH, proc)
        proc.stdin.close()  # the session ends, as Claude Code ends it
        code = proc.wait(timeout=30)
    finally:
        proc.kill()
        err = proc.stderr.read()
    assert "terminate called" not in err, err[-2000:]
    assert code == 0, err[-2000:]
    cut_short = _status(env, home)
    assert cut_short["vectors"] < cut_short["chunks"], cut_short  # the session did end mid-embedding
    # nothing was lost: the next sync finishes the embedding the session cut short
    subprocess.run([CLI, "index"], env=env, cwd=home, check=True, capture_output=True, timeout=600)
    status = _status(env, home)
    assert status["files"] == NOTES + 1, status
    assert status["vectors"] == status["chunks"] > NOTES, status


def test_ctrl_c_on_serve_http_while_the_watcher_embeds_exits_cleanly(tmp_path, shipped_model_cache):
    home = tmp_path / "home"
    home.mkdir()
    env, vault, port = _env(home, shipped_model_cache), home / "team-vault", _free_port()
    subprocess.run([CLI, "init", str(vault)], env=env, cwd=home, check=True, capture_output=True, timeout=300)
    subprocess.run([CLI, "token", "new", "--role", "editor"], env=env, cwd=vault, check=True, capture_output=True,
                   timeout=120)
    db = _status(env, vault)["db"]
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
        _wait_for_vectors(db, EMBED_COMMIT_BATCH, proc)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
        err = proc.stderr.read()
    assert "terminate called" not in err, err[-2000:]
    assert code == 0, err[-2000:]
