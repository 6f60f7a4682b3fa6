"""Write a handoff note for a fresh session and print the card to start it with (/handoff runs this).

    python scripts/handoff.py new [--topic T] [--session ID] [--transcript PATH] [--project DIR] [--json]

The note, docs/handoffs/YYYY-MM-DD-<slug>.md under the project (or under ~/.mcp-memory/personal
when the project is a clone of vault-index itself: docs/adr/0012), gets frontmatter (title, date, session_id, type:
handoff), Goal / State / Next steps for the agent to fill in, and the recent requests and
touched files read from the transcript. An existing note is never replaced: a suffix is added.
The context guard finds a session's note by its session_id, so it stops blocking once written.

Without --transcript the newest transcript of this project under ~/.claude/projects (or
$CLAUDE_CONFIG_DIR/projects) is used, and its file name gives the session id; the guard hands
the real values to /handoff, so this fallback matters only when the script is run by hand.
Always exits 0; problems are one line on stderr.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _hooklib as hooks  # noqa: E402 - the scripts folder is not a package

PLACEHOLDER = "<!-- to fill in: {} -->"
# Claude Code's session ids are UUIDs; any letters, digits, `-` and `_` pass, so no id can name a
# folder (`/`, `..`) or a glob pattern (`*`, `?`, `[`) when the transcript is looked up by it.
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def slugify(topic: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", topic.lower()).strip("-")[:60].strip("-")
    return slug or "handoff"


def claude_projects_dir() -> Path:
    base = os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
    return Path(base).expanduser() / "projects"


def find_transcript(project: Path, session_id: str) -> Path | None:
    """Best effort: Claude Code keeps transcripts as projects/<project path, non-alnum -> '-'>/<session>.jsonl."""
    root = claude_projects_dir()
    real_root = os.path.realpath(root)

    def is_transcript(path: Path) -> bool:  # a regular file that really lies in the projects folder
        real = os.path.realpath(path)
        return real.startswith(real_root + os.sep) and os.path.isfile(real)

    if session_id and SESSION_ID.fullmatch(session_id):
        found = [p for p in root.glob(f"*/{session_id}.jsonl") if is_transcript(p)]
        if found:
            return found[0]
    folder = root / re.sub(r"[^A-Za-z0-9]", "-", str(project.resolve()))
    candidates = [p for p in folder.glob("*.jsonl") if is_transcript(p)] if folder.is_dir() else []
    return max(candidates, key=lambda p: p.stat().st_mtime) if candidates else None


def render(topic: str, session_id: str, transcript: str, project: Path, today: dt.date) -> str:
    title = f"Handoff: {topic}" if topic else f"Handoff {today.isoformat()}"
    tokens = hooks.latest_context_tokens(transcript) if transcript else None
    head = [
        *hooks.note_head(title, today.isoformat(), session_id, "handoff"),
        f"Written from session {session_id or 'unknown'}"
        + (f" at {tokens:,} tokens of context." if tokens else "."),
        "",
        "## Goal",
        "",
        PLACEHOLDER.format("what this work is for and what done looks like, in two or three sentences"),
        "",
        "## State",
        "",
        PLACEHOLDER.format("what is finished, what is half done, what is known broken; decisions taken and why"),
        "",
        "## Next steps",
        "",
        PLACEHOLDER.format("the first thing the fresh session should do, then the rest in order"),
        "",
    ]
    return "\n".join(head) + "\n" + hooks.activity_markdown(transcript, project)


def card(note: str, topic: str) -> str:
    """The card's sentence: the same one the session briefing shows a fresh session (services/briefing.py)."""
    hooks.ensure_package()
    from vault_index.services.briefing import handoff_card

    return handoff_card(note, topic)


def new(args: argparse.Namespace) -> None:
    project = Path(args.project).expanduser() if args.project else hooks.project_dir({})
    session_id, transcript = args.session or "", args.transcript or ""
    if session_id and not SESSION_ID.fullmatch(session_id):
        hooks.warn(f"{session_id[:80]!r} is not a session id (letters, digits, - and _); it is not used")
        session_id = ""
    if not transcript:
        found = find_transcript(project, session_id)
        if found is not None:
            transcript = str(found)
            session_id = session_id or found.stem
    if transcript and not Path(transcript).is_file():
        hooks.warn(f"transcript {transcript} is not a file; the note will have no requests or touched files")
    today = dt.date.today()
    text = render(hooks.redact(args.topic.strip()), session_id, transcript, project, today)
    content = hooks.content_dir(project)  # the project, or the personal folder in a vault-index clone
    path = hooks.create_unique(content / hooks.HANDOFF_DIR, f"{today.isoformat()}-{slugify(args.topic)}", text,
                               content)
    # Relative to the project only when the note lies in it: in a vault-index clone it lies in the
    # personal folder, and a relative docs/handoffs/... named a file that does not exist there.
    note = hooks.shown_path(path, project)
    the_card = card(note, args.topic.strip())
    if args.json:
        print(json.dumps({"path": note, "session_id": session_id or None, "card": the_card}))
        return
    print(note)
    print("Fill in Goal, State and Next steps in that note (requests and touched files are already there),")
    print("then start a fresh session (/clear) and paste this card:")
    print()
    print(the_card)


def main() -> None:
    parser = argparse.ArgumentParser(prog="handoff.py", description="Handoff notes for a fresh session.")
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("new", help="write a handoff note and print its card")
    cmd.add_argument("--topic", default="", help="what the session was about (names the file)")
    # nargs="?": a command template whose ${CLAUDE_SESSION_ID} expanded to nothing still runs.
    cmd.add_argument("--session", nargs="?", const="", default="", help="session id (the context guard gives it)")
    cmd.add_argument("--transcript", nargs="?", const="", default="", help="the session's transcript .jsonl")
    cmd.add_argument("--project", default="", help="project folder (default $CLAUDE_PROJECT_DIR, else cwd)")
    cmd.add_argument("--json", action="store_true", help="print {path, session_id, card} as JSON")
    args = parser.parse_args()
    new(args)


if __name__ == "__main__":
    hooks.run(main)
