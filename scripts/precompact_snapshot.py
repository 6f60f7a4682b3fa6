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
Credentials in the requests and instructions are redacted (detect-secrets), and the snapshot is
never committed, in a curated vault either: it is the person's to keep or delete.
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

SNAPSHOT_NOTE = ("vault-index saved this session's recent requests and touched files before compaction; "
                 "keep this path in the summary so the next context can open it:")


def _is_file(path: str) -> bool:
    try:
        return bool(path) and os.path.isfile(path)
    except (OSError, ValueError):
        return False


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
    path = hooks.create_unique(content / AUTO_DIR, f"{now:%Y%m%d-%H%M%S}-{session8}", text, content)
    # Claude Code (2.1.x) hands a PreCompact hook's stdout to the summariser as extra instructions
    # and shows it to the person, so it is a plain sentence that carries the path into the summary.
    # relative to the project only when inside it (in a vault-index clone: the personal folder's absolute path)
    print(f"{SNAPSHOT_NOTE} {hooks.shown_path(path, project)}", flush=True)


if __name__ == "__main__":
    hooks.run(main)
