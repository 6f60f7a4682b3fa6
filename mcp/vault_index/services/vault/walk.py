"""The notes of a vault on disk, walked the same way by lint, status, recent and a move's link scan.

Below the write path and curation, which both walk a vault's notes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

MAX_NOTES = 20_000              # lint and status stop walking here and say so
TENSIONS_FILE = "tensions.md"   # at the vault root: one log for every collection
SKIPPED_DIRS = {".git", ".vault-index", "secrets", "node_modules"}


def note_paths(root: Path, limit: int = MAX_NOTES) -> Iterator[str]:
    """Vault-relative paths of the `.md` files, without following links or entering control folders."""
    count = 0
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d.casefold() not in SKIPPED_DIRS
                         and not os.path.isfile(os.path.join(folder, d, ".vault-index", "config.yaml")))
        for name in sorted(files):  # (a nested init vault is its own: its roles, its dashboard)
            full = Path(folder) / name
            if not name.endswith(".md") or full.is_symlink():
                continue
            rel = full.relative_to(root).as_posix()
            if rel == TENSIONS_FILE:
                continue
            count += 1
            if count > limit:
                return
            yield rel
