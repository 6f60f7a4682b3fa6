"""The shell shared by the scripts a person runs by hand (learn.py, adr.py): set-up and exit codes.

Importing it makes `vault_index` importable from a checkout whose package is not installed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

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


@contextmanager
def open_writer(path: Path) -> Iterator:
    """The write service for `path`, re-indexing through the App when an index exists.

    Trigger: the terminal twin of an MCP write tool used to skip the re-index the tool did.
    Why: one write path means the same stages whoever writes.
    Outcome: with an index file, writes re-index through App.writer; without one (nothing is
    indexed, nothing to keep fresh) or without the index's packages (a bare python3), they do not.
    """
    from vault_index.config import Settings
    from vault_index.services.writes.write import writer_for_file

    writer = writer_for_file(path)
    settings = Settings.from_env()
    app = None
    if settings.db_path.exists():
        try:
            from vault_index.services.app import App
        except ImportError:  # a checkout run with a bare python3: no index packages here
            App = None
        if App is not None:
            app = App.open(settings)
            writer = app.writer(writer.vault)
    try:
        yield writer
    finally:
        if app is not None:
            app.close()


def say_notices(prog: str, outcome) -> None:
    """A written outcome's notices (late stages that failed), one line each on stderr."""
    for notice in outcome.notices:
        print(f"{prog}: {notice}", file=sys.stderr)
