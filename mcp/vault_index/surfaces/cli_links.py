"""`vault-index backlinks|links|neighbors|related`: the link graph from the terminal.

Thin commands over services/graph/linkgraph.note_links, the function the MCP tool `note_links` calls.
`--json` prints its answer as is: {direction, note, query, results}.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from vault_index.engine.parsing.links import EDGE_KINDS


def cmd_links(app, args) -> int:
    from vault_index.services.graph.linkgraph import note_links

    types = [t for part in (args.types or []) for t in part.split(",")]
    note = args.note
    if note and not Path(note).is_absolute() and Path(note).is_file():
        note = str(Path(note).resolve())  # a path typed at the terminal is relative to where one stands
    out = note_links(app, args.direction, note, query=getattr(args, "query", None),
                     depth=getattr(args, "depth", 1), types=types, limit=args.limit)
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
        return 0
    for row in out["results"]:
        if args.direction == "backlinks":
            print(f"{row['path']}:{row['line']}  {row['kind']}")
        elif args.direction == "links":
            print(f"{row['line']:>5}  {row['kind']:13} {row['status']:10} {row['target'] or row['raw']}")
        elif args.direction == "neighbors":
            print(f"{row['depth']}  {row['direction']:3} {row['kind']:13} {row['path']}")
        else:
            print(f"{row['score']:.4f}  {row['path']}  ({', '.join(row['why'])})")
    return 0


def add_parsers(sub, common: argparse.ArgumentParser) -> None:
    """The link-graph commands on the top-level subparsers `sub`."""
    kinds = argparse.ArgumentParser(add_help=False)
    kinds.add_argument("--types", action="append", metavar="KIND[,KIND]",
                       help=f"only these link types ({', '.join(EDGE_KINDS)})")
    kinds.add_argument("-n", "--limit", type=int, default=20, help="at most this many results (1-100)")
    for name, help_text in (("backlinks", "notes that link to NOTE"),
                            ("links", "the links NOTE makes, resolved or not")):
        p = sub.add_parser(name, parents=[common, kinds], help=help_text)
        p.add_argument("note", help="a note: absolute, or relative to the project, vault or a source")
        p.set_defaults(run=cmd_links, direction=name)
    p = sub.add_parser("neighbors", parents=[common, kinds], help="notes within DEPTH links of NOTE, either way")
    p.add_argument("note")
    p.add_argument("--depth", type=int, default=1, help="1 to 3 (default 1)")
    p.set_defaults(run=cmd_links, direction="neighbors")
    p = sub.add_parser("related", parents=[common, kinds], help="notes near NOTE (or --query) in meaning and links")
    p.add_argument("note", nargs="?")
    p.add_argument("--query", help="related to this text instead of a note")
    p.set_defaults(run=cmd_links, direction="related")
