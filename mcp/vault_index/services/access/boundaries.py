"""What an agent may add as a source; the person at the terminal may add anything.

A source is what get_note serves, so registering one is a read grant. An agent (MCP
index_paths) that could register `/` or the home folder could then read every note-like file
there. The rule (docs/adr/0008-read-boundaries.md): an agent may add a folder or file inside the
project folder or inside a source already registered, with no hidden, secrets or tooling folder
between that base and the path. The CLI passes `by_agent=False` and keeps the person's freedom.

Every refusal has the same text, built from the path as the agent wrote it and decided from the
path alone, before anything on disk is looked at: an agent cannot learn whether a file exists
where it may not read (`~/.ssh/id_rsa` and `~/.ssh/nothing` are refused alike).
"""

from __future__ import annotations

import os
from pathlib import Path

from vault_index.engine.files.sources import is_skipped_part
from vault_index.errors import OutsideSourcesError


def agent_sources(paths: list[str], project: Path, registered: list[str]) -> list[str]:
    """The absolute paths to register for an agent's `paths`, or OutsideSourcesError for the first
    one it may not add. Relative paths are taken from the project folder, not the server's cwd."""
    named = [Path(base) for base in [project, *registered]]
    bases = list(dict.fromkeys([*named, *(Path(os.path.realpath(base)) for base in named)]))
    return [_allowed(raw, project, bases) for raw in paths]


def _allowed(raw: str, project: Path, bases: list[Path]) -> str:
    if "\x00" not in raw:
        expanded = os.path.expanduser(raw)
        given = Path(os.path.normpath(expanded if os.path.isabs(expanded) else project / expanded))
        # Both as written and as resolved: the written form is judged without touching the disk
        # (no oracle), the resolved one catches a link inside the project that leads elsewhere.
        real = Path(os.path.realpath(given))
        if any(_below(given, base) for base in bases) and any(_below(real, base) for base in bases):
            return str(real)
    raise OutsideSourcesError(
        f"{raw!r} cannot be added by an agent: an agent may add only folders or notes inside the "
        "project folder or inside a registered source, and none in a hidden or secrets folder; the "
        "person can add any other folder with `vault-index index PATH` at the terminal"
    )


def _below(path: Path, base: Path) -> bool:
    """`path` is `base` or lies under it with no skipped part (hidden, secrets, tooling) between."""
    try:
        rel = path.relative_to(base)
    except ValueError:
        return False
    return not any(is_skipped_part(part) for part in rel.parts)
