"""Source names (ADR 0012): a short handle for a registered folder, for `--source` and `remove`."""

from __future__ import annotations

import re
from pathlib import Path

from vault_index.errors import UsageError

SOURCE_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


def default_name(path: str) -> str:
    """A folder's base name reduced to the allowed characters (a source name when none is given)."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(path).name).strip("-")[:60]
    return base or "source"


def unique_name(base: str, taken: set[str]) -> str:
    """`base`, or `base-2`, `base-3`, ... when another source already uses it."""
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    return name


def check_name(name: str) -> str:
    if not SOURCE_NAME.fullmatch(name):
        raise UsageError(f"source name {name!r}: use 1-64 letters, digits, '-', '_' or '.'")
    return name


def fill_missing(db) -> None:
    """Give every unnamed source its default name (a rebuilt index registers paths only)."""
    taken = {n for (n,) in db.execute("SELECT name FROM sources WHERE name IS NOT NULL")}
    for source_id, path in db.execute("SELECT id, path FROM sources WHERE name IS NULL ORDER BY id").fetchall():
        name = unique_name(default_name(path), taken)
        taken.add(name)
        db.execute("UPDATE sources SET name = ? WHERE id = ?", (name, source_id))
