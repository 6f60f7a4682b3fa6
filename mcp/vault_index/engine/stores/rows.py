"""Rows and helpers both index stores share (engine/stores/store.py for SQLite, pg_store.py for
PostgreSQL), so neither store imports the other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

BUSY_TIMEOUT_S = 30.0
LINK_QUERIES = ("backlinks", "outgoing", "neighbors", "unresolved")



@dataclass(frozen=True)
class FileState:
    id: int
    mtime: float
    size: int
    hash: str


@dataclass(frozen=True)
class ChunkRow:
    id: int
    path: str
    title: str
    heading: str
    line_start: int
    line_end: int
    text: str
    status: str


def _finite(value):
    """`value` with NaN and infinities (YAML `.nan`, `.inf`) as text: SQLite's JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _like_prefix(path: str) -> str:
    """A LIKE pattern (ESCAPE '\\') for everything below the folder `path`."""
    return path.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"
