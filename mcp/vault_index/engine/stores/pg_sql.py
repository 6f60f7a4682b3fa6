"""SQL helpers of the PostgreSQL store: qmark statements on psycopg, advisory locks, and values
made safe for PostgreSQL text and bytea.
"""

from __future__ import annotations

import json
import time

import psycopg

from vault_index.engine.stores.pg_schema import HNSW_EF_SEARCH_FACTOR, HNSW_EF_SEARCH_MAX
from vault_index.engine.stores.rows import _finite


class _Qmark:
    """A psycopg connection that speaks sqlite3's `?` placeholders, for the engine modules whose
    SQL is plain enough to serve both stores (link_index, source_names). None of their statements
    holds a literal `?` or `%`."""

    def __init__(self, conn: psycopg.Connection):
        self.conn = conn

    def execute(self, statement: str, args=()):
        return self.conn.execute(statement.replace("?", "%s"), tuple(args) or None)

    def executemany(self, statement: str, rows):
        rows = [tuple(r) for r in rows]
        cursor = self.conn.cursor()
        if rows:
            cursor.executemany(statement.replace("?", "%s"), rows)
        return cursor


class _AdvisoryLock:
    """A session advisory lock with filelock's acquire(timeout)/release (indexer._embedding_turn)."""

    def __init__(self, conn: psycopg.Connection, key: int):
        self.conn, self.key = conn, key

    def acquire(self, timeout: float) -> None:
        from filelock import Timeout

        deadline = time.monotonic() + timeout
        while not self.conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()[0]:
            if time.monotonic() >= deadline:
                raise Timeout(f"postgresql advisory lock {self.key}")
            time.sleep(0.2)

    def release(self) -> None:
        self.conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))


def _clean(text):
    """PostgreSQL text cannot hold NUL; a NUL past the binary sniff becomes U+FFFD (the chunk hash,
    computed from the file, is unchanged)."""
    return text.replace("\x00", "\ufffd") if isinstance(text, str) else text


def _as_text(value) -> str | None:
    """What SQLite's CAST(json_extract(frontmatter, '$.key') AS TEXT) gives for one value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (str, int, float)):
        return str(value)
    return json.dumps(_finite(value), default=str, ensure_ascii=False, separators=(",", ":"))


def _blob(vector) -> bytes:
    """float32 bytes of a vector as pgvector returns it (a numpy array, or its Vector in binary)."""
    import numpy as np

    if hasattr(vector, "to_numpy"):
        vector = vector.to_numpy()
    return np.asarray(vector, dtype="<f4").tobytes()


def ef_search_for(wanted: int, factor: int = HNSW_EF_SEARCH_FACTOR) -> int:
    """hnsw.ef_search for a query that wants `wanted` vectors, within pgvector's bounds."""
    return min(HNSW_EF_SEARCH_MAX, max(40, factor * wanted))
