"""Team vaults: one source, several checkouts (folders on one or more machines), one copy of each
note in the index (docs/adr/0019-team-vault-checkouts.md).

A note is stored once per source, keyed by its path under the source's canonical root (the root
of its first checkout, `sources.path`); engine/files/local_paths.py shows those paths under this
machine's checkout. Each checkout's own file of a note is a *copy*; the index remembers, per
checkout, what its copy was at its last look (table `copies`: mtime, size, hash, or `gone`).

The rules, applied under the store's write lock (both backends take one lock per write
transaction), so two indexers never decide on the same stale state:

1. A copy that has not changed since its checkout last looked at it does nothing.
2. A changed copy whose checkout had the stored version replaces it (an edit of what is stored,
   whatever the clocks say). Otherwise (another checkout's version is stored: two checkouts
   changed the note) it replaces the stored version only when its mtime is newer; equal content is
   only recorded, an older copy is *stale* and skipped. The stored mtime is that of the copy that
   brought the content in. A checkout's first look at a note the index already holds never
   replaces it (a fresh clone's mtimes are the time git wrote the files, not the time anyone
   edited them): only its later changes count.
3. A checkout removes a note only when its copy disappeared (it had the note at its last look)
   and the index still holds exactly the version it had (same hash): a note it never had (not
   pulled yet) or whose newer version came from elsewhere stays. The removal leaves a tombstone
   (table `removed_notes`: the removed version's mtime and hash).
4. A removed note comes back from a changed copy newer than the removed version and different
   from it, or from a checkout that saw it disappear and then has it again (restored there); never
   from a first look. A tombstone goes when no checkout has a copy of the note any more.

SQL here is plain enough for both stores: `db` speaks sqlite3's `?` (pg_store's _Qmark wraps a
psycopg connection), as in engine/parsing/link_index.py; no statement holds a literal `?` or `%`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from vault_index.engine.files.source_names import check_name, default_name, free_name
from vault_index.errors import NotFoundError, UsageError

WRITE, SAME, STALE = "write", "same", "stale"
DeleteNote = Callable[[object, str], None]  # (db, path): the note's rows and links go


@dataclass(frozen=True)
class Copy:
    """One checkout's copy of a note at its last look; `gone`: it saw the copy disappear."""

    mtime: float | None
    size: int | None
    hash: str
    gone: bool


def copy_state(db, checkout_id: int, path: str) -> Copy | None:
    row = db.execute("SELECT mtime, size, hash, gone FROM copies WHERE checkout_id = ? AND path = ?",
                     (checkout_id, path)).fetchone()
    return Copy(row[0], row[1], row[2], bool(row[3])) if row else None


def record_copy(db, checkout_id: int, path: str, mtime: float | None, size: int | None, digest: str,
                gone: bool = False) -> None:
    db.execute("INSERT INTO copies(checkout_id, path, mtime, size, hash, gone) VALUES (?,?,?,?,?,?) "
               "ON CONFLICT(checkout_id, path) DO UPDATE SET mtime = excluded.mtime, size = excluded.size, "
               "hash = excluded.hash, gone = excluded.gone",
               (checkout_id, path, mtime, size, digest, 1 if gone else 0))


def against_stored(stored_mtime: float | None, stored_hash: str, mine: Copy | None, mtime: float,
                   digest: str) -> str:
    """Rule 2 for a copy of a note the index holds: SAME, WRITE or STALE."""
    if stored_hash == digest:
        return SAME
    if mine is None:
        return STALE  # a first look (a fresh clone: git's mtimes say when it wrote the file)
    if not mine.gone and mine.hash == stored_hash:
        return WRITE  # this checkout had the stored version and changed it: a successor, whatever the clocks
    return WRITE if stored_mtime is None or mtime > stored_mtime else STALE


def verdict(db, checkout_id: int, path: str, mtime: float, digest: str) -> str:
    """Rules 2 and 4: WRITE, SAME (the stored content) or STALE (older than what is stored, or a
    checkout's first look at a note the index already holds or removed)."""
    stored = db.execute("SELECT mtime, hash FROM files WHERE path = ?", (path,)).fetchone()
    mine = copy_state(db, checkout_id, path)
    if stored:
        return against_stored(stored[0], stored[1], mine, mtime, digest)
    removed = db.execute("SELECT mtime, hash FROM removed_notes WHERE path = ?", (path,)).fetchone()
    if removed is None:
        return WRITE
    if mine is None:
        return STALE  # a first look never brings back what another checkout removed
    if mine.gone:
        return WRITE  # it disappeared here and came back: restored in this checkout
    if removed[1] == digest:
        return STALE  # the very version that was removed, in a checkout that has not seen it go
    return WRITE if removed[0] is None or mtime > removed[0] else STALE


def accept(db, checkout_id: int, path: str, stat: tuple[float, int], digest: str) -> bool:
    """Record the checkout's copy and say whether it may replace the stored note (rules 2, 4)."""
    outcome = verdict(db, checkout_id, path, stat[0], digest)
    record_copy(db, checkout_id, path, stat[0], stat[1], digest)
    if outcome == WRITE:
        db.execute("DELETE FROM removed_notes WHERE path = ?", (path,))
    return outcome == WRITE


def forget(db, path: str) -> None:
    """A note left the index for every checkout (its source or file removed outright)."""
    db.execute("DELETE FROM copies WHERE path = ?", (path,))
    db.execute("DELETE FROM removed_notes WHERE path = ?", (path,))


def remove_copy(db, checkout_id: int, path: str, delete_note: DeleteNote) -> bool:
    """Rule 3: the checkout's copy of `path` is gone (or no longer a note); True when the note left
    the index because of it."""
    mine = copy_state(db, checkout_id, path)
    if mine is None or mine.gone:
        return False
    stored = db.execute("SELECT source_id, mtime, hash FROM files WHERE path = ?", (path,)).fetchone()
    removed = bool(stored) and stored[2] == mine.hash
    if removed:
        delete_note(db, path)
        db.execute("INSERT INTO removed_notes(path, source_id, mtime, hash, removed_at) VALUES (?,?,?,?,?) "
                   "ON CONFLICT(path) DO UPDATE SET source_id = excluded.source_id, mtime = excluded.mtime, "
                   "hash = excluded.hash, removed_at = excluded.removed_at",
                   (path, stored[0], stored[1], stored[2], time.time()))
    record_copy(db, checkout_id, path, None, None, mine.hash, gone=True)
    if removed or not stored:
        _prune(db, path)
    return removed


def _prune(db, path: str) -> None:
    """Rule 4's end: with no copy of a note left anywhere, its tombstone and gone-markers go."""
    if not db.execute("SELECT 1 FROM copies WHERE path = ? AND gone = 0 LIMIT 1", (path,)).fetchone():
        forget(db, path)


def copy_states(db, checkout_id: int) -> dict[str, Copy]:
    """Every copy the checkout recorded, by path: a sync's stat shortcut reads them in one query."""
    rows = db.execute("SELECT path, mtime, size, hash, gone FROM copies WHERE checkout_id = ?", (checkout_id,))
    return {path: Copy(mtime, size, digest, bool(gone)) for path, mtime, size, digest, gone in rows}


def under(path: str, root: str) -> bool:
    """`path` is `root` or lies below it (plain strings; engine/files/local_paths.py uses it too)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def register(db, path: str, name: str | None, checkout: bool, is_file: bool = False, scope: str = "") -> int:
    """Register the folder `path` (resolved) and return its source's id.

    - already a checkout: kept (renamed when `name` differs and is free, as before checkouts);
    - `name` new, or none: a new source named `name` (default: the folder's name, or
      `<workspace>/<folder>` for a folder right inside its workspace `scope`, made unique);
    - `name` taken by another source: with `checkout`, this folder joins it as another checkout;
      without, the clear error of before, now naming --checkout (two unrelated folders never merge
      by accident).
    """
    if name is not None:
        check_name(name)
    row = db.execute("SELECT c.source_id, s.name FROM checkouts c JOIN sources s ON s.id = c.source_id "
                     "WHERE c.root = ?", (path,)).fetchone()
    if row:
        source_id, current = row
        if name is not None and name != current:
            owner = db.execute("SELECT path FROM sources WHERE name = ?", (name,)).fetchone()
            if owner and checkout:
                raise UsageError(f"{path} is already a checkout of the source {current!r}; "
                                 f"`vault-index remove {path}` first to make it a checkout of {name!r}")
            if owner:
                raise UsageError(f"the name {name!r} is already used by the source {owner[0]}; "
                                 "choose another with --name")
            db.execute("UPDATE sources SET name = ? WHERE id = ?", (name, source_id))
        return source_id
    if name is not None:
        owner = db.execute("SELECT id, path FROM sources WHERE name = ?", (name,)).fetchone()
        if owner:
            if not checkout:
                raise UsageError(
                    f"the name {name!r} is already used by the source {owner[1]}; choose another with --name, "
                    f"or add --checkout if {path} is another checkout of the same vault (docs/postgres.md)")
            if is_file:
                raise UsageError("--checkout joins a folder to a source; a single file cannot be a checkout")
            for (root,) in db.execute("SELECT root FROM checkouts WHERE source_id = ?", (owner[0],)).fetchall():
                if under(path, root) or under(root, path):
                    raise UsageError(f"{path} overlaps the checkout {root} of {name!r}; a checkout is a whole "
                                     "copy of the vault, beside the others")
            db.execute("INSERT INTO checkouts(source_id, root, added_at) VALUES (?, ?, ?)",
                       (owner[0], path, time.time()))
            return owner[0]
    elif checkout:
        raise UsageError("--checkout needs --name: the name of the source this folder is a checkout of")
    taken = {n for (n,) in db.execute("SELECT name FROM sources")}
    db.execute("INSERT INTO sources(path, added_at, name) VALUES (?, ?, ?)",
               (path, time.time(), name or free_name(default_name(path, scope), scope, taken)))
    source_id = db.execute("SELECT id FROM sources WHERE path = ?", (path,)).fetchone()[0]
    db.execute("INSERT INTO checkouts(source_id, root, added_at) VALUES (?, ?, ?)", (source_id, path, time.time()))
    return source_id


def target(db, path: str) -> tuple[int, int | None]:
    """(source id, checkout id or None) that `remove PATH` means: a checkout's root (that checkout,
    when its source has others), a source's path or its name (the whole source)."""
    row = db.execute("SELECT id, source_id FROM checkouts WHERE root = ?", (path,)).fetchone()
    if row:
        others = db.execute("SELECT COUNT(*) FROM checkouts WHERE source_id = ?", (row[1],)).fetchone()[0]
        return row[1], (row[0] if others > 1 else None)
    row = (db.execute("SELECT id FROM sources WHERE path = ?", (path,)).fetchone()
           or db.execute("SELECT id FROM sources WHERE name = ?", (path,)).fetchone())
    if not row:
        raise NotFoundError(f"{path} is not a registered source; `vault-index sources` lists them")
    return row[0], None


def drop_source(db, source_id: int) -> None:
    """The rows a whole source keeps besides its notes: checkouts, copies, tombstones."""
    db.execute("DELETE FROM copies WHERE checkout_id IN (SELECT id FROM checkouts WHERE source_id = ?)", (source_id,))
    db.execute("DELETE FROM removed_notes WHERE source_id = ?", (source_id,))
    db.execute("DELETE FROM checkouts WHERE source_id = ?", (source_id,))


def drop_checkout(db, checkout_id: int, delete_note: DeleteNote) -> int:
    """Unregister one checkout of a source that has others; returns the notes that left the index.

    Kept: every note another checkout had at its last look. Dropped: the notes only this checkout
    had (nobody else could ever remove them). When the folder was the source's canonical root, the
    source is re-keyed under the next checkout's root, so canonical is always a registered checkout.
    """
    source_id, root = db.execute("SELECT source_id, root FROM checkouts WHERE id = ?", (checkout_id,)).fetchone()
    db.execute("DELETE FROM copies WHERE checkout_id = ?", (checkout_id,))
    db.execute("DELETE FROM checkouts WHERE id = ?", (checkout_id,))
    orphans = [p for (p,) in db.execute(
        "SELECT f.path FROM files f WHERE f.source_id = ? AND NOT EXISTS "
        "(SELECT 1 FROM copies c WHERE c.path = f.path AND c.gone = 0)", (source_id,)).fetchall()]
    for path in orphans:
        delete_note(db, path)
        forget(db, path)
    for (path,) in db.execute("SELECT path FROM removed_notes WHERE source_id = ?", (source_id,)).fetchall():
        _prune(db, path)
    canonical = db.execute("SELECT path FROM sources WHERE id = ?", (source_id,)).fetchone()[0]
    if canonical == root:
        successor = db.execute("SELECT root FROM checkouts WHERE source_id = ? ORDER BY id LIMIT 1",
                               (source_id,)).fetchone()[0]
        rekey(db, source_id, root, successor)
    return len(orphans)


def rekey(db, source_id: int, old: str, new: str) -> None:
    """Every stored path of the source under `old` moves under `new` (rows keep their ids)."""
    cut = len(old) + 1  # substr() is 1-based in both databases; literal, not a parameter (PostgreSQL
    #                     would have to guess the integer type of a parameter)

    def under(column: str) -> str:
        return f"({column} = ? OR substr({column}, 1, {cut}) = ?)"

    def moved(column: str) -> str:
        return f"? || substr({column}, {cut})"

    args = (old, old.rstrip("/") + "/")
    db.execute("UPDATE sources SET path = ? WHERE id = ?", (new, source_id))
    db.execute(f"UPDATE files SET path = {moved('path')} WHERE source_id = ? AND {under('path')}",
               (new, source_id, *args))
    db.execute(f"UPDATE copies SET path = {moved('path')} WHERE {under('path')} AND checkout_id IN "
               "(SELECT id FROM checkouts WHERE source_id = ?)", (new, *args, source_id))
    db.execute(f"UPDATE removed_notes SET path = {moved('path')} WHERE source_id = ? AND {under('path')}",
               (new, source_id, *args))
    db.execute(f"UPDATE note_names SET path = {moved('path')} WHERE {under('path')}", (new, *args))
    db.execute(f"UPDATE problems SET path = {moved('path')} WHERE {under('path')}", (new, *args))
    db.execute(f"UPDATE edges SET source = {moved('source')}, target = CASE WHEN target IS NULL THEN NULL "
               f"ELSE {moved('target')} END, root = ? WHERE root = ?", (new, new, new, old))


def checkout_rows(db) -> list[tuple[int, int, str]]:
    return [tuple(r) for r in db.execute("SELECT id, source_id, root FROM checkouts ORDER BY source_id, id").fetchall()]
