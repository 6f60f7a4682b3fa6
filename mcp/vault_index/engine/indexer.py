"""Incremental sync of sources into the store, then embedding of whatever lacks a vector.

Order matters for "no write lands half-done": each file's rows are swapped in one transaction;
vectors are a cache filled afterwards for every chunk that lacks one under the current model
fingerprint. So an edit embeds only its new chunks, a model change embeds everything, and an
interrupted run is finished by the next one.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from vault_index.config import MAX_FILE_BYTES
from vault_index.engine.chunk import approximate_tokens, chunk_note, embed_text_for
from vault_index.engine.fileio import read_note
from vault_index.engine.models import Models
from vault_index.engine.parse import alias_title, parse_note
from vault_index.engine.sources import (
    check_source_path,
    is_note_path,
    looks_binary,
    real_path,
    source_of,
    walk_notes,
)
from vault_index.engine.store_contract import IndexStore as Store
from vault_index.errors import NotFoundError, VaultIndexError
from vault_index.types import SyncReport

Progress = Callable[[str, int, int], None]  # (phase, done, total)
EMBED_COMMIT_BATCH = 64
# A second index run waits this long for the first one's embedding, then embeds what is left.
EMBED_LOCK_WAIT_S = 6 * 3600


@contextmanager
def _embedding_turn(store: Store, progress: Progress | None):
    """Hold the index's embedding lock (a filelock beside the SQLite file, an advisory lock in
    PostgreSQL: store.embedding_lock) while embedding.

    Trigger: two `vault-index index` runs at once (setup and a person, two terminals).
    Why: both listed the same chunks as missing and both embedded everything (minutes each).
    Outcome: the second waits, says so through `progress("wait", 0, 0)`, then lists what is
    still missing (usually nothing). A folder where no lock can be made embeds unlocked.
    """
    from filelock import Timeout

    lock = store.embedding_lock()
    try:
        try:
            lock.acquire(timeout=0)
        except Timeout:
            if progress:
                progress("wait", 0, 0)
            lock.acquire(timeout=EMBED_LOCK_WAIT_S)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        lock.release()


def _read_note(root: Path, path: Path) -> tuple[str | None, bytes | None, str | None, os.stat_result | None]:
    """(text, raw bytes, problem, stat of what was read). Reading never changes the file.

    Through engine/fileio.read_note: opened once from the source's real root, following no
    link, regular files with one link only, so what is indexed (and shown in snippets) is never
    a file outside the sources, and a FIFO named like a note never blocks the sync.
    """
    try:
        raw, info = read_note(root, path, MAX_FILE_BYTES)
    except VaultIndexError as exc:  # a link, a FIFO or device, a second hard link, gone
        return None, None, f"skipped: {exc}", None
    except OSError as exc:
        return None, None, f"skipped: cannot read ({exc.strerror or exc})", None
    if raw is None:
        return None, None, f"skipped: {info.st_size:,} bytes is over the {MAX_FILE_BYTES:,} byte limit", info
    if looks_binary(raw):
        return None, raw, "skipped: binary file", info
    try:
        return raw.decode("utf-8-sig"), raw, None, info
    except UnicodeDecodeError as exc:
        return None, raw, f"skipped: not UTF-8 (byte {exc.start})", info


def register(store: Store, paths: Iterable[str], name: str | None = None) -> list[tuple[int, Path]]:
    """`name` names the source when exactly one path is given (ignored otherwise)."""
    paths = list(paths)
    name = name if len(paths) == 1 else None
    registered = []
    for raw in paths:
        path = Path(raw).expanduser().resolve()
        if not path.exists():
            raise NotFoundError(f"{raw} does not exist")
        check_source_path(path)
        registered.append((store.add_source(str(path), name), path))
    return registered


def sync(
    store: Store,
    models: Models,
    paths: Iterable[str] | None = None,
    progress: Progress | None = None,
    embed: bool = True,
    name: str | None = None,
) -> SyncReport:
    """Register `paths` as sources (none: every known source) and bring the index up to date;
    `name` names the one source when a single path is given."""
    started = time.perf_counter()
    report = SyncReport()
    paths = list(paths or [])
    targets = register(store, paths, name) if paths else [(i, Path(p)) for i, p in store.sources()]
    embedder = models.embedder() if embed else None
    count = embedder.count_tokens if embedder else approximate_tokens
    max_tokens = embedder.max_tokens if embedder else 512

    for source_id, root in targets:
        if not root.exists():
            report.problems.append((str(root), "source folder is missing; `vault-index remove` it"))
            continue
        unreadable: list[Path] = []
        real_root = Path(real_path(root))
        files = [root] if root.is_file() else list(walk_notes(root, unreadable))
        known = store.file_paths(source_id)
        for done, path in enumerate(files, start=1):
            report.scanned += 1
            _guarded_sync_file(store, source_id, real_root, path, report, count, max_tokens)
            if progress:
                progress("scan", done, len(files))
        for folder in unreadable:
            report.problems.append((str(folder), "cannot list this folder; its notes stay as last indexed"))
        kept = tuple(str(folder) + os.sep for folder in unreadable)
        for gone in known - {str(p) for p in files}:
            if kept and gone.startswith(kept):
                continue  # not seen because unreadable, not because deleted
            store.delete_file(gone)
            store.record_problem(gone, None)
            report.removed += 1

    if embedder is not None:
        report.vector_used = True
        with _embedding_turn(store, progress):
            _embed_missing(store, embedder, report, progress)
        store.prune_vectors()
    if report.indexed or report.removed or report.chunks_embedded:
        store.checkpoint()
    report.seconds = time.perf_counter() - started
    return report


def _guarded_sync_file(
    store: Store, source_id: int, root: Path, path: Path, report: SyncReport, count, max_tokens: int
) -> None:
    """_sync_file, with any failure of this one file reported instead of ending the sync.

    Trigger: an exception nobody foresaw in reading, parsing or chunking one note.
    Why: a sync of thousands of notes stopped at the first odd one, and every note after it
    was never indexed. Outcome: the file is a reported problem (its old rows, if any, stay);
    the sync goes on. Index-level failures (busy, read-only, a damaged database) still end it:
    they would fail every other file too.
    """
    try:
        _sync_file(store, source_id, root, path, report, count, max_tokens)
    except (VaultIndexError, *store.database_errors):
        raise
    except Exception as exc:  # noqa: BLE001 - one file's failure becomes its problem line
        detail = " ".join(str(exc).split())[:200] or "no detail"
        message = f"skipped: could not be indexed ({type(exc).__name__}: {detail}); the rest of the sync went on"
        report.problems.append((str(path), message))
        store.record_problem(str(path), message)


def _sync_file(
    store: Store, source_id: int, root: Path, path: Path, report: SyncReport, count, max_tokens: int
) -> None:
    """Index one note; `root` is its source's real path (folder, or the note for a file source)."""
    key = str(path)
    try:
        stat = os.stat(path, follow_symlinks=False)  # a note swapped for a link: changed, read, refused
    except OSError as exc:
        report.problems.append((key, f"skipped: {exc.strerror or exc}"))
        return
    state = store.file_state(key)
    if state and state.mtime == stat.st_mtime and state.size == stat.st_size:
        report.unchanged += 1
        return
    text, raw, problem, read_stat = _read_note(root, path)
    if problem:
        report.problems.append((key, problem))
        store.record_problem(key, problem)
        if state:
            store.delete_file(key)
        return
    digest = hashlib.sha256(raw).hexdigest()
    stat = read_stat  # record the file that was read, not the one looked at before
    if state and state.hash == digest:
        store.touch_file(key, stat.st_mtime, stat.st_size)
        report.unchanged += 1
        return
    note = parse_note(key, text)
    # Aliases join the title in the embedded context (and in the chunk hash: an alias edit re-embeds).
    chunks = chunk_note(replace(note, title=alias_title(note)), count, max_tokens)
    store.replace_file(source_id, key, (stat.st_mtime, stat.st_size), digest, note, chunks)
    store.update_links(key, str(root), text, note)
    store.record_problem(key, note.frontmatter_error)
    if note.frontmatter_error:
        report.problems.append((key, note.frontmatter_error + " (body indexed)"))
    report.indexed += 1


def _embed_missing(
    store: Store, embedder, report: SyncReport, progress: Progress | None, path: str | None = None
) -> None:
    pending = store.chunks_missing_vectors(embedder.fingerprint, path)
    total = len(pending)
    for start in range(0, total, EMBED_COMMIT_BATCH):
        batch = pending[start : start + EMBED_COMMIT_BATCH]
        texts = [embed_text_for(title, heading, text) for _, title, heading, text in batch]
        t0 = time.perf_counter()
        vectors = embedder.embed_documents(texts)
        report.embed_seconds += time.perf_counter() - t0
        store.put_vectors(embedder.fingerprint, ((h, v.tobytes()) for (h, *_), v in zip(batch, vectors, strict=True)))
        report.chunks_embedded += len(batch)
        if progress:
            progress("embed", min(start + len(batch), total), total)


def reindex_file(store: Store, models: Models, path: str) -> SyncReport | None:
    """Re-index one file if the folder walk of its source would index it (the edit hook's entry).

    None when the file is outside every source or is not a note there (secrets/, hidden,
    .indexignore, other suffixes): the hook must never index what a full sync would skip.
    """
    sources = store.sources()
    found = source_of(path, [root for _, root in sources])
    if found is None:
        return None
    key, root = found
    source_id = next(i for i, r in sources if r == str(root))
    if root.is_dir() and not is_note_path(key, Path(real_path(root))):  # key: source_of's real path
        return None
    report = SyncReport()
    embedder = models.embedder()
    count = embedder.count_tokens if embedder else approximate_tokens
    if key.exists():
        real_root = Path(real_path(root))
        _guarded_sync_file(store, source_id, real_root, key, report, count, embedder.max_tokens if embedder else 512)
    elif store.file_state(str(key)):
        store.delete_file(str(key))
        report.removed += 1
    if embedder is not None:
        report.vector_used = True
        _embed_missing(store, embedder, report, None, str(key))
    return report


def is_indexable(store: Store, path: str) -> bool:
    """Whether `reindex_file(path)` would index it: inside a registered source and a note there.

    The edit hand-off (services/edit_queue.py) asks this before it queues a path for the server,
    so that a path sent over the socket meets exactly the rules of the edit hook and full sync.
    """
    roots = [root for _, root in store.sources()]
    found = source_of(path, roots)
    if found is None:
        return False
    key, root = found
    return not root.is_dir() or is_note_path(Path(os.path.realpath(key)), Path(os.path.realpath(root)))
