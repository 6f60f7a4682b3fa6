"""The shell shared by the scripts a person runs by hand (learn.py, adr.py): set-up and exit codes.

Importing it makes `vault_index` importable from a checkout whose package is not installed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from _hooklib import ensure_package

ensure_package()

from vault_index.errors import VaultIndexError  # noqa: E402


def run_script(parser: argparse.ArgumentParser, run: Callable[[argparse.Namespace], int],
               argv: list[str] | None = None) -> int:
    """Parse `argv` and run; a VaultIndexError is one line on stderr and exit 2 (bad input)."""
    args = parser.parse_args(argv)
    try:
        return run(args)
    except VaultIndexError as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 2


def report(problems: list[str], all_well: str) -> int:
    """`check`: each problem on stdout and exit 1, or `all_well` on stderr and exit 0."""
    for problem in problems:
        print(problem)
    if not problems:
        print(all_well, file=sys.stderr)
    return 1 if problems else 0
