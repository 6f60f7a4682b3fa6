#!/usr/bin/env python3
"""Write and check decision records in docs/adr/ (or the series the project already has).

    adr.py new "Title" --context .. --options .. --decision .. [--consequences ..] [--status S] [--relates NAME ...]
    adr.py check

`new` writes docs/adr/NNNN-slug.md with the next number (never overwriting), prints its path,
continuing the project's own series when it has one (docs/decisions, doc/adr, adr,
docs/architecture/decisions; NNNN- or NNN- numbering),
and adds it to the memory graph as 'ADR NNNN: Title' (entityType decision) with a 'decides'
relation to each --relates entity the graph already has; --no-graph skips that. The memory
file is --memory-file, else VAULT_MEMORY_FILE, else ~/.mcp-memory/memory.jsonl. A section
given as '-' is read from stdin. Exit 0 on success, 1 when `check` finds problems, 2 on bad
input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `python -I` leaves this folder off the path
from _cli import open_writer, report, run_script, say_notices  # noqa: E402 - first: makes vault_index importable
from vault_index.config import Settings, content_root  # noqa: E402
from vault_index.errors import UsageError  # noqa: E402
from vault_index.services.curation import adr  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="adr.py", description="Decision records in docs/adr/.")
    parser.add_argument("--folder", help="the records folder (default: the series <content> already has, else "
                        "<content>/docs/adr; <content> is the project, or ~/.mcp-memory/personal in a "
                        "vault-index clone)")
    commands = parser.add_subparsers(dest="command", required=True)
    new = commands.add_parser("new", help="write the next record; prints its path")
    new.add_argument("title")
    new.add_argument("--context", required=True, help="the problem and its forces ('-' reads stdin)")
    new.add_argument("--options", required=True, help="the options and what was measured ('-' reads stdin)")
    new.add_argument("--decision", required=True, help="what was chosen, when to revisit ('-' reads stdin)")
    new.add_argument("--consequences", help="what gets easier or harder; needed where the series' records have "
                     "such a section ('-' reads stdin)")
    new.add_argument("--status", default="accepted", choices=adr.STATUSES)
    new.add_argument("--relates", nargs="+", default=[], metavar="NAME", help="graph entities this decides")
    new.add_argument("--memory-file", help="the memory graph file")
    new.add_argument("--no-graph", action="store_true", help="do not add the record to the memory graph")
    commands.add_parser("check", help="report malformed records; exit 1 if any")
    return parser


def _text(value: str, stdin: list[str]) -> str:
    if value != "-":
        return value
    if not stdin:
        stdin.append(sys.stdin.read())
    return stdin[0]


def run(args: argparse.Namespace) -> int:
    folder = Path(args.folder) if args.folder else adr.series_folder(content_root())
    if args.command == "check":
        return report(adr.check_adrs(folder), f"{folder}: decision records well formed")
    stdin: list[str] = []
    given = [args.context, args.options, args.decision, args.consequences]
    if given.count("-") > 1:
        raise UsageError("only one section can be read from stdin ('-')")
    *sections, consequences = [_text(value, stdin) if value is not None else None for value in given]
    memory = None
    if not args.no_graph:
        memory = Path(args.memory_file).expanduser() if args.memory_file else Settings.from_env().memory_file
    from vault_index.services.writes.write import require_ok

    with open_writer(folder / "0000.md") as writer:
        outcome = adr.record(folder, args.title, *sections, status=args.status, consequences=consequences,
                             writer=writer, memory_file=memory, relates_to=args.relates)
    print(require_ok(outcome).result["path"])
    # The record is written: a graph that could not be linked is a notice, never a failure to retry.
    say_notices("adr.py", outcome)
    if outcome.result.get("missing"):
        print(f"adr.py: not in the graph, so not linked: {', '.join(outcome.result['missing'])}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_script(build_parser(), run, argv)


if __name__ == "__main__":
    sys.exit(main())
