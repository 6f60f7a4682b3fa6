"""PostToolUse hook (matcher Write|Edit|MultiEdit): re-index the file the tool just changed.

stdin: {"tool_name": "Edit", "tool_input": {"file_path": ...}, "tool_response": {...}, "cwd": ...}
stdout: nothing. Never blocks, always exits 0; a problem is one line on stderr.

A busy index (a sync or another writer holding SQLite's write lock) is waited for at most
HOOK_BUSY_TIMEOUT_S, not the 30 s other commands wait: the edit is then left to the watcher
(`serve --watch`, `vault-index watch`) or the next `vault-index index`, and the hook says so.
A FIFO or device named like a note is refused when opened, without blocking (engine/files/fileio.py).

The index decides what counts: App.reindex_file ignores files outside registered sources,
under secrets/ or hidden folders, and non-notes. When no index file exists yet (opening one
would create it) the hook stops there. The hook then parses its payload and drops the cheap
cases itself: no file path, a failed tool, a suffix that is never a note (most edits in a code
repository). When a server of this user runs on the same index (a socket, not a link, owned by
this user, and a peer with this uid), the hook sends it the note's path alone and returns: the
server has the model loaded (ADR 0010). Otherwise it re-indexes in its
own process.
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


def may_name_a_note(raw: bytes) -> bool:
    """False when no note suffix occurs anywhere in the payload, so it cannot name a note.

    Most edits in a code repository stop here, before any import."""
    lowered = raw.lower()
    return any(suffix.encode() in lowered for suffix in hooks.NOTE_SUFFIXES)


def main() -> None:
    raw = hooks.read_raw()
    if not may_name_a_note(raw):
        return
    hooks.ensure_package()
    # Trigger: with a server running, this is all an edit costs; it ran at 3x `python -c pass`
    # under load when it imported config (dataclasses, pathlib, hashlib) and the server's side.
    # Outcome: two modules that import os and _socket only (locations, edit_client), plus json.
    from vault_index.locations import default_db_path
    from vault_index.services.writes.edit_client import edited_note, hand_off

    db_path = default_db_path()
    if not os.path.exists(db_path):
        return  # nothing indexed yet, so nothing to keep fresh
    base = os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    # Trigger: the whole payload (a Write's file content included) went to the socket (issue 22).
    # Outcome: parse here (json costs ~6 ms) and send the server the note's path alone.
    path = edited_note(hooks.parse_payload(raw), base)
    if path is None:
        return  # no path, a failed tool, or a suffix that is never a note
    if hand_off(db_path, path) is not None:
        return  # a running server (this user's own) re-indexes it with its loaded model (ADR 0010)
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
