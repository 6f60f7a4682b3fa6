"""Paths as this machine sees them: the one place where stored note paths meet local folders.

A source's notes are stored once, keyed by their path under the source's canonical root (its
first checkout, engine/files/checkouts.py). On a machine where that root is not a folder here (Bob's
machine holds /home/bob/team-vault; the index keys notes under /home/alice/team-vault), every path
must still be Bob's: search hits, get_note, note resources, links, status, problems.

`LocalPaths` wraps either index store (engine/stores/store_contract.open_store returns it) and translates
at its edge only:
- in: a path under any checkout's root becomes the same relative path under the canonical root;
- out: a path under the canonical root is shown under this machine's checkout when the canonical
  root is not a folder here (when it is, it is shown as stored);
- `copy_states(checkout)`: under that checkout's own root, for its sync.
Nothing else in the code base rewrites paths (docs/adr/0019-team-vault-checkouts.md). A source
with one checkout, or whose canonical root exists here, is shown exactly as stored.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace

from vault_index.engine.files.checkouts import under

ROOTS_TTL_S = 1.0  # how long the checkout map (one query, a stat per root) serves before it is read again
_PATH_KEYS = ("path", "target", "source", "via")  # path-valued keys of link_index's answers


def _swap(path, pairs):
    """`path` with the first (longest) matching root of `pairs` replaced by its partner."""
    if not isinstance(path, str):
        return path
    for old, new in pairs:
        if under(path, old):
            return new if path == old else new.rstrip("/") + path[len(old.rstrip("/")):]
    return path


def _longest_first(pairs) -> list[tuple[str, str]]:
    return sorted(set(pairs), key=lambda pair: (-len(pair[0]), pair))


class Roots:
    """Which root of each source is this machine's, from the sources and checkouts tables."""

    def __init__(self, sources: list[tuple[int, str]], checkouts: list[tuple[int, int, str]], exists=os.path.exists):
        self.canonical = dict(sources)  # source id -> canonical root
        self.checkout_root: dict[int, str] = {}
        self.checkout_source: dict[int, int] = {}
        roots: dict[int, list[str]] = {}
        for checkout_id, source_id, root in checkouts:
            self.checkout_root[checkout_id] = root
            self.checkout_source[checkout_id] = source_id
            roots.setdefault(source_id, []).append(root)
        self.here: dict[int, list[str]] = {}  # source id -> its checkouts on this machine, shown root first
        self.shown: dict[int, str] = {}  # source id -> the root its paths are shown under here
        self.roots: dict[str, list[tuple[str, bool]]] = {}  # canonical -> [(checkout root, is here)]
        for source_id, canonical in self.canonical.items():
            mine = roots.get(source_id, [canonical])
            here = [r for r in mine if exists(r)]
            shown = canonical if canonical in here or not here else here[0]
            self.shown[source_id] = shown
            self.here[source_id] = sorted(here, key=lambda r: r != shown)
            self.roots[canonical] = [(r, r in here) for r in mine]
        self.inbound = _longest_first((root, self.canonical[self.checkout_source[c]])
                                      for c, root in self.checkout_root.items()
                                      if self.checkout_source[c] in self.canonical)
        self.outbound = _longest_first((self.canonical[s], shown) for s, shown in self.shown.items()
                                       if shown != self.canonical[s])
        self.shown_of = {self.canonical[s]: shown for s, shown in self.shown.items()}

    def stored(self, path):
        return _swap(path, self.inbound)

    def local(self, path):
        return _swap(path, self.outbound) if self.outbound else path

    def under_checkout(self, path: str, checkout_id: int) -> str:
        source_id = self.checkout_source.get(checkout_id)
        if source_id is None:
            return path
        return _swap(path, [(self.canonical[source_id], self.checkout_root[checkout_id])])


class LocalPaths:
    """An IndexStore whose note paths are this machine's (module docstring). Everything that is not
    a path passes through to `inner`, the SQLite or PostgreSQL store."""

    def __init__(self, inner):
        self.inner = inner
        self._roots: Roots | None = None
        self._read_at = 0.0

    def __getattr__(self, name):  # backend extras: db, path, schema_version, ensure_vector_index...
        return getattr(self.inner, name)

    # what status and the callers read as attributes, always the inner store's current value
    kind = property(lambda self: self.inner.kind)
    location = property(lambda self: self.inner.location)
    read_only = property(lambda self: self.inner.read_only)
    notices = property(lambda self: self.inner.notices)
    recovered_from = property(lambda self: self.inner.recovered_from)
    database_errors = property(lambda self: self.inner.database_errors)
    vector_backend = property(lambda self: self.inner.vector_backend)

    def roots(self) -> Roots:
        """The checkout map, read again at most every ROOTS_TTL_S (another process may register a
        checkout, a folder may appear or go) and at once after this process changed the sources."""
        now = time.monotonic()
        if self._roots is None or now - self._read_at > ROOTS_TTL_S:
            self._roots = Roots(self.inner.sources(), self.inner.checkouts())
            self._read_at = now
        return self._roots

    def _changed(self) -> None:
        self._roots = None

    # --- passed through ---------------------------------------------------------------------

    def close(self) -> None:
        self.inner.close()

    def transaction(self):
        return self.inner.transaction()

    def batch(self):
        return self.inner.batch()

    def recovery_notice(self):
        return self.inner.recovery_notice()

    def size_bytes(self) -> int:
        return self.inner.size_bytes()

    def embedding_lock(self):
        return self.inner.embedding_lock()

    def open_vector_index(self, model: str):
        return self.inner.open_vector_index(model)

    def get_meta(self, key: str, default: str = "") -> str:
        return self.inner.get_meta(key, default)

    def set_meta(self, db, key: str, value: str) -> None:
        self.inner.set_meta(db, key, value)

    def generation(self) -> int:
        return self.inner.generation()

    def checkouts(self) -> list[tuple[int, int, str]]:
        return self.inner.checkouts()

    def put_vectors(self, model: str, items) -> None:
        self.inner.put_vectors(model, items)

    def checkpoint(self) -> None:
        self.inner.checkpoint()

    def prune_vectors(self) -> int:
        return self.inner.prune_vectors()

    def chunk_keys(self):
        return self.inner.chunk_keys()

    def vectors_by_hash(self, model: str, hashes=None):
        return self.inner.vectors_by_hash(model, hashes)

    def iter_vectors(self, model: str):
        return self.inner.iter_vectors(model)

    def file_vectors(self, model: str, chunk_ids):
        return self.inner.file_vectors(model, chunk_ids)

    def vector_count(self, model: str) -> int:
        return self.inner.vector_count(model)

    def pending_vectors(self, model: str) -> dict[str, int]:
        shown = self.roots().shown_of
        return {shown.get(p, p): count for p, count in self.inner.pending_vectors(model).items()}

    def keyword(self, match: str, limit: int):
        return self.inner.keyword(match, limit)

    def term_doc_count(self, match: str, cap: int) -> int:
        return self.inner.term_doc_count(match, cap)

    def chunk_texts(self):
        return self.inner.chunk_texts()

    def chunk_count(self) -> int:
        return self.inner.chunk_count()

    def counts(self) -> dict[str, int]:
        return self.inner.counts()

    # --- sources ----------------------------------------------------------------------------

    def sources(self) -> list[tuple[int, str]]:
        """(source id, root) of every checkout on this machine, the root paths are shown under
        first; a source with none here is listed under its canonical root (the sync says it is
        missing)."""
        roots = self.roots()
        listed = []
        for source_id, canonical in self.inner.sources():
            here = roots.here.get(source_id) or [roots.shown.get(source_id, canonical)]
            listed += [(source_id, root) for root in here]
        return listed

    def source_names(self) -> dict[str, str]:
        shown = self.roots().shown_of
        return {name: shown.get(path, path) for name, path in self.inner.source_names().items()}

    def source_root(self, name: str) -> str:
        path = self.inner.source_root(name)
        return self.roots().shown_of.get(path, path)

    def file_stats(self, model: str = "") -> list[dict]:
        """Each indexed file under this machine's paths."""
        roots = self.roots()
        return [{**row, "path": roots.local(row["path"]),
                 "source_path": roots.shown_of.get(row["source_path"], row["source_path"])}
                for row in self.inner.file_stats(model)]

    def source_stats(self, model: str = "") -> list[dict]:
        """Each source once, under the root shown here; a source with several checkouts lists them
        all (on any machine), a source with one is shown as before team vaults."""
        roots = self.roots()
        stats = []
        for row in self.inner.source_stats(model):
            canonical = row["path"]
            row = {**row, "path": roots.shown_of.get(canonical, canonical)}
            checkouts = roots.roots.get(canonical, [])
            if len(checkouts) > 1:
                row["checkouts"] = [{"path": r, "here": here} for r, here in checkouts]
            stats.append(row)
        return stats

    def source_scopes(self) -> dict[str, str]:
        shown = self.roots().shown_of
        return {shown.get(p, p): scope for p, scope in self.inner.source_scopes().items()}

    def set_source_scope(self, path: str, scope: str) -> None:
        try:
            self.inner.set_source_scope(self.roots().stored(path), scope)
        finally:
            self._changed()

    def add_source(self, path: str, name: str | None = None, checkout: bool = False, scope: str = "") -> int:
        try:
            return self.inner.add_source(path, name, checkout, scope)
        finally:
            self._changed()

    def remove_source(self, path: str) -> int:
        """`path` names a root or a source as registered: never translated (Alice's root names
        Alice's checkout, even on Bob's machine)."""
        try:
            return self.inner.remove_source(path)
        finally:
            self._changed()

    # --- notes --------------------------------------------------------------------------------

    def file_state(self, path: str):
        return self.inner.file_state(self.roots().stored(path))

    def copy_state(self, checkout_id: int, path: str):
        return self.inner.copy_state(checkout_id, self.roots().stored(path))

    def copy_states(self, checkout_id: int) -> dict:
        """By path under the checkout's own root, as its walk finds them (what it had, and how)."""
        roots, states = self.roots(), self.inner.copy_states(checkout_id)
        source_id = roots.checkout_source.get(checkout_id)
        if source_id is None or roots.canonical[source_id] == roots.checkout_root[checkout_id]:
            return states  # the checkout is where the index says the source is: no path moves
        return {roots.under_checkout(p, checkout_id): c for p, c in states.items()}

    def file_paths(self, source_id: int) -> set[str]:
        """Under the root shown here."""
        roots = self.roots()
        return {roots.local(p) for p in self.inner.file_paths(source_id)}

    def record_copy(self, checkout_id: int, path: str, mtime: float, size: int, digest: str) -> None:
        self.inner.record_copy(checkout_id, self.roots().stored(path), mtime, size, digest)

    def replace_file(self, source_id: int, path: str, stat, digest: str, note, chunks,
                     checkout_id: int | None = None) -> bool:
        return self.inner.replace_file(source_id, self.roots().stored(path), stat, digest, note, chunks, checkout_id)

    def remove_copy(self, checkout_id: int, path: str) -> bool:
        return self.inner.remove_copy(checkout_id, self.roots().stored(path))

    def delete_file(self, path: str) -> None:
        self.inner.delete_file(self.roots().stored(path))

    def update_links(self, path: str, root: str, text: str, note, body_start: int | None = None) -> None:
        roots = self.roots()
        self.inner.update_links(roots.stored(path), roots.stored(root), text, note, body_start)

    def links(self, query: str, path: str, **options) -> list[dict]:
        roots = self.roots()
        keep = options.get("keep")
        if keep is not None:
            options["keep"] = lambda stored: keep(roots.local(stored))
        found = self.inner.links(query, roots.stored(path) if path else path, **options)
        if not roots.outbound:
            return found
        return [{k: (roots.local(v) if k in _PATH_KEYS else v) for k, v in row.items()} for row in found]

    def record_problem(self, path: str, message: str | None) -> None:
        self.inner.record_problem(self.roots().stored(path), message)

    def problems(self) -> list[tuple[str, str]]:
        roots = self.roots()
        return [(roots.local(p), m) for p, m in self.inner.problems()]

    def chunks_missing_vectors(self, model: str, path: str | None = None, sources=None):
        return self.inner.chunks_missing_vectors(model, None if path is None else self.roots().stored(path), sources)

    def any_missing_vectors(self, model: str, path: str | None = None, sources=None) -> bool:
        return self.inner.any_missing_vectors(model, None if path is None else self.roots().stored(path), sources)

    def chunk_rows(self, ids) -> dict:
        roots = self.roots()
        rows = self.inner.chunk_rows(ids)
        if not roots.outbound:
            return rows
        return {cid: replace(row, path=roots.local(row.path)) for cid, row in rows.items()}

    def chunks_of_day(self, day: str, limit: int):
        roots = self.roots()
        return [(cid, roots.local(path), date) for cid, path, date in self.inner.chunks_of_day(day, limit)]

    def chunk_ids_matching(self, path_prefix, tags, status, collection=None) -> set[int]:
        """A prefix under a checkout is that prefix under the canonical root; a prefix above the
        root shown here (`/home/bob`) covers that source's stored paths too."""
        if not path_prefix:
            return self.inner.chunk_ids_matching(path_prefix, tags, status, collection)
        roots = self.roots()
        prefix = path_prefix.rstrip("/") or "/"
        wanted = {roots.stored(prefix)}
        wanted |= {canonical for canonical, shown in roots.outbound if under(shown, prefix)}
        found: set[int] = set()
        tags = tuple(tags)
        for one in sorted(wanted):
            found |= self.inner.chunk_ids_matching(one, tags, status, collection)
        return found

    def file_record(self, path: str) -> dict | None:
        roots = self.roots()
        record = self.inner.file_record(roots.stored(path))
        if record is None or not roots.outbound:
            return record
        return {**record, "path": roots.local(record["path"]), "source": roots.local(record["source"])}
