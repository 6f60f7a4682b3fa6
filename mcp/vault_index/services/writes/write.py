"""The write service: the one path every curated write takes (notes, lessons, ADRs, handoffs, graph).

    authorize -> lock -> check base version -> transform hooks -> validate -> validate hooks
    -> replace if unchanged on disk -> re-index -> git commit with provenance -> release

`_pipeline` is that sentence; `write` and `edit` (notes) and `update_file` (any curated .md file
whose new text is computed from its old text under the lock) run through it; `move` takes the same
stages for several files at once (services/writes/move.py). Outcomes that are not
bugs (denied, locked, stale, invalid, refused) come back as values. Once the file is replaced the
answer is `written`: a failure of a later stage (index, graph, commit) is a notice on it, and a
retry with the same request id returns the first outcome without writing again.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
import time
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from vault_index.engine.files import doc_locks, fileio, guarded_replace
from vault_index.engine.files.doc_locks import SharedDocumentLock
from vault_index.errors import UnsafePathError, UsageError, WriteBusyError
from vault_index.services.access import agent_memory
from vault_index.services.vault.vault import Vault, not_visible
from vault_index.services.writes import journal, provenance, request_ids, safe_text
from vault_index.services.writes.write_types import (  # noqa: F401 - callers use these as write.X
    EDITS,
    MAX_REQUEST_ID_CHARS,
    NOTE_SUFFIX,
    Caller,
    Compose,
    NoteView,
    Op,
    StageTimes,
    Status,
    Target,
    WriteOutcome,
    WriteRequest,
    local_identity,
)

if TYPE_CHECKING:
    from vault_index.services.writes.edit_ops import EditRequest
    from vault_index.services.writes.write_types import MoveRequest

class WriteService:
    """Holds the vault, the re-index callback and the clock; every write method runs `_pipeline`."""

    def __init__(self, vault: Vault, reindex: Callable[[Path], object] | None = None, *,
                 clock: Callable[[], dt.date] = dt.date.today, lock_wait: float = fileio.LOCK_WAIT_S,
                 visible: Callable[[Path], bool] | None = None) -> None:
        self.vault = vault
        self.reindex = reindex
        self.visible = visible  # the notes the caller's workspace sees (services/boundary.seen); None: all
        self.clock = clock
        self.lock_wait = lock_wait
        self.requests = journal.RequestLog(vault.root)  # answers, the writes in flight, rejections
        self.last_times = StageTimes()

    # --- public API --------------------------------------------------------------------------

    def read(self, caller: Caller, path: str) -> NoteView | WriteOutcome:
        from vault_index.services.writes import notes

        return notes.read_view(self, caller, path)

    def write(self, caller: Caller, request: WriteRequest) -> WriteOutcome:
        """create, replace, append, promote or deprecate one note (services/writes/notes.py composes the text)."""
        from vault_index.services.writes import notes

        if request.op not in ("create", "replace", "append", "promote", "deprecate"):
            return WriteOutcome("invalid", str(request.path), f"unknown operation {request.op!r}",
                                problems=({"field": "op", "rule": "enum", "message": "create, replace, append, "
                                           "promote or deprecate"},))
        action = "promote" if request.op == "promote" else "write"
        why = request.reason or f"{request.op} via vault-index"
        outcome = self._pipeline(caller, request.path, request.op, request.request_id, why, action=action,
                                 digest=request_ids.digest(request),
                                 compose=lambda target, old, version, alive: notes.compose(
                                     self, caller, request, target, old, version, alive))
        return notes.annotate(self, request, outcome)

    def edit(self, caller: Caller, request: EditRequest) -> WriteOutcome:
        """prepend, replace_section or find_replace in one note (services/writes/edit_ops.py composes the text)."""
        from vault_index.services.writes.edit_ops import compose
        return self._pipeline(caller, request.path, request.op, request.request_id, request.reason or
                              f"{request.op} via vault-index", action="write", digest=request_ids.digest(request),
                              compose=partial(compose, self, caller, request))

    def move(self, caller: Caller, request: MoveRequest) -> WriteOutcome:
        """Rename a note and rewrite the links to it in the same commit (services/writes/move.py)."""
        from vault_index.services.writes.move import move
        return move(self, caller, request)

    def update_file(self, caller: Caller, path: str, change: Callable[[str | None], str], *, why: str,
                    request_id: str | None = None, collection_check: bool = True, exclusive: bool = False,
                    followups: Sequence[tuple[str, Callable[[Path], object]]] = (),
                    result: Callable[[], dict | None] | None = None, operation: str = "update",
                    commit: bool = True) -> WriteOutcome:
        """The generic pipeline for curated files that are not schema'd notes (lessons.md, ADRs, handoffs).

        `change(old_text or None) -> new_text` runs under the lock; it may raise a VaultIndexError to
        refuse (nothing is written, the error propagates). `exclusive`: only create, never replace
        (an existing file answers `stale`). `followups`: late stages (e.g. linking the graph) run after
        the replace; their failures become notices. `result()` is stored with the outcome.
        `commit` False: never committed, whatever the vault says (session snapshots and handoffs).
        `collection_check` False skips the role check (the local person's own project files).
        """

        def compose(target: Target, old: str | None, version: str | None, alive) -> str | WriteOutcome:
            if exclusive and old is not None:
                return WriteOutcome("stale", target.rel, f"{target.rel} already exists; it is never replaced",
                                    version=version)
            return change(old)

        return self._pipeline(caller, path, operation, request_id, why, action="write" if collection_check else None,
                              compose=compose, followups=followups, result=result, commit=commit)

    def history(self, caller: Caller, path: str) -> list[dict] | WriteOutcome:
        target, refusal = self.authorize(caller, path, "read")
        if refusal:
            return refusal
        if provenance.repo_root(self.vault.root) is None:
            return []
        try:
            return provenance.history(self.vault.root, target.rel)
        except provenance.ProvenanceError as exc:
            return WriteOutcome("failed", target.rel, f"cannot read the history: {exc}")

    # --- authorize ---------------------------------------------------------------------------

    def authorize(self, caller: Caller, path: str | Path, action: str | None) -> tuple[Target | None,
                                                                                        WriteOutcome | None]:
        """The target of `path` if `caller` may `action` there; else the refusal.

        Read access is checked first on the path as written, before touching the file system, so
        a caller who may not see a collection gets the same answer whether the note exists or not.
        """
        shown = str(path)
        grants = self.vault.grants(caller.role)
        lexical = _lexical_parts(self.vault.root, path)
        lexical_collection = lexical[0] if len(lexical) > 1 else ""
        if action and not grants.can("read", lexical_collection):
            return None, WriteOutcome("denied", shown, not_visible(shown))
        if action != "read":  # every write, whatever the role: another agent's memory is only read here
            written = Path(os.path.expanduser(path))
            if why := agent_memory.refusal(written if written.is_absolute() else self.vault.root / written, shown):
                return None, WriteOutcome("refused", shown, why)
        try:
            parts = fileio.real_parts(self.vault.root, path, self.vault.served_as)
        except UnsafePathError as exc:
            return None, WriteOutcome("refused", shown, str(exc))
        rel = "/".join(parts)
        collection = parts[0] if len(parts) > 1 else ""
        if action and not grants.can("read", collection):
            return None, WriteOutcome("denied", shown, not_visible(shown))
        for part in parts:
            if problem := fileio.part_problem(part):
                return None, WriteOutcome("refused", rel, f"{rel}: {problem}")
        if not parts[-1].casefold().endswith(NOTE_SUFFIX):
            return None, WriteOutcome("refused", rel, f"{rel}: only markdown notes ({NOTE_SUFFIX}) are written")
        if action in ("write", "promote") and not grants.can(action, collection):
            verb = "promote notes" if action == "promote" else "write"
            return None, WriteOutcome("denied", rel, f"{rel}: role {caller.role or 'guest'} may not {verb} in "
                                                     f"collection {collection or '(root)'!r}")
        return Target(rel, parts, collection), None

    # --- the pipeline ------------------------------------------------------------------------

    def _pipeline(self, caller: Caller, path: str, operation: str, request_id: str | None, why: str, *,
                  digest: str | None = None,
                  action: str | None, compose: Compose,
                  followups: Sequence[tuple[str, Callable[[Path], object]]] = (),
                  result: Callable[[], dict | None] | None = None, commit: bool = True) -> WriteOutcome:
        """authorize -> lock -> version check and compose (hooks, validation) -> atomic replace -> re-index
        -> follow-ups -> git commit -> release. The lock is released in `finally`."""
        times = self.last_times = StageTimes()
        started = time.perf_counter()
        if request_id is not None and (not request_id.strip() or len(request_id) > MAX_REQUEST_ID_CHARS
                                       or any(c in request_id for c in "\r\n\x00")):
            return WriteOutcome("invalid", str(path), "request_id must be one line of at most "
                                f"{MAX_REQUEST_ID_CHARS} characters")
        if unsafe := safe_text.unsafe_write(caller, path, why):
            return unsafe
        target, refusal = self.authorize(caller, path, action)
        if refusal:
            return refusal
        started = times.mark("authorize", started)
        self.recover()
        creates = operation not in ("replace", "append", "promote", "deprecate", *EDITS)  # those need the note
        try:
            folder = fileio.open_folder(self.vault.root, target.parts[:-1], create=creates)
        except FileNotFoundError:
            return WriteOutcome("not_found", target.rel, not_visible(target.rel))
        except UnsafePathError as exc:
            return WriteOutcome("refused", target.rel, f"{target.rel}: {exc}")
        except OSError as exc:
            return _failed(target, exc)
        locks: list[int] = []
        try:
            # The vault's own lock folder (every writer of this vault) and the user's (every root of this user)
            locks.append(fileio.ensure_state_dir(self.vault.root, self.vault.config_path is None))
            locks.append(doc_locks.machine_locks_dir())
            lock = SharedDocumentLock(tuple(locks), doc_locks.document_key(folder, target.parts[-1]), caller.identity,
                                      wait=self.lock_wait, shown=target.rel)
            try:
                lock.acquire()
            except WriteBusyError as exc:
                return WriteOutcome("locked", target.rel, str(exc))
            try:
                started = times.mark("lock", started)
                return self._locked(caller, target, folder, operation, request_id, why, compose, followups,
                                    result, lock, times, started, commit, digest)
            finally:
                lock.release()
        except UnsafePathError as exc:
            return WriteOutcome("refused", target.rel, f"{target.rel}: {exc}")
        except OSError as exc:  # before the replace (late stages catch their own): nothing changed
            return _failed(target, exc)
        finally:
            os.close(folder)
            for fd in locks:
                os.close(fd)

    def _locked(self, caller, target, folder, operation, request_id, why, compose, followups, result, lock,
                times, started, wants_commit=True, digest=None) -> WriteOutcome:
        from vault_index.services.writes import recovery

        held = {target.rel: (folder, target.parts[-1])}
        if request_id and (first := recovery.retried(self, caller, request_id, target, operation, digest,
                                                     held)) is not None:
            return first
        recovery.settle_path(self, target.rel, held)  # a dead writer's change here is finished (and committed) first
        old, info = fileio.read_current(folder, target.parts[-1], target.rel)
        try:
            old_text = None if old is None else old.decode("utf-8")
        except UnicodeDecodeError:
            return WriteOutcome("invalid", target.rel, f"{target.rel} is not UTF-8 text; fix its encoding first",
                                version=fileio.file_version(old))
        version = fileio.file_version(old)
        # Trigger: on a note saved with a UTF-8 byte order mark, the frontmatter was not found and a
        # prepend pushed it into the body (issue 36). Outcome: the operations see the text as the
        # index reads it (utf-8-sig), and the mark is written back where it was.
        bom = "\ufeff" if old_text and old_text.startswith("\ufeff") else ""
        composed = compose(target, old_text[len(bom):] if old_text is not None else None, version, lock.refresh)
        started = times.mark("compose", started)
        if isinstance(composed, WriteOutcome):
            if composed.status == "stale":
                self._record_rejection(target, composed, caller, request_id)
            return composed
        data = (bom + composed).encode("utf-8")
        if data == old:
            return WriteOutcome("unchanged", target.rel, f"{target.rel} already holds that text", version=version)
        request_id = request_id or uuid.uuid4().hex
        new_version = fileio.file_version(data)
        extra = result() if result else None
        intent = journal.Intent(self._request_key(caller, request_id), request_id, operation, (target.rel,),
                                {target.rel: [version, new_version]}, (caller.identity, caller.role, caller.agent),
                                why, self._commits(wants_commit), digest, extra)
        try:  # on disk before the file changes: a retry after a crash finishes this write, never repeats it
            self.requests.begin(intent)
        except Exception as exc:  # noqa: BLE001 - without the record the write could not be made exactly once
            return WriteOutcome("failed", target.rel, f"{target.rel} was not written: the write journal could not "
                                f"record it ({exc}); the file is unchanged")
        journal.checkpoint("intent")
        lock.refresh()
        try:
            # only if the file still holds `old`: a person's save meanwhile wins (engine/files/guarded_replace.py)
            changed = guarded_replace.replace_unchanged(folder, target.parts[-1], data,
                                                        stat.S_IMODE(info.st_mode) if info else None, old)
        except OSError as exc:
            self._drop(intent)
            return _failed(target, exc)
        if changed is not None:
            from vault_index.services.writes.write_conflicts import lost_race

            self._drop(intent)
            outcome = lost_race(target, folder, data, version, changed)
            self._record_rejection(target, outcome, caller, request_id)
            return outcome
        journal.checkpoint("replaced")
        started = times.mark("replace", started)
        notices: list[str] = []
        real = self.vault.root.joinpath(*target.parts)
        if self.reindex is not None:
            self._late("re-indexed", lambda: self.reindex(real), notices)
            started = times.mark("reindex", started)
        for name, step in followups:
            self._late(name, lambda step=step: step(real), notices)
        journal.checkpoint("reindexed")
        if followups:  # a stage that did not run has no time
            started = times.mark("followups", started)
        extra = result() if result else None
        lock.refresh()
        commit = self._commit(caller, target, operation, request_id, why, notices) if wants_commit else None
        journal.checkpoint("committed")
        if commit is not None:  # timed only when there is one: `commit: null` beside a commit's time misleads
            times.mark("commit", started)
        outcome = WriteOutcome("written", target.rel, f"{target.rel} written", version=new_version,
                               notices=tuple(notices), commit=commit, result=extra)
        started = time.perf_counter()
        outcome = recovery.close(self, intent, outcome)
        times.mark("record", started)
        return outcome

    def _commits(self, wanted: bool) -> bool:
        """Whether this write will commit: asked for, the vault commits, and it is a git repository."""
        return wanted and self.vault.commit_wanted and provenance.repo_root(self.vault.root) is not None

    def _drop(self, intent: journal.Intent) -> None:
        try:
            self.requests.drop(intent.key)
        except Exception:  # noqa: BLE001, S110 - the next write finds the file unchanged and drops the row
            pass

    def recover(self, everything: bool = False) -> int:
        """Finish the writes of this vault that were cut short (their writers died); how many.
        `everything` (a server opening the vault): every row; else rows never begun again, and rows
        whose commit failed once a minute at most (journal.RETRY_UNCOMMITTED_S)."""
        from vault_index.services.writes import recovery

        return recovery.sweep(self, None if everything else time.time() - journal.RETRY_UNCOMMITTED_S)

    # --- late stages -------------------------------------------------------------------------

    @staticmethod
    def _late(name: str, step: Callable[[], object], notices: list[str]) -> None:
        """Run a stage after the file was replaced: its failure is a notice, never an error."""
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - a late stage must never turn a written file into an error
            notices.append(f"written, but not {name}: {exc}")

    def _commit(self, caller, target, operation, request_id, why, notices) -> str | None:
        if not self.vault.commit_wanted:
            return None
        if provenance.repo_root(self.vault.root) is None:
            notices.append("written, but not committed: the vault is not a git repository (git init it, or set "
                           "git.commit: false)")
            return None
        try:
            locks = fileio.ensure_state_dir(self.vault.root, self.vault.config_path is None)
            try:
                # Trigger: git keeps one index.lock per repository. Why: two writers on different notes
                # would fail each other's commit. Outcome: commits take one vault-wide lock, briefly.
                with doc_locks.DocumentLock(locks, "git-commit", caller.identity, wait=max(self.lock_wait, 30.0),
                                         shown="the git repository"):
                    return provenance.commit(self.vault.root, target.rel, identity=caller.identity,
                                             agent=caller.agent, role=caller.role, request_id=request_id,
                                             operation=operation, why=why)
            finally:
                os.close(locks)
        except Exception as exc:  # noqa: BLE001 - the note is written: say what failed, never report a failure
            notices.append(f"written, but not committed: {exc}")
            return None

    @staticmethod
    def _request_key(caller: Caller, request_id: str) -> str:
        """Request ids are the caller's own: another caller reusing one gets no one else's outcome."""
        return f"{caller.identity}\x1f{request_id}"

    def _answered(self, caller: Caller, request_id: str) -> tuple[WriteOutcome, str | None] | None:
        """(the first answer to this caller's request id, the digest of the request it answered)."""
        try:
            stored = self.requests.get(self._request_key(caller, request_id))
        except Exception:  # noqa: BLE001 - an unreadable log means we cannot tell; write as asked
            return None
        if stored is None:
            return None
        digest = stored.pop(request_ids.DIGEST_KEY, None)
        first = WriteOutcome.from_dict(stored)
        return WriteOutcome(first.status, first.path, f"{first.message} (request {request_id} was already "
                            "answered; nothing written again)", first.version, first.problems, first.notices,
                            first.commit, first.result), digest

    def _record_rejection(self, target: Target, outcome: WriteOutcome, caller: Caller, request_id) -> None:
        try:
            self.requests.reject(target.rel, outcome.status, request_id, caller.identity,
                                 outcome.result.get("base_version") if outcome.result else None, outcome.version)
        except Exception:  # noqa: BLE001, S110 - the rejection is still answered; the record is best effort
            pass


def _failed(target: Target, exc: OSError) -> WriteOutcome:
    return WriteOutcome("failed", target.rel, f"{target.rel} was not written ({exc.strerror or exc}); the file is "
                        "unchanged - free space or fix permissions, then retry")


def _lexical_parts(root: Path, path: str | Path) -> tuple[str, ...]:
    """The parts of `path` below `root` as written (no file system access): the first read check."""
    raw = Path(os.path.normpath(path))
    if raw.is_absolute():
        try:
            raw = raw.relative_to(root)
        except ValueError:  # the root spelled another way (a symlinked home, /private/tmp): resolve
            try:
                return fileio.real_parts(root, raw)
            except UnsafePathError:
                return ()
    return raw.parts


def update_store(path: str | Path, change: Callable[[str], str], *, wait: float = fileio.LOCK_WAIT_S) -> bool:
    """The graph store's write (memory.jsonl, not a note, often outside any vault): the same primitives.

    Lock (a `.NAME.lock` beside the file, kernel-held), read the regular file (never a FIFO or a
    hardlink), `change(old_text) -> new_text`, atomic replace. Returns whether the file changed.
    A symlink named as the store is followed once (dotfile setups link it); the real file is then
    opened without following.
    """
    real = Path(os.path.realpath(Path(path).expanduser()))
    real.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(real.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        with doc_locks.DocumentLock(folder, f".{real.name}", "vault-index", wait=wait, shown=str(real)):
            old, info = fileio.read_current(folder, real.name, str(real))
            text = "" if old is None else old.decode("utf-8")
            new = change(text)
            if new == text:
                return False
            fileio.atomic_replace(folder, real.name, new.encode("utf-8"), stat.S_IMODE(info.st_mode) if info else None)
            return True
    finally:
        os.close(folder)


def writer_for_file(path: str | Path) -> WriteService:
    """A write service for a bare file path (a script's --file, a library call without an App).

    The vault root is the project folder when the path lies in it (so docs/lessons.md as a symlink
    out of the project is caught), else the file's own folder as written (not resolved). No
    re-index: callers with an index go through App.writer. Folders that do not exist yet are
created below the nearest existing one.
    """
    from vault_index.config import project_dir

    absolute = Path(os.path.abspath(Path(path).expanduser()))
    project = project_dir()
    root = project if absolute.is_relative_to(project) and absolute != project else absolute.parent
    while not root.is_dir() and root != root.parent:  # folders still to be made are made inside
        root = root.parent
    return WriteService(Vault.open(root))


def require_ok(outcome: WriteOutcome) -> WriteOutcome:
    """The outcome if it is written or unchanged; else the matching exception (for library callers)."""
    from vault_index.errors import NotFoundError, WriteFailedError

    if outcome.ok:
        return outcome
    detail = "; ".join(p["message"] for p in outcome.problems)
    message = f"{outcome.message}: {detail}" if detail else outcome.message
    error = {"refused": UnsafePathError, "denied": NotFoundError, "not_found": NotFoundError,
             "locked": WriteBusyError, "failed": WriteFailedError}.get(outcome.status, UsageError)
    raise error(message)
