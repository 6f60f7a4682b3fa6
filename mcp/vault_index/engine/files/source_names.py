"""Source names (ADR 0012): a short handle for a registered folder, for `--source` and `remove`.

A folder right inside its workspace's folder (a project's docs/ and notes/) is named
`<project>/<folder>`: named by their base names alone, six projects' docs were `docs`, `docs-2`
... `docs-6` in `sources`, and nobody could tell which was which (issue 39).
"""

from __future__ import annotations

import re
from pathlib import Path

from vault_index.errors import UsageError

MAX_NAME_CHARS = 64
# One word of letters, digits, '.', '_', '-', or two joined by '/' (`orders/docs`).
SOURCE_NAME = re.compile(rf"(?=.{{1,{MAX_NAME_CHARS}}}$)[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)?")


def _word(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")[:60]


def default_name(path: str, scope: str = "") -> str:
    """A folder's base name reduced to the allowed characters (a source name when none is given);
    `<workspace>/<folder>` for a folder right inside its workspace's folder `scope`."""
    base = _word(Path(path).name) or "source"
    if scope and Path(path).parent == Path(scope):
        owner = _word(Path(scope).name)[: MAX_NAME_CHARS - len(base) - 1]
        if owner:
            return f"{owner}/{base}"
    return base


def unique_name(base: str, taken: set[str]) -> str:
    """`base`, or `base-2`, `base-3`, ... when another source already uses it."""
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    return name


def check_name(name: str) -> str:
    if not SOURCE_NAME.fullmatch(name):
        raise UsageError(f"source name {name!r}: use 1-64 letters, digits, '-', '_' or '.' (one '/' may join two "
                         "such words, as in orders/docs)")
    return name


def fill_missing(db) -> None:
    """Give every unnamed source its default name (a rebuilt index registers paths only)."""
    taken = {n for (n,) in db.execute("SELECT name FROM sources WHERE name IS NOT NULL")}
    for source_id, path in db.execute("SELECT id, path FROM sources WHERE name IS NULL ORDER BY id").fetchall():
        name = unique_name(default_name(path), taken)
        taken.add(name)
        db.execute("UPDATE sources SET name = ? WHERE id = ?", (name, source_id))
