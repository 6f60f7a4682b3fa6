"""PreCompact hook: save what the session was doing before compaction summarises it away.

stdin: {"session_id", "transcript_path", "cwd", "hook_event_name": "PreCompact",
        "trigger": "manual" | "auto", "custom_instructions": "..."}
stdout: one plain sentence naming the snapshot (Claude Code passes a PreCompact hook's output to the
summariser as extra instructions, so the path survives into the summary), or nothing
when the input names no session and no transcript (then there is nothing to save).

Writes docs/handoffs/auto/ (under the project, or ~/.mcp-memory/personal in a vault-index clone)
<UTC YYYYmmdd-HHMMSS>-<first 8 of session id>.md with the trigger,
the context size, the last requests and the touched files. A fallback, not a handoff: nothing
is asked of the agent, compaction is never blocked, and an existing file is never replaced.
Credentials in the requests and instructions are redacted (detect-secrets, and the value after a
credential word in prose), and the snapshot is never committed, in a curated vault either: it is
the person's to keep or delete. The folder gets a .gitignore that keeps every snapshot out of git
(a `git add -A` would otherwise commit them), unless VAULT_SNAPSHOTS_IN_GIT=1 says the person wants
them in the repository.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _hooklib as hooks  # noqa: E402 - the scripts folder is not a package

AUTO_DIR = hooks.HANDOFF_DIR / "auto"
REQUESTS = 10

IN_GIT = "VAULT_SNAPSHOTS_IN_GIT"  # "1": the person keeps snapshots in the repository (no .gitignore here)
IGNORE = ("# vault-index: pre-compact snapshots hold what was said in a session, so git ignores them here.\n"
          f"# To keep them in the repository: set {IN_GIT}=1 and delete this file.\n*\n")
SNAPSHOT_NOTE = ("vault-index saved this session's recent requests and touched files before compaction; "
                 "keep this path in the summary so the next context can open it:")


def _is_file(path: str) -> bool:
    try:
        return bool(path) and os.path.isfile(path)
    except (OSError, ValueError):
        return False


def keep_out_of_git(content, parts: tuple[str, ...]) -> None:
    """A .gitignore of `*` in the snapshots' folder (made if missing), unless the person opted in.

    Trigger: snapshots were never committed by us, but a person's `git add -A` committed them, session
    text and all (issue 36). Outcome: ignored by default. Written like a note (the folders walked
    without following a link, the file created exclusively): an existing .gitignore is the person's."""
    if os.environ.get(IN_GIT, "").strip().lower() in ("1", "true", "yes", "on"):
        return
    hooks.ensure_package()
    from vault_index.engine.files.fileio import open_folder
    from vault_index.errors import UnsafePathError

    try:
        folder = open_folder(content, parts, create=True)
    except UnsafePathError:
        return  # a folder on the way is a link: the snapshot itself is refused next, in the write service's words
    try:
        fd = os.open(".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644,
                     dir_fd=folder)
    except FileExistsError:
        return
    finally:
        os.close(folder)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(IGNORE)


def main() -> None:
    payload = hooks.read_payload()
    project = hooks.project_dir(payload)
    session_id = hooks.text(payload, "session_id")
    transcript = hooks.text(payload, "transcript_path")
    if not session_id and not _is_file(transcript):
        hooks.warn("no session_id and no readable transcript_path in the hook input: nothing to save")
        return
    trigger = hooks.text(payload, "trigger") or "unknown"
    instructions = hooks.redact(" ".join(hooks.text(payload, "custom_instructions").split()))
    now = dt.datetime.now(dt.timezone.utc)
    session8 = re.sub(r"[^A-Za-z0-9]", "", session_id)[:8] or "nosession"
    tokens = hooks.latest_context_tokens(transcript) if transcript else None
    lines = [
        *hooks.note_head(f"Pre-compact snapshot {now:%Y-%m-%d %H:%M:%S} UTC", f"{now:%Y-%m-%d}", session_id,
                         "handoff-snapshot", trigger=trigger),
        f"- trigger: {trigger}" + (f" (instructions: {instructions})" if instructions else ""),
        f"- session: {session_id or 'unknown'}",
        f"- transcript: {transcript or 'unknown'}",
        f"- context before compaction: {f'{tokens:,} tokens' if tokens else 'unknown'}",
        "",
    ]
    text = "\n".join(lines) + "\n" + hooks.activity_markdown(transcript, project, REQUESTS)
    content = hooks.content_dir(project)  # the project, or the personal folder in a vault-index clone
    keep_out_of_git(content, AUTO_DIR.parts)  # before the snapshot: never a moment git would see it
    path = hooks.create_unique(content / AUTO_DIR, f"{now:%Y%m%d-%H%M%S}-{session8}", text, content)
    # Claude Code (2.1.x) hands a PreCompact hook's stdout to the summariser as extra instructions
    # and shows it to the person, so it is a plain sentence that carries the path into the summary.
    # relative to the project only when inside it (in a vault-index clone: the personal folder's absolute path)
    print(f"{SNAPSHOT_NOTE} {hooks.shown_path(path, project)}", flush=True)


if __name__ == "__main__":
    hooks.run(main)
