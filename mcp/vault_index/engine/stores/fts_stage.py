"""The keyword rows of a Store.batch, written to FTS5 once, at the batch's end.

Why: FTS5 writes its pending terms out as a new segment at every savepoint, and a batch makes one
savepoint per note transaction; a sync of 10,000 chunks wrote 2,000 tiny segments and merged
them again, 2.4x the cost of the inserts themselves (issue 26, ADR 0029). Staged, the batch's
rows go in as one pending set that FTS5 flushes once, at commit. Until then chunks_fts lags the
chunks table on the batch's own connection: nothing inside a batch may search it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable


class FtsStage:
    """Inserts and deletes of chunks_fts rows, in order, undone with the savepoint that made them."""

    def __init__(self) -> None:
        self._ops: list[tuple[int, tuple | None]] = []  # (rowid, row to insert or None: delete)

    def mark(self) -> int:
        return len(self._ops)

    def undo(self, mark: int) -> None:
        """Forget what was staged since `mark` (its savepoint rolled back)."""
        del self._ops[mark:]

    def insert(self, row: tuple) -> None:
        """`row` is (rowid, title, heading, body)."""
        self._ops.append((row[0], row))

    def delete(self, rowids: Iterable[int]) -> None:
        self._ops.extend((rowid, None) for rowid in rowids)

    def write(self, db: sqlite3.Connection) -> None:
        """Apply the staged rows: deletes of rows the index held before the batch, then the rows
        still wanted at its end. A rowid deleted and reused inside the batch (chunks' rowids are
        reused) ends as its last insert."""
        inserts: dict[int, tuple] = {}
        deletes: set[int] = set()
        for rowid, row in self._ops:
            if row is not None:
                inserts[rowid] = row
            elif inserts.pop(rowid, None) is None:
                deletes.add(rowid)  # not staged in this batch: a row FTS5 holds already
        self._ops.clear()
        db.executemany("DELETE FROM chunks_fts WHERE rowid = ?", ((rowid,) for rowid in sorted(deletes)))
        db.executemany("INSERT INTO chunks_fts(rowid, title, heading, body) VALUES (?,?,?,?)", inserts.values())
