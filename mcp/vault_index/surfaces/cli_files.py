"""`vault-index files [--source NAME]`: every indexed file the workspace sees, with its chunks.

A thin command over App.files. Without it, the only way to know whether a note was indexed was to
search for it (issue 39). `--json` prints the list as is: [{path, source, chunks, vectors}].
"""

from __future__ import annotations

import argparse
import json
import sys

from vault_index.surfaces.cli_common import counted


def cmd_files(app, args) -> int:
    """What the index holds now: no folder is indexed on the way (`sources` and `search` bring the
    project's own folders in)."""
    files = app.files(args.source)
    if args.json:
        print(json.dumps(files, ensure_ascii=False))
        return 0
    if not files and not args.silent:
        print("no indexed files" + (f" in {args.source}" if args.source else ""), file=sys.stderr)
    embedded = bool(app.store.get_meta("embed_model"))
    for row in files:
        waiting = row["chunks"] - row["vectors"] if embedded else 0
        pending = f", {waiting} waiting for vectors" if waiting else ""
        print(f"{row['source']}  {row['path']}  ({counted(row['chunks'], 'chunk')}{pending})")
    return 0


def print_sources(sources: list[dict]) -> None:
    """`vault-index sources` for a person: each source, its counts, its checkouts when several."""
    for source in sources:
        kind = f"  [{source['kind']}: another agent's memory, read-only]" if source.get("kind") else ""
        print(f"{source['name']}  {source['path']}  ({counted(source['files'], 'file')}, "
              f"{counted(source['chunks'], 'chunk')}){kind}")
        checkouts = source.get("checkouts", [])
        for checkout in checkouts if len(checkouts) > 1 else []:
            where = "this machine" if checkout["here"] else "not on this machine"
            print(f"    checkout {checkout['path']}  ({where})")


def add_parsers(sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("files", parents=[common], help="list the indexed files (of one source with --source)")
    p.add_argument("--source", help="only the files of the source with this name (`sources` lists them)")
    p.set_defaults(run=cmd_files)
