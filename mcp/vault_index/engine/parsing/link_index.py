"""The link graph in the index: the `edges` and `note_names` tables (migration m003_links).

Kept up to date one note at a time, inside the indexer's own flow:
- `update_note` after a note's chunks are written: its own edges are replaced; when the names it
  answers to changed (a new note, a new title or alias, a rename), the edges of other notes that
  could name it, old or new, are resolved again;
- `forget_note` when a note leaves the index: its edges go, and links to it resolve again (to
  another note if one now answers, else unresolved).
An edit that keeps a note's names touches only that note's rows (tests/engine/test_link_index.py).

Queries: backlinks, outgoing links and neighbours up to a depth, over the same tables.
"""

from __future__ import annotations

import posixpath
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path

from vault_index.engine.parsing import links as L

MAX_DEPTH = 3
MAX_NEIGHBORS = 500
_BATCH = 500  # SQLite variables per IN (...) query


def migrate(db: sqlite3.Connection) -> None:
    """m003_links: edges (source, target or NULL, raw, kind, line, status) and the names notes answer to."""
    for statement in (
        "CREATE TABLE edges(id INTEGER PRIMARY KEY, source TEXT NOT NULL, target TEXT, raw TEXT NOT NULL, "
        "fragment TEXT NOT NULL DEFAULT '', kind TEXT NOT NULL, line INTEGER NOT NULL, status TEXT NOT NULL, "
        "name_key TEXT NOT NULL, file_key TEXT NOT NULL, root TEXT NOT NULL)",
        "CREATE INDEX edges_source ON edges(source)",
        "CREATE INDEX edges_target ON edges(target)",
        "CREATE INDEX edges_name ON edges(name_key)",
        "CREATE INDEX edges_file ON edges(file_key)",
        "CREATE TABLE note_names(path TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL)",
        "CREATE INDEX note_names_key ON note_names(kind, key)",
        "CREATE INDEX note_names_path ON note_names(path)",
    ):
        db.execute(statement)


def _lookup(db: sqlite3.Connection, root: str) -> L.Lookup:
    """Candidates among the notes of the same source (a link never crosses into another vault)."""
    prefix = root.rstrip("/") + "/"

    def lookup(kind: str, key: str) -> list[str]:
        rows = db.execute("SELECT path FROM note_names WHERE kind = ? AND key = ?", (kind, key))
        return [p for (p,) in rows if p.startswith(prefix)]

    return lookup


def _names(db: sqlite3.Connection, path: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {"name": set(), "path": set(), "file": set()}
    for kind, key in db.execute("SELECT kind, key FROM note_names WHERE path = ?", (path,)):
        found.setdefault(kind, set()).add(key)
    return found


def _vault_root(root: str | Path) -> str:
    root = str(root)
    return posixpath.dirname(root) if root.casefold().endswith(".md") else root


def update_note(db: sqlite3.Connection, path: str, root: str | Path, text: str, frontmatter: dict,
                title: str, body_start: int | None = None) -> None:
    """Replace `path`'s edges and names; resolve again what its changed names could affect."""
    body_start = L.body_start(text) if body_start is None else body_start
    root = _vault_root(root)
    old = _names(db, path)
    new = L.note_names(path, frontmatter, title)
    if old != new:
        db.execute("DELETE FROM note_names WHERE path = ?", (path,))
        db.executemany("INSERT INTO note_names(path, kind, key) VALUES (?,?,?)",
                       [(path, kind, key) for kind, keys in new.items() for key in sorted(keys)])
    db.execute("DELETE FROM edges WHERE source = ?", (path,))
    lookup = _lookup(db, root)
    rows = []
    for link in L.extract(text, frontmatter, body_start):
        found = L.resolve(link.target, path, root, lookup)
        rows.append((path, found.target, link.target, link.fragment, link.kind, link.line, found.status,
                     L.name_key(link.target), L.file_key(link.target), root))
    db.executemany("INSERT INTO edges(source, target, raw, fragment, kind, line, status, name_key, file_key, root) "
                   "VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
    if old != new:
        _reresolve(db, path, old["name"] | new["name"], old["file"] | new["file"], skip_source=path)


def forget_note(db: sqlite3.Connection, path: str) -> None:
    """`path` left the index: drop its edges and names; links to it resolve again."""
    old = _names(db, path)
    db.execute("DELETE FROM note_names WHERE path = ?", (path,))
    db.execute("DELETE FROM edges WHERE source = ?", (path,))
    _reresolve(db, path, old["name"], old["file"])


def _reresolve(db: sqlite3.Connection, path: str, names: set[str], files: set[str], skip_source: str = "") -> None:
    """Resolve again every edge that could name `path` by one of `names`/`files` or did resolve to it.

    Any link the path rules match ends in the note's file name, so `file_key` finds those too.
    """
    ids: set[int] = {i for (i,) in db.execute("SELECT id FROM edges WHERE target = ?", (path,))}
    for column, keys in (("name_key", names), ("file_key", files)):
        for chunk in _chunks(sorted(keys)):
            marks = ",".join("?" * len(chunk))
            ids.update(i for (i,) in db.execute(f"SELECT id FROM edges WHERE {column} IN ({marks})", chunk))  # noqa: S608
    lookups: dict[str, L.Lookup] = {}
    for edge_id, source, raw, root, target, status in _rows(db, ids):
        if source == skip_source:
            continue
        lookup = lookups.setdefault(root, _lookup(db, root))
        found = L.resolve(raw, source, root, lookup)
        if (found.target, found.status) != (target, status):
            db.execute("UPDATE edges SET target = ?, status = ? WHERE id = ?", (found.target, found.status, edge_id))


def _rows(db: sqlite3.Connection, ids: Iterable[int]):
    for chunk in _chunks(sorted(ids)):
        marks = ",".join("?" * len(chunk))
        yield from db.execute(f"SELECT id, source, raw, root, target, status FROM edges WHERE id IN ({marks})",  # noqa: S608
                              chunk).fetchall()


def _chunks(items: list, size: int = _BATCH):
    for start in range(0, len(items), size):
        yield items[start:start + size]


# --- queries ------------------------------------------------------------------------------------


def _kind_filter(kinds: Iterable[str] | None) -> tuple[str, list[str]]:
    kinds = [k for k in (kinds or ()) if k]
    if not kinds:
        return "", []
    return f" AND kind IN ({','.join('?' * len(kinds))})", kinds


def backlinks(db: sqlite3.Connection, path: str, kinds: Iterable[str] | None = None) -> list[dict]:
    """Links from other notes to `path`: {path, kind, line, raw}, by source then line."""
    where, args = _kind_filter(kinds)
    rows = db.execute(f"SELECT source, kind, line, raw FROM edges WHERE target = ? AND source != ?{where} "  # noqa: S608
                      "ORDER BY source, line", [path, path, *args])
    return [{"path": s, "kind": k, "line": n, "raw": r} for s, k, n, r in rows]


def outgoing(db: sqlite3.Connection, path: str, keep: Callable[[str], bool] | None = None) -> list[dict]:
    """Every link `path` makes, resolved or not: {target, raw, fragment, kind, line, status}.

    `keep` (a caller's read check): a link is resolved as if the notes it may not read did not
    exist, so one to a hidden note reads exactly as one to a missing note, and a name shared with
    a hidden note is not `ambiguous` (issue 22: a limited role learned which hidden names exist).
    """
    rows = db.execute("SELECT target, raw, fragment, kind, line, status, root FROM edges WHERE source = ? "
                      "ORDER BY line, id", (path,)).fetchall()
    found = []
    for target, raw, fragment, kind, line, status, root in rows:
        if keep is not None and (status == "ambiguous" or (target is not None and not keep(target))):
            every = _lookup(db, root)
            seen = L.resolve(raw, path, root, lambda k, key, every=every: [p for p in every(k, key) if keep(p)])
            target, status = seen.target, seen.status
        found.append({"target": target, "raw": raw, "fragment": fragment, "kind": kind, "line": line,
                      "status": status})
    return found


def neighbors(db: sqlite3.Connection, path: str, depth: int = 1, kinds: Iterable[str] | None = None,
              limit: int = MAX_NEIGHBORS, keep: Callable[[str], bool] | None = None) -> list[dict]:
    """Notes within `depth` links of `path`, either direction: {path, depth, kind, direction, via}.

    Breadth first, so each note appears once, at its smallest depth. `keep` (a caller's read check)
    leaves a note out and does not walk through it: a note reached only through one the caller may
    not read is not its neighbour, and no `via` names a note it may not read.
    """
    depth = max(1, min(int(depth), MAX_DEPTH))
    where, args = _kind_filter(kinds)
    seen = {path}
    frontier = [path]
    found: list[dict] = []
    for level in range(1, depth + 1):
        nxt = []
        for chunk in _chunks(frontier, 400):
            marks = ",".join("?" * len(chunk))
            sql = (f"SELECT source, target, kind, 'out' FROM edges WHERE source IN ({marks}) "
                   f"AND target IS NOT NULL{where} UNION ALL "
                   f"SELECT target, source, kind, 'in' FROM edges WHERE target IN ({marks}){where}")
            rows = db.execute(sql, [*chunk, *args, *chunk, *args])
            for via, other, kind, direction in rows:
                if other in seen:
                    continue
                seen.add(other)
                if keep is not None and not keep(other):
                    continue
                nxt.append(other)
                found.append({"path": other, "depth": level, "kind": kind, "direction": direction, "via": via})
                if len(found) >= limit:
                    return found
        frontier = nxt
        if not frontier:
            break
    return found


def unresolved(db: sqlite3.Connection) -> list[dict]:
    """Links that name no note or more than one: {source, raw, kind, line, status}."""
    rows = db.execute("SELECT source, raw, kind, line, status FROM edges WHERE status != 'resolved' "
                      "ORDER BY source, line")
    return [{"source": s, "raw": r, "kind": k, "line": n, "status": st} for s, r, k, n, st in rows]
