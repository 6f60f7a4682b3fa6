"""PostToolUse hook (matcher Write|Edit|MultiEdit): re-index the file the tool just changed.

stdin: {"tool_name": "Edit", "tool_input": {"file_path": ...}, "tool_response": {...}, "cwd": ...}
stdout: nothing. Never blocks, always exits 0; a problem is one line on stderr.

A busy index (a sync or another writer holding SQLite's write lock) is waited for at most
HOOK_BUSY_TIMEOUT_S, not the 30 s other commands wait: the edit is then left to the watcher
(`serve --watch`, `vault-index watch`) or the next `vault-index index`, and the hook says so.
A FIFO or device named like a note is refused when opened, without blocking (engine/fileio.py).

The index decides what counts: App.reindex_file ignores files outside registered sources,
under secrets/ or hidden folders, and non-notes. Before paying for that import (about 130 ms)
the hook drops the cheap cases itself: no file path, a failed tool, a suffix that is never a
note (most edits in a code repository), or no index file yet (opening one would create it).
When a server runs on the same index, the hook hands it the path over the index's socket and
returns (the server has the model loaded; ADR 0010); otherwise it re-indexes in its own process.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _hookio as hooks  # noqa: E402 - the scripts folder is not a package

# Trigger: the hook runs after every edit, while Claude Code waits for it.
# Why: SQLite's 30 s busy wait held the session for the length of someone else's sync.
# Outcome: give up after a moment; the file changed on disk, so the next sync takes it anyway.
HOOK_BUSY_TIMEOUT_S = 0.5


def tool_failed(response: object) -> bool:
    """Whether tool_response says the edit did not happen (PostToolUse normally means success)."""
    if not isinstance(response, dict):
        return False
    return response.get("success") is False or bool(response.get("error")) or response.get("is_error") is True


def target_path(payload: dict) -> str | None:
    """The edited file as an absolute path (a string: pathlib is not imported on the hand-off path)."""
    tool_input = payload.get("tool_input")
    raw = hooks.text(tool_input, "file_path") or hooks.text(tool_input, "notebook_path")
    if not raw or "\x00" in raw:
        return None
    path = os.path.expanduser(raw)
    if not os.path.isabs(path):
        base = hooks.text(payload, "cwd") or os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
        path = os.path.join(base, path)
    return path


def main() -> None:
    payload = hooks.read_payload()
    path = target_path(payload)
    if path is None or tool_failed(payload.get("tool_response")):
        return
    if os.path.splitext(path)[1].lower() not in hooks.NOTE_SUFFIXES:
        return
    hooks.ensure_package()
    # Trigger: with a server running, this is all an edit costs; it ran at 3x `python -c pass`
    # under load when it imported config (dataclasses, pathlib, hashlib) and the server's side.
    # Outcome: two modules that import os and socket only (locations, edit_client; issue 13).
    from vault_index.locations import default_db_path
    from vault_index.services.edit_client import hand_off

    db_path = default_db_path()
    if not os.path.exists(db_path):
        return  # nothing indexed yet, so nothing to keep fresh
    if hand_off(db_path, path) is not None:
        return  # a running server re-indexes it with its loaded model (ADR 0010)
    from vault_index.config import Settings
    from vault_index.errors import IndexBusyError
    from vault_index.services.app import App

    try:
        app = App.open(Settings.from_env(), busy_timeout=HOOK_BUSY_TIMEOUT_S)
        try:
            app.reindex_file(path)
        finally:
            app.close()
    except IndexBusyError:
        hooks.warn(f"the index is busy (another sync is writing); {path} is left to the watcher "
                   "or the next `vault-index index`, which will pick it up")


if __name__ == "__main__":
    hooks.run(main)
