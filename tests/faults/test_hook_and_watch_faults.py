"""Fault suite, the edit hook and the watcher: a FIFO named like a note, and a busy index.

Before: a FIFO `*.md` in a source hung scripts/reindex_hook.py and the watcher thread of
`serve --watch` for ever (the index silently stopped following the disk), and the hook waited
up to 30 s on an index another process was writing although the docs say it never blocks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import REPO, make_settings, write
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App
from vault_index.services.watch import Watcher

HOOK_TIMEOUT_S = 20  # a hang guard, well under the 30 s busy wait the hook used to do
WAIT_S = 15.0
LOCK_HOLD_S = 60  # the other writer holds the index far longer than the hook may wait

HOLD_WRITE_LOCK = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
"""


@pytest.fixture
def indexed(tmp_path):
    """A keyword-only index of a small vault with a FIFO named pipe.md in it; yields (vault, db)."""
    vault = tmp_path / "vault"
    write(vault, "garden.md", "# Garden\n\nwombatgarden beds\n")
    os.mkfifo(vault / "pipe.md")
    app = App.open(make_settings(tmp_path), models=Models.fixed(None))
    app.index([str(vault)])
    app.close()
    yield vault, tmp_path / "index.db"
    _release_fifo(vault / "pipe.md")


def run_hook(file_path: Path, db: Path) -> subprocess.CompletedProcess:
    payload = {"session_id": "sess-1", "cwd": str(file_path.parent), "hook_event_name": "PostToolUse",
               "tool_name": "Edit", "tool_input": {"file_path": str(file_path)},
               "tool_response": {"filePath": str(file_path)}}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "VAULT_"))}
    env.update(VAULT_INDEX_DB=str(db), VAULT_EMBED_MODEL="none", VAULT_RERANK="0", HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, str(REPO / "scripts" / "reindex_hook.py")], input=json.dumps(payload),
                          capture_output=True, text=True, env=env, timeout=HOOK_TIMEOUT_S)


def found(tmp_path: Path, word: str) -> list[str]:
    app = App.open(make_settings(tmp_path), models=Models.fixed(None))
    try:
        return [Path(h.path).name for h in app.search(word, mode="keyword").hits]
    finally:
        app.close()


def test_the_edit_hook_on_a_fifo_named_like_a_note_returns_and_indexing_goes_on(indexed, tmp_path):
    vault, db = indexed
    try:
        done = run_hook(vault / "pipe.md", db)
    except subprocess.TimeoutExpired:
        pytest.fail("the edit hook blocked on a FIFO named pipe.md")
    assert done.returncode == 0 and "Traceback" not in done.stderr and done.stdout == ""
    write(vault, "garden.md", "# Garden\n\nwombatedited beds\n")
    done = run_hook(vault / "garden.md", db)
    assert done.returncode == 0 and done.stderr == ""
    assert found(tmp_path, "wombatedited") == ["garden.md"]


def test_the_watcher_outlives_a_fifo_named_like_a_note(indexed, tmp_path):
    vault, _ = indexed
    settings = make_settings(tmp_path)
    changes: list[tuple[str, str]] = []
    watcher = Watcher(lambda: App.open(settings, models=Models.fixed(None)), debounce=0.1,
                      on_change=lambda kind, path: changes.append((kind, path)), catch_up=False)
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert watcher.ready.wait(WAIT_S)
        os.utime(vault / "pipe.md")  # an event for the FIFO first, then a real edit
        os.mkfifo(vault / "second-pipe.md")
        time.sleep(0.3)
        write(vault, "after.md", "# After\n\nwombatafter the pipes\n")
        assert _wait_for(lambda: ("indexed", str(vault / "after.md")) in changes), (
            f"the watcher stopped following the disk; changes: {changes}")
        assert found(tmp_path, "wombatafter") == ["after.md"]
    finally:
        stop.set()
        for fifo in ("pipe.md", "second-pipe.md"):
            _release_fifo(vault / fifo)
        thread.join(WAIT_S)
    assert not thread.is_alive()


def test_the_edit_hook_gives_up_fast_on_a_busy_index_and_the_next_sync_takes_the_file(indexed, tmp_path):
    vault, db = indexed
    holder = subprocess.Popen([sys.executable, "-c", HOLD_WRITE_LOCK, str(db), str(LOCK_HOLD_S)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        write(vault, "garden.md", "# Garden\n\nwombatbusy edit\n")
        started = time.monotonic()
        try:
            done = run_hook(vault / "garden.md", db)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the edit hook waited over {HOOK_TIMEOUT_S} s on a busy index")
        waited = time.monotonic() - started
        assert done.returncode == 0 and "Traceback" not in done.stderr
        assert "busy" in done.stderr and "next `vault-index index`" in done.stderr, done.stderr
        assert holder.poll() is None  # the lock was still held the whole time
    finally:
        holder.kill()
        holder.wait(WAIT_S)
    app = App.open(make_settings(tmp_path), models=Models.fixed(None))
    try:
        app.index(None)  # the next sync picks the file up
    finally:
        app.close()
    assert found(tmp_path, "wombatbusy") == ["garden.md"]
    print(f"hook returned after {waited:.2f} s while the index was locked")


def _wait_for(condition, timeout: float = WAIT_S) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def _release_fifo(fifo: Path) -> None:
    """Open the FIFO for writing, so a reader stuck opening it (the bug) returns."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass
