"""`vault-index prepend|replace-section|find-replace|move|recent`: the edit operations on the command line.

Thin commands over services/writes/edit_ops.py's `write_op` (the very entry MCP note_write calls) and
services/curation/recent.py; the caller, `--vault`, `--json` and the exit codes are the curated vault
commands' own (surfaces/cli_vault.py, docs/cli.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _edit(app, args, op: str, **fields) -> int:
    from vault_index.services.writes.edit_ops import write_op
    from vault_index.surfaces.cli_common import _finish, _open, typed_path
    from vault_index.surfaces.outcomes import absolute, outcome_dict

    vault, caller = _open(app, args)
    path = typed_path(app, args.path, vault.root, for_write=True)  # every form a tool takes (issue 39)
    outcome = write_op(app.writer(vault), caller, op, path, base_version=args.base_version,
                       request_id=args.request_id, reason=args.reason, **fields)
    out = outcome_dict(outcome)
    return _finish(args, {**out, "path": absolute(vault.root, out["path"])})  # the one form tools answer


def _text(args) -> str | None:
    from vault_index.surfaces.cli_common import _read_text

    return _read_text(args.body, args.file)


def cmd_prepend(app, args) -> int:
    return _edit(app, args, "prepend", body=_text(args))


def cmd_replace_section(app, args) -> int:
    return _edit(app, args, "replace_section", body=_text(args), heading=args.heading)


def cmd_find_replace(app, args) -> int:
    return _edit(app, args, "find_replace", body=args.replacement, find=args.find, count=args.count)


def cmd_move(app, args) -> int:
    return _edit(app, args, "move", new_path=args.new_path)


def cmd_recent(app, args) -> int:
    from vault_index.services.access.access import scope_for
    from vault_index.services.curation.recent import recent_activity
    from vault_index.surfaces.cli_common import _finish, _json, _open
    from vault_index.surfaces.denied import denied_outcome

    vault, caller = _open(app, args)
    scope = scope_for(vault, vault.grants(caller.role))
    if not scope.reads_any:
        return _finish(args, denied_outcome(caller))
    found = recent_activity(Path(vault.root), scope.can_read, days=args.days, commits=args.commits, limit=args.limit)
    if args.json:
        print(_json({"status": "ok", "message": f"{len(found)} notes changed", "path": "", "version": None,
                     "data": {"recent": found}}))
        return 0
    for entry in found:
        who = f"  {entry['author']}  {entry['subject']}" if entry["author"] else ""
        print(f"{entry['date'][:19]}  {entry['source']:<11}  {entry['path']}{who}")
    if not found:
        print("no notes changed in that window", file=sys.stderr)
    return 0


def add_parsers(sub, parents: list[argparse.ArgumentParser], retry: argparse.ArgumentParser) -> None:
    """The edit commands, with the curated vault commands' options (`parents`: --json, --vault, --role)."""
    why = argparse.ArgumentParser(add_help=False)
    why.add_argument("--reason", help="why, for the commit message")
    text = argparse.ArgumentParser(add_help=False)
    text.add_argument("--body", help="the text")
    text.add_argument("--file", help="read the text from a file; '-' is stdin")

    p = sub.add_parser("prepend", parents=[*parents, retry, why, text],
                       help="add text at the top of a note's body (after its frontmatter)")
    p.add_argument("path")
    p.set_defaults(run=cmd_prepend)

    p = sub.add_parser("replace-section", parents=[*parents, retry, why, text],
                       help="replace what one heading holds (needs --base-version); the rest stays byte for byte")
    p.add_argument("path")
    p.add_argument("heading", help="the heading's text, '## text' for one level, or a path 'Parent > Heading'")
    p.set_defaults(run=cmd_replace_section)

    p = sub.add_parser("find-replace", parents=[*parents, retry, why],
                       help="replace a literal text that must occur exactly --count times (default 1)")
    p.add_argument("path")
    p.add_argument("find", help="the literal text to find")
    p.add_argument("replacement", help="what replaces it ('' deletes it)")
    p.add_argument("--count", type=int, default=1, help="how many times it must occur (else nothing changes)")
    p.set_defaults(run=cmd_find_replace)

    p = sub.add_parser("move", parents=[*parents, retry, why],
                       help="rename a note; every link to it is rewritten in the same commit")
    p.add_argument("path")
    p.add_argument("new_path", help="the note's new path (refused when a note is there)")
    p.set_defaults(run=cmd_move)

    p = sub.add_parser("recent", parents=parents, help="notes changed lately (git where there is one, else mtimes)")
    window = p.add_mutually_exclusive_group()
    window.add_argument("--days", type=int, help="changed in the last N days (default 7)")
    window.add_argument("--commits", type=int, help="changed by the last N commits (git only)")
    p.add_argument("-n", "--limit", type=int, default=50, help="at most this many notes (1-200)")
    p.set_defaults(run=cmd_recent)
