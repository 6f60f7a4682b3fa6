#!/usr/bin/env python3
"""Record what the project learned, in docs/lessons.md: add, supersede, retire, list, check.

    learn.py add --lesson "Run X before Y" --cause "what happened" --detect "the check" [--tag T]
    learn.py supersede L-0001 --lesson .. --cause .. --detect ..
    learn.py retire L-0001 --reason "why it no longer holds"
    learn.py list [--all] [--json]
    learn.py check

The file is <content>/docs/lessons.md unless --file names another: <content> is the project
(CLAUDE_PROJECT_DIR, else the working folder), or ~/.mcp-memory/personal when the project is a
clone of vault-index itself, or VAULT_CONTENT_DIR (docs/adr/0012).
Exit 0 on success, 1 when `check` finds problems, 2 on bad input.
Runs with the repo's .venv python or any python3 from a checkout (the package is then taken
from <repo>/mcp).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `python -I` leaves this folder off the path
from _cli import open_writer, report, run_script, say_notices  # noqa: E402 - first: makes vault_index importable
from vault_index.config import content_root  # noqa: E402
from vault_index.services.curation import lessons  # noqa: E402


def _entry_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lesson", required=True, help="the lesson as a directive, one line")
    parser.add_argument("--cause", required=True, help="what happened that taught it")
    parser.add_argument("--detect", required=True, help="a check or test that would catch a repeat")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="learn.py", description="Lessons in docs/lessons.md; never deleted.")
    parser.add_argument("--file", help="the lessons file (default <project>/docs/lessons.md)")
    commands = parser.add_subparsers(dest="command", required=True)
    add = commands.add_parser("add", help="record a new lesson; prints its id")
    _entry_options(add)
    add.add_argument("--tag", action="append", dest="tags", help="a tag (repeatable)")
    supersede = commands.add_parser("supersede", help="replace a lesson; the old one stays, marked")
    supersede.add_argument("id", help="the lesson to replace, e.g. L-0001")
    _entry_options(supersede)
    retire = commands.add_parser("retire", help="mark a lesson retired with a reason")
    retire.add_argument("id")
    retire.add_argument("--reason", required=True, help="why it no longer holds")
    listing = commands.add_parser("list", help="active lessons (all with --all)")
    listing.add_argument("--all", action="store_true", help="include superseded and retired lessons")
    listing.add_argument("--json", action="store_true", help="one JSON array on stdout")
    commands.add_parser("check", help="report malformed lessons; exit 1 if any")
    return parser


def write(path: Path, args: argparse.Namespace) -> None:
    """add, supersede or retire through the write service (re-index and commit like the MCP tools)."""
    from vault_index.services.writes.write import require_ok

    with open_writer(path) as writer:
        if args.command == "add":
            outcome = lessons.add_outcome(path, args.lesson, args.cause, args.detect, args.tags, writer=writer)
        elif args.command == "supersede":
            outcome = lessons.supersede_outcome(path, args.id, args.lesson, args.cause, args.detect, writer=writer)
        else:
            outcome = lessons.retire_outcome(path, args.id, args.reason, writer=writer)
    print(require_ok(outcome).result["id"])
    say_notices("learn.py", outcome)


def run(args: argparse.Namespace) -> int:
    path = Path(args.file) if args.file else content_root() / "docs" / "lessons.md"
    if args.command in ("add", "supersede", "retire"):
        write(path, args)
    elif args.command == "list":
        found = lessons.list_lessons(path, include_all=args.all)
        if args.json:
            print(json.dumps([lesson.as_dict() for lesson in found], ensure_ascii=False))
        for lesson in [] if args.json else found:
            print(f"{lesson.id}  {lesson.status:<10}  {lesson.get('date')}  {lesson.title}")
    else:
        problems = lessons.check_lessons(path)
        count = 0 if problems else len(lessons.list_lessons(path, include_all=True))
        return report(problems, f"{path}: {count} lessons, well formed")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_script(build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
