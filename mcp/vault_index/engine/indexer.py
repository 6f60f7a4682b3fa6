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
from dataclasses import dataclass, field, replace
from pathlib import Path

from vault_index.config import MAX_FILE_BYTES
from vault_index.engine.embedding.models import Models
from vault_index.engine.files import checkouts
from vault_index.engine.files.fileio import read_note
from vault_index.engine.files.sources import (
    check_source_path,
    is_note_path,
    looks_binary,
    real_path,
    source_of,
    walk_note_paths,
)
from vault_index.engine.parsing.chunk import approximate_tokens, chunk_note, embed_text_for
from vault_index.engine.parsing.parse import alias_title, parse_note
from vault_index.engine.stores.store_contract import IndexStore as Store
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
    still missing (usually nothing). A folder where no lock can be made embeds unlocked. Yields
    whether it waited (what was listed before may be embedded by now).
    """
    from filelock import Timeout

    lock = store.embedding_lock()
    waited = False
    try:
        try:
            lock.acquire(timeout=0)
        except Timeout:
            waited = True
            if progress:
                progress("wait", 0, 0)
            lock.acquire(timeout=EMBED_LOCK_WAIT_S)
    except OSError:
        yield waited
        return
    try:
        yield waited
    finally:
        lock.release()


def _read_note(root: Path, path: Path) -> tuple[str | None, bytes | None, str | None, os.stat_result | None]:
    """(text, raw bytes, problem, stat of what was read). Reading never changes the file.

    Through engine/files/fileio.read_note: opened once from the source's real root, following no
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
        # Trigger: PostgreSQL text cannot hold NUL, SQLite can: the stores held different text
        # (issue 36). Outcome: a NUL past the binary sniff is U+FFFD in what either store indexes;
        # the file's hash, taken from the raw bytes, is unchanged.
        return raw.decode("utf-8-sig").replace("\x00", "\ufffd"), raw, None, info
    except UnicodeDecodeError as exc:
        return None, raw, f"skipped: not UTF-8 (byte {exc.start})", info


def register(store: Store, paths: Iterable[str], name: str | None = None,
             checkout: bool = False, scope_of: Callable[[Path], str] | None = None) -> list[tuple[int, int, Path]]:
    """(checkout id, source id, root) of each path registered. `name` names the source when exactly
    one path is given (ignored otherwise); `checkout`: that path may join the source already named
    so, as another checkout of it (engine/files/checkouts.register). `scope_of(path)`: the workspace a new
    source joins (ADR 0020; default personal)."""
    paths = list(paths)
    name = name if len(paths) == 1 else None
    registered = []
    for raw in paths:
        path = Path(raw).expanduser().resolve()
        if not path.exists():
            raise NotFoundError(f"{raw} does not exist")
        check_source_path(path)
        source_id = store.add_source(str(path), name, checkout, scope_of(path) if scope_of else "")
        checkout_id = next(c for c, s, root in store.checkouts() if s == source_id and root == str(path))
        registered.append((checkout_id, source_id, path))
    return registered


def local_checkouts(store: Store, report: SyncReport,
                    seen: Callable[[str], bool] | None = None) -> list[tuple[int, int, Path]]:
    """Every checkout whose folder is on this machine. A source none of whose checkouts is here is
    a problem line (its folder is missing); the checkouts of other machines are not. `seen(source
    path)`: only the sources it accepts (an agent's workspace), the others neither synced nor named."""
    by_source: dict[int, list[tuple[int, Path]]] = {}
    hidden = {sid for sid, path in store.sources() if not seen(path)} if seen is not None else set()
    for checkout_id, source_id, root in store.checkouts():
        if source_id in hidden:
            continue
        by_source.setdefault(source_id, []).append((checkout_id, Path(root)))
    targets = []
    for source_id, folders in by_source.items():
        here = [(c, root) for c, root in folders if root.exists()]
        if not here:
            for _, root in folders:
                report.problems.append((str(root), "source folder is missing; `vault-index remove` it"
                                        if len(folders) == 1 else "no checkout of this source is on this "
                                        "machine (checkouts of other machines are fine)"))
        targets += [(c, source_id, root) for c, root in here]
    return targets


def sync(
    store: Store,
    models: Models,
    paths: Iterable[str] | None = None,
    progress: Progress | None = None,
    embed: bool = True,
    name: str | None = None,
    checkout: bool = False,
    scope_of: Callable[[Path], str] | None = None,
    seen: Callable[[str], bool] | None = None,
    unseen: Callable[[str], bool] | None = None,
) -> SyncReport:
    """Register `paths` as sources (none: every checkout here, or of the sources `seen` accepts) and sync;
    `name` names a single path's source, which with `checkout` may be another checkout of it (ADR 0019).
    `unseen(note)`: a note the caller does not see (another workspace's, nested here): left uncounted."""
    started = time.perf_counter()
    report = SyncReport()
    paths = list(paths or [])
    targets = register(store, paths, name, checkout, scope_of) if paths else local_checkouts(store, report, seen)
    sizing = _Sizing(models, load=embed)  # keyword-only too: approximate sizing overran MiniLM's 256

    for checkout_id, source_id, root in targets:
        if not root.exists():
            report.problems.append((str(root), "source folder is missing; `vault-index remove` it"))
            continue
        unreadable: list[Path] = []
        real_root = Path(real_path(root))
        files = [str(root)] if root.is_file() else list(walk_note_paths(root, unreadable))
        # the checkout's copies as its last sync left them, in one query: the stat shortcut's record
        # of each note, and what this checkout had (a note of it the walk does not find is gone)
        copies = store.copy_states(checkout_id)
        known = {path for path, copy in copies.items() if not copy.gone}
        if unseen is not None:  # its own source indexes it (services/boundary.py)
            files, known = [p for p in files if not unseen(p)], {p for p in known if not unseen(p)}
        here = _Checkout(source_id, checkout_id, real_root, copies)
        ready: list[_Prepared] = []
        for done, path in enumerate(files, start=1):
            report.scanned += 1
            prepared = _guarded(store, path, report, _prepare, store, here, path, report, sizing)
            if prepared is not None:
                ready.append(prepared)
            if ready and (len(ready) >= FLUSH_NOTES or time.perf_counter() - ready[0].at >= FLUSH_SECONDS):
                _flush(store, ready, report)
            if progress:
                progress("scan", done, len(files))
        _flush(store, ready, report)
        for folder in unreadable:
            report.problems.append((str(folder), "cannot list this folder; its notes stay as last indexed"))
        kept = tuple(str(folder) + os.sep for folder in unreadable)
        for gone in known - set(files):
            if kept and gone.startswith(kept):
                continue  # not seen because unreadable, not because deleted
            if store.remove_copy(checkout_id, gone):  # only the version this checkout had (ADR 0019)
                store.record_problem(gone, None)
                report.removed += 1

    if report.indexed or report.removed:
        # only a changed or removed note can leave a vector no chunk uses; dropped before the
        # embedding, while the model may still be loading on its thread (SQLite frees the GIL)
        store.prune_vectors()
    if embed:
        _embed_missing(store, models, report, progress, written=report.indexed > 0,
                       sources={source_id for _, source_id, _ in targets})  # not other projects' pending chunks
    if report.indexed or report.removed or report.chunks_embedded:
        store.checkpoint()
    report.seconds = time.perf_counter() - started
    return report


class _Sizing:
    """How chunks are measured: the embedder's tokenizer and window, asked for at the first note
    that needs chunking (the shipped model's session starts loading then, on a thread). A sync
    that finds every note unchanged never loads the model (issue 26). A keyword-only pass uses the
    shipped tokenizer alone; with none (another model not loaded, or none) approximate tokens."""

    def __init__(self, models: Models | None, load: bool = True):
        self.models, self.load = models, load  # load False: a keyword-only pass loads no model
        self._got: tuple[Callable[[str], int], int] | None = None

    def __call__(self) -> tuple[Callable[[str], int], int]:
        if self._got is None:
            counter = self.models.token_counter(self.load) if self.models is not None else None
            self._got = counter or (approximate_tokens, 512)
        return self._got


@dataclass(frozen=True)
class _Checkout:
    """Where a note being synced lives: its source, the checkout, that checkout's real root, and
    its copies' last looks as the sync began (path -> checkouts.Copy; empty: ask per note)."""

    source_id: int
    checkout_id: int
    root: Path
    copies: dict = field(default_factory=dict, compare=False, hash=False)


def _guarded(store: Store, path: Path | str, report: SyncReport, step, *args):
    """`step(*args)`, with any failure of this one file reported instead of ending the sync.

    Trigger: an exception nobody foresaw in reading, parsing or chunking one note.
    Why: a sync of thousands of notes stopped at the first odd one, and every note after it
    was never indexed. Outcome: the file is a reported problem (its old rows, if any, stay);
    the sync goes on. Index-level failures (busy, read-only, a damaged database) still end it:
    they would fail every other file too.
    """
    try:
        return step(*args)
    except (VaultIndexError, *store.database_errors):
        raise
    except Exception as exc:  # noqa: BLE001 - one file's failure becomes its problem line
        detail = " ".join(str(exc).split())[:200] or "no detail"
        message = f"skipped: could not be indexed ({type(exc).__name__}: {detail}); the rest of the sync went on"
        report.problems.append((str(path), message))
        store.record_problem(str(path), message)
        return None


# A sync writes the notes it has read and parsed together, in one transaction, when this many
# are ready or the first of them waited this long (issue 26: one commit per note, three in fact,
# cost more than the inserts). The write lock is held only while they are written; each note
# is a savepoint of that transaction, so a failure still undoes that one note, whole.
FLUSH_NOTES, FLUSH_SECONDS = 256, 0.25
# A file modified this recently may change again within its mtime's granularity without its
# mtime or size changing: its copy is recorded with no mtime, so the next sync reads and hashes it
# instead of trusting the stat (git's "racily clean" entries). A whole-second mtime says the file
# system keeps seconds (FAT keeps two): RACY_SECONDS; finer ones tick in milliseconds at most.
RACY_SECONDS, RACY_FINE_SECONDS = 2.0, 0.05


# Trigger: one 713 KB note became 30,000 chunks and 12 minutes of embedding (issue 22). Why: a
# note at MAX_FILE_BYTES cut at the usual chunk size makes about 2,000 chunks; far more means
# tiny sections, each an embedding. Outcome: the first MAX_CHUNKS_PER_NOTE are indexed and the
# note is a reported problem (status lists it, as it lists files over the byte limit).
MAX_CHUNKS_PER_NOTE = 2_000


def capped(chunks: list) -> tuple[list, str | None]:
    """(the chunks kept, the problem line when some were dropped)."""
    if len(chunks) <= MAX_CHUNKS_PER_NOTE:
        return chunks, None
    return chunks[:MAX_CHUNKS_PER_NOTE], (f"only the first {MAX_CHUNKS_PER_NOTE:,} of its {len(chunks):,} chunks "
                                          "are indexed (the per-note cap); split the note to search the rest")


STALE_MESSAGE = ("not indexed from here: the index holds a newer version (by file mtime) from another "
                 "checkout of this source; pull to update this copy")
FIRST_LOOK_MESSAGE = ("not indexed from here: differs from the version another checkout indexed, and this "
                      "checkout had not seen the note before (a fresh clone's mtimes prove nothing); an edit "
                      "or pull here after this sync counts")


@dataclass
class _Prepared:
    """A note read, parsed and chunked, waiting for its write (_write)."""

    here: _Checkout
    key: str
    stat: os.stat_result
    digest: str
    text: str
    note: object
    chunks: list
    cut: str | None
    at: float  # when it was ready (perf_counter)


def _flush(store: Store, ready: list[_Prepared], report: SyncReport) -> None:
    """Write the prepared notes in one transaction (Store.batch), each a savepoint of it."""
    if not ready:
        return
    with store.batch():
        for prepared in ready:
            _guarded(store, prepared.key, report, _write, store, prepared, report)
    ready.clear()


def _prepare(store: Store, here: _Checkout, path: Path | str, report: SyncReport,
             sizing: _Sizing) -> _Prepared | None:
    """Read, parse and chunk one note when it needs writing; None when it does not.

    The rules of engine/files/checkouts.py: an unchanged copy does nothing; a changed one replaces the
    stored note when its checkout had the stored version, else only when it is newer; an older
    one is stale. Checked here first (no parse, no chunking for a stale copy), and again, for
    good, inside replace_file's write transaction. "Unchanged" is the stat (mtime and size) of
    the copy's last look, unless that look was racy (RACY_SECONDS): then the content decides.
    """
    key = str(path)
    try:
        stat = os.stat(path, follow_symlinks=False)  # a note swapped for a link: changed, read, refused
    except OSError as exc:
        report.problems.append((key, f"skipped: {exc.strerror or exc}"))
        return None
    # as it was when the sync began, and that look was indexed (a look another process recorded
    # since, at a different stat, is found by the next sync: rare, self-healing)
    unchanged = _same_look(here.copies.get(key), stat)
    mine = None if unchanged else store.copy_state(here.checkout_id, key)  # the current record decides
    if unchanged or _same_look(mine, stat):
        report.unchanged += 1
        return None
    text, raw, problem, read_stat = _read_note(here.root, Path(path))
    if problem:
        report.problems.append((key, problem))
        store.record_problem(key, problem)
        if mine and not mine.gone:
            store.remove_copy(here.checkout_id, key)  # no longer a note here: as if it had gone
        return None
    digest = hashlib.sha256(raw).hexdigest()
    stat = read_stat  # record the file that was read, not the one looked at before
    state = store.file_state(key)
    if state and checkouts.against_stored(state.mtime, state.hash, mine, stat.st_mtime, digest) != checkouts.WRITE:
        store.record_copy(here.checkout_id, key, _trusted_mtime(stat), stat.st_size, digest)
        _not_written(report, key, state.hash == digest, first_look=mine is None)
        return None
    note = parse_note(key, text)
    count, max_tokens = sizing()
    # Aliases join the title in the embedded context (and in the chunk hash: an alias edit re-embeds).
    chunks, cut = capped(chunk_note(replace(note, title=alias_title(note)), count, max_tokens))
    return _Prepared(here, key, stat, digest, text, note, chunks, cut, time.perf_counter())


def _same_look(copy, stat: os.stat_result) -> bool:
    """The recorded copy is this file as it is now: its stat says so (checkouts.Copy or None)."""
    return bool(copy) and not copy.gone and copy.mtime == stat.st_mtime and copy.size == stat.st_size


def _write(store: Store, p: _Prepared, report: SyncReport) -> None:
    key, here, note, stat = p.key, p.here, p.note, p.stat
    if not store.replace_file(here.source_id, key, (stat.st_mtime, stat.st_size), p.digest, note, p.chunks,
                              here.checkout_id):
        now = store.file_state(key)  # another indexer got there first, or a removal is newer
        _not_written(report, key, now is not None and now.hash == p.digest)
        return
    if _trusted_mtime(stat) is None:  # racy: the next sync hashes it (the note's own mtime is kept)
        store.record_copy(here.checkout_id, key, None, stat.st_size, p.digest)
    store.update_links(key, str(here.root), p.text, note)
    store.record_problem(key, "; ".join(m for m in (note.frontmatter_error, p.cut) if m) or None)
    if note.frontmatter_error:
        report.problems.append((key, note.frontmatter_error + " (body indexed)"))
    if p.cut:
        report.problems.append((key, p.cut))
    report.indexed += 1


def _trusted_mtime(stat: os.stat_result) -> float | None:
    """The mtime a later stat may be compared with; None when it is within the racy window of now
    (a later edit may leave the same mtime). One far off (a touch into the future, a clock
    elsewhere) is no race: an edit now gives the file a different mtime."""
    window = RACY_SECONDS if stat.st_mtime_ns % 1_000_000_000 == 0 else RACY_FINE_SECONDS
    return None if abs(time.time() - stat.st_mtime) < window else stat.st_mtime


def _not_written(report: SyncReport, key: str, same: bool, first_look: bool = False) -> None:
    if same:
        report.unchanged += 1
    else:
        report.stale += 1
        report.problems.append((key, FIRST_LOOK_MESSAGE if first_look else STALE_MESSAGE))


def _embed_missing(
    store: Store, models: Models, report: SyncReport, progress: Progress | None, path: str | None = None,
    written: bool = False, sources: set[int] | None = None,
) -> None:
    """Embed the chunks (of `path`, of the `sources` synced, or all) lacking a vector under the model's fingerprint.

    The fingerprint is known without loading the model (Models.embed_fingerprint): when no chunk
    lacks a vector the model is never loaded, and the report still says vectors are used. After
    a sync `written` notes, the listing itself answers (a probe first would scan the index twice),
    made while the model still loads on its thread.
    """
    early = models.embed_fingerprint(wait=False) if written else None
    listed = store.chunks_missing_vectors(early, sources=sources) if early else None
    if (fingerprint := models.embed_fingerprint()) is None:  # after a load in progress: None when it failed
        models.embedder()  # no model (turned off, or its setting cannot resolve): records why
        return
    if path is not None:
        if store.any_missing_vectors(fingerprint, path):
            _embed_pending(store, models, fingerprint, report, progress, path)
        else:
            report.vector_used = True
        return
    if written and (listed is None or fingerprint != early):
        listed = store.chunks_missing_vectors(fingerprint, sources=sources)
    elif not written and not store.any_missing_vectors(fingerprint, sources=sources):
        listed = []
    if listed == []:
        report.vector_used = True  # every chunk has its vector: nothing to load, no lock to wait for
        return
    with _embedding_turn(store, progress) as waited:
        _embed_pending(store, models, fingerprint, report, progress, None, None if waited else listed, sources)


def _embed_pending(store: Store, models: Models, fingerprint: str, report: SyncReport, progress: Progress | None,
                   path: str | None, listed: list | None = None, sources: set[int] | None = None) -> None:
    pending = store.chunks_missing_vectors(fingerprint, path, sources) if listed is None else listed
    if pending:
        embedder = models.embedder()
        if embedder is None:
            return  # the model cannot load here: keyword search only (models.embed_error says why)
        if embedder.fingerprint != fingerprint:  # the model's files changed since the fingerprint was taken
            pending = store.chunks_missing_vectors(embedder.fingerprint, path, sources)
    report.vector_used = True
    if not (total := len(pending)):
        return
    if progress:  # said before the first batch (and a model load), which may take 15 s
        progress("embed", 0, total)
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
    checkout_id, source_id = next((c, s) for c, s, r in store.checkouts() if r == str(root))
    if root.is_dir() and not is_note_path(key, Path(real_path(root))):  # key: source_of's real path
        return None
    report = SyncReport()
    if key.exists():
        here = _Checkout(source_id, checkout_id, Path(real_path(root)))
        prepared = _guarded(store, key, report, _prepare, store, here, key, report, _Sizing(models))
        if prepared is not None:
            _flush(store, [prepared], report)  # its rows, links, problem line and copy: one commit
    elif store.remove_copy(checkout_id, str(key)):
        report.removed += 1
    _embed_missing(store, models, report, None, str(key))
    return report


def is_indexable(store: Store, path: str) -> bool:
    """Whether `reindex_file(path)` would index it: inside a registered source and a note there.

    The edit hand-off (services/writes/edit_queue.py) asks this before it queues a path for the server,
    so that a path sent over the socket meets exactly the rules of the edit hook and full sync.
    """
    roots = [root for _, root in store.sources()]
    found = source_of(path, roots)
    if found is None:
        return False
    key, root = found
    return not root.is_dir() or is_note_path(Path(os.path.realpath(key)), Path(os.path.realpath(root)))
