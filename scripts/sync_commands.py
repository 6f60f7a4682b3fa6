#!/usr/bin/env python3
"""Copy the slash commands from the package to .claude/commands/ (or, with --check, only compare).

    sync_commands.py          write .claude/commands/<name>.md from mcp/vault_index/surfaces/commands/
    sync_commands.py --check  exit 1 and name each file that differs; change nothing

The package copy is the one source: it ships with `uvx --from <clone> vault-index` (where the MCP prompts read
it) and Claude Code reads the copy in .claude/commands/ (project and plugin). Edit the package
file, then run this script; tests/surfaces/test_prompts_resources.py fails while the two differ.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "mcp" / "vault_index" / "surfaces" / "commands"
TARGET = REPO / ".claude" / "commands"


def differences(source: Path = SOURCE, target: Path = TARGET) -> list[str]:
    """Names of the command files that are missing, extra or not byte-identical in `target`."""
    wanted = {p.name: p.read_bytes() for p in source.glob("*.md")}
    present = {p.name: p.read_bytes() for p in target.glob("*.md")} if target.is_dir() else {}
    return sorted(name for name in wanted.keys() | present.keys() if wanted.get(name) != present.get(name))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sync_commands.py", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when a file differs")
    args = parser.parse_args(argv)
    changed = differences()
    if args.check:
        for name in changed:
            print(f"{TARGET / name} differs from {SOURCE / name}")
        return 1 if changed else 0
    TARGET.mkdir(parents=True, exist_ok=True)
    for name in changed:
        source = SOURCE / name
        if source.exists():
            (TARGET / name).write_bytes(source.read_bytes())
            print(f"wrote {TARGET / name}")
        else:
            print(f"{TARGET / name} has no package source; remove it by hand if it is obsolete", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
