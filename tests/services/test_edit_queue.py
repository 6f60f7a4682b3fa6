"""The edit hook -> running server hand-off over the index's Unix socket (services/writes/edit_queue.py).

The listener runs in this process with the fake embedder (as the server would, with its loaded
model); the hook runs as Claude Code runs it, a separate process, so the socket is crossed for real.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from helpers import BIKE, GARDEN, FakeEmbedder, make_settings, write

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hooks"))
from hookrun import hook_env, run_script  # noqa: E402
from vault_index.engine.embedding.models import Models  # noqa: E402
from vault_index.services.app import App  # noqa: E402
from vault_index.services.writes import edit_queue  # noqa: E402
from vault_index.services.writes.edit_queue import (  # noqa: E402
    MAX_SOCKET_PATH_BYTES,
    EditListener,
    hand_off,
    hand_off_payload,
    socket_path,
)

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets only")
WAIT_S = 20.0


@pytest.fixture
def short_dir():
    """A short folder: a socket path must fit in sun_path (about 100 bytes), pytest's tmp_path may not."""
    path = Path(tempfile.mkdtemp(prefix="vi-eq-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def served(short_dir):
    """(vault, settings, embedder, listener): an indexed vault and a listener with the fake model."""
    vault = short_dir / "vault"
    write(vault, "garden.md", GARDEN)
    write(vault, "bike.md", BIKE)
    write(vault, "secrets/keys.md", "# Keys\n\nzanzibarsecret\n")
    settings = make_settings(short_dir)
    embedder = FakeEmbedder()
    models = Models.fixed(embedder)
    app = App.open(settings, models=models)
    app.index([str(vault)])
    app.close()
    listener = EditListener(settings.db_path, lambda: App.open(settings, models=models))
    assert listener.start()
    yield vault, settings, embedder, listener
    listener.stop()


def wait_for(condition, timeout: float = WAIT_S) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def found(settings, embedder, query: str, mode: str = "vector") -> set[str]:
    app = App.open(settings, models=Models.fixed(embedder))
    try:
        return {Path(h.path).name for h in app.search(query, mode).hits}
    finally:
        app.close()


def test_socket_sits_beside_the_index_and_only_its_user_may_use_it(served):
    _, settings, _, listener = served
    assert listener.path == socket_path(settings.db_path) == settings.db_path.with_name("index.db.sock")
    mode = os.stat(listener.path).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600


def test_a_handed_off_edit_is_reindexed_with_vectors_by_the_server(served):
    vault, settings, embedder, listener = served
    note = write(vault, "bike.md", BIKE + "\n## Lights\n\nquokkalumen dynamo headlight\n")
    before = embedder.count
    assert hand_off(settings.db_path, str(note)) == "queued"
    assert wait_for(lambda: listener.done >= 1)
    assert embedder.count > before  # embedded by the listener's (shared) model
    assert found(settings, embedder, "quokkalumen dynamo", "keyword") == {"bike.md"}
    assert "bike.md" in found(settings, embedder, "quokkalumen dynamo headlight")


@pytest.mark.parametrize("where", ["outside", "secret", "suffix"])
def test_paths_the_index_would_not_take_are_refused(served, short_dir, where):
    vault, settings, _, listener = served
    target = {"outside": write(short_dir, "elsewhere/x.md", "# X\n"),
              "secret": vault / "secrets" / "keys.md",
              "suffix": write(vault, "tool.py", "print(1)\n")}[where]
    assert hand_off(settings.db_path, str(target)) == "refused"
    time.sleep(0.3)
    assert listener.done == 0 and listener.paths.empty()


def edit(tool: str, file_path: str, cwd: str | None = None, **response) -> bytes:
    payload = {"hook_event_name": "PostToolUse", "tool_name": tool, "tool_input": {"file_path": file_path},
               "tool_response": response}
    if cwd is not None:
        payload["cwd"] = cwd
    return json.dumps(payload).encode()


def test_a_forwarded_payload_is_read_as_the_hook_would_read_it(served, short_dir):
    vault, settings, embedder, listener = served
    write(vault, "bike.md", BIKE + "\n## Brakes\n\nwallabypad disc brake\n")
    write(vault, "garden.md", GARDEN + "\n## Frost\n\nnumbatfrost fleece\n")
    elsewhere = str(short_dir / "elsewhere")
    assert hand_off_payload(settings.db_path, edit("Edit", "bike.md", str(vault)), elsewhere) == "queued"
    # no cwd in the payload: the hook's base folder resolves the relative path
    assert hand_off_payload(settings.db_path, edit("Write", "garden.md"), str(vault)) == "queued"
    assert wait_for(lambda: listener.done >= 2)
    assert found(settings, embedder, "wallabypad numbatfrost", "keyword") == {"bike.md", "garden.md"}
    # a failed tool, a file that is no note, a secret: answered at once, nothing queued
    refused = (edit("Edit", "bike.md", str(vault), success=False), edit("Edit", "tool.py", str(vault)),
               edit("Write", "secrets/keys.md", str(vault)), b"{}")
    for payload in refused:
        assert hand_off_payload(settings.db_path, payload, str(vault)) == "refused", payload
    time.sleep(0.3)
    assert listener.done == 2 and listener.paths.empty()


def test_what_is_not_one_absolute_path_gets_no_answer(served, monkeypatch):
    _, settings, _, listener = served
    monkeypatch.setattr(edit_queue, "MAX_PAYLOAD_BYTES", 1000)
    big = edit("Write", "/x/big.md") + b" " * 6000  # over the (lowered) payload cap
    requests = (b"relative/path.md\n", b"/a/b\x00c.md\n", b"\xff\xfe/bad\n", b"/" + b"a" * 5000 + b"\n", b"/no/nl",
                b"payload relative/base\n" + edit("Write", "x.md"), b"payload /base\nnot json",
                b"payload /base\n[1, 2]", b"payload /base" + edit("Write", "/x/y.md"), b"payload /base\n" + big)
    for request in requests:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(5)
            client.connect(str(listener.path))
            try:
                client.sendall(request)
                client.shutdown(socket.SHUT_WR)
                answer = client.recv(16)
            except (BrokenPipeError, ConnectionResetError):
                answer = b""  # the server hung up on an oversized request: no answer either
            assert answer == b""
    assert listener.done == 0 and listener.paths.empty()


def test_a_client_that_trickles_bytes_cannot_hold_the_listener(served):
    vault, settings, _, listener = served
    stop = threading.Event()

    def trickle() -> None:  # one byte every 0.1 s, for up to 12 s, never a newline
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as slow:
            slow.connect(str(listener.path))
            with contextlib.suppress(OSError):
                for _ in range(120):
                    if stop.wait(0.1):
                        break
                    slow.sendall(b"/")

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    time.sleep(0.3)  # the trickler is being read by the listener now
    try:
        assert hand_off(settings.db_path, str(vault / "bike.md"), timeout=4.0) == "queued"
    finally:
        stop.set()
        thread.join()


def test_with_no_server_hand_off_says_so_at_once(short_dir):
    db = short_dir / "index.db"
    t0 = time.perf_counter()
    assert hand_off(db, "/x/y.md") is None  # no socket file
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(socket_path(db)))  # bound, never listening: what a killed server leaves
    stale.close()
    assert hand_off(db, "/x/y.md") is None
    assert time.perf_counter() - t0 < 2.0


def test_a_stale_socket_is_replaced_and_a_live_one_is_left_to_its_server(served):
    _, settings, _, listener = served
    second = EditListener(settings.db_path, lambda: None)
    assert not second.start()  # the first server keeps the socket
    listener.stop()
    assert not listener.path.exists()
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(listener.path))
    stale.close()
    models = Models.fixed(FakeEmbedder())
    third = EditListener(settings.db_path, lambda: App.open(settings, models=models))
    try:
        assert third.start()
        assert hand_off(settings.db_path, str(next(Path(settings.db_path).parent.glob("vault/bike.md")))) == "queued"
    finally:
        third.stop()


def test_an_index_path_too_long_for_a_socket_means_no_listener(tmp_path):
    deep = tmp_path / ("d" * (MAX_SOCKET_PATH_BYTES + 10)) / "index.db"
    assert not EditListener(deep, lambda: None).start()
    assert hand_off(deep, "/x.md") is None


def test_the_hook_process_hands_off_and_returns(served):
    vault, settings, embedder, listener = served
    note = write(vault, "garden.md", GARDEN + "\n## Pests\n\nwombatgrub beetle larvae\n")
    payload = {"session_id": "s", "transcript_path": str(vault / "t.jsonl"), "cwd": str(vault),
               "hook_event_name": "PostToolUse", "tool_name": "Edit",
               "tool_input": {"file_path": str(note), "old_string": "a", "new_string": "b"},
               "tool_response": {"filePath": str(note)}, "tool_use_id": "toolu_1"}
    done = run_script("reindex_hook.py", payload, hook_env(VAULT_INDEX_DB=str(settings.db_path)))
    assert done.returncode == 0 and not done.stderr, done.stderr
    assert wait_for(lambda: listener.done >= 1)  # the server did the work, not the hook
    assert "garden.md" in found(settings, embedder, "wombatgrub beetle larvae")


# What the hook may import before a running server answers (services/writes/edit_client.py): each
# module more is paid on every note edit (issue 13: config alone cost about 60 ms under load).
HAND_OFF_MODULES = {"vault_index", "vault_index.locations", "vault_index.services", "vault_index.services.writes",
                    "vault_index.services.writes.edit_client"}


def test_the_hand_off_path_imports_only_the_socket_client(served):
    vault, settings, embedder, listener = served
    note = write(vault, "bike.md", BIKE + "\n## Chain\n\nquokkawax drip lube\n")
    payload = {"cwd": str(vault), "hook_event_name": "PostToolUse", "tool_name": "Write",
               "tool_input": {"file_path": "bike.md"}, "tool_response": {}}  # relative: joined to cwd
    import json
    import subprocess

    from hookrun import SCRIPTS

    done = subprocess.run([sys.executable, "-X", "importtime", str(SCRIPTS / "reindex_hook.py")],
                          input=json.dumps(payload).encode(), capture_output=True,
                          env=hook_env(VAULT_INDEX_DB=str(settings.db_path)), timeout=60)
    assert done.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.decode().splitlines()
                if line.startswith("import time:") and "|" in line}
    ours = {name for name in imported if name.split(".")[0] in ("vault_index", "_hooklib", "_hookio")}
    assert ours - {"_hookio"} == HAND_OFF_MODULES, ours
    # and none of the standard library's slower modules but json (and its re, enum): the hook parses
    # its payload to send the path alone, never the file's content (issue 22; about 6 ms)
    assert not imported & {"socket", "pathlib", "selectors"}, imported & {"socket", "pathlib", "selectors"}
    assert wait_for(lambda: listener.done >= 1)  # handed off, and the server re-indexed it
    assert "bike.md" in found(settings, embedder, "quokkawax drip lube")
    assert str(note) == str(vault / "bike.md")


def test_a_search_request_is_answered_on_its_own_thread_and_never_holds_an_edit(served, short_dir):
    from vault_index.services.writes.edit_client import ask_search

    vault, settings, _, listener = served
    assert ask_search(settings.db_path, {"project": "/x", "prompt": "p", "already": []}) == {"status": "off"}
    release, asked = threading.Event(), []

    def slow_search(request: dict) -> dict:
        asked.append(request)
        release.wait(WAIT_S)
        return {"status": "ok", "echo": request["prompt"]}

    listener.search = slow_search
    box: list = []
    waiting = threading.Thread(target=lambda: box.append(ask_search(settings.db_path, {"prompt": "garden"},
                                                                     timeout=WAIT_S)))
    waiting.start()
    assert wait_for(lambda: asked)
    assert hand_off(settings.db_path, str(vault / "garden.md")) == "queued"  # not behind the search
    assert ask_search(settings.db_path, {"prompt": "late"}, timeout=0.3) is None  # a hook that gives up
    release.set()
    waiting.join(WAIT_S)
    assert box == [{"status": "ok", "echo": "garden"}]
