"""Finish a write cut short, from its journal row (services/writes/journal.py), or learn it never landed.

    lock every file the row names -> read them -> landed? re-index, commit once, answer `written`
                                               -> never landed? drop the row (the retry writes anew)
                                               -> changed since by someone else? answer what is known

Who runs it: a retry with the same request id (before anything else), the next write of a note a
row names (before its own change: its commit must not carry another's), every write for rows whose
writer died (locks taken without waiting: a live writer holds them), and a server opening the vault.

What "landed" means, per file: the version on disk is the row's `after` (the new text is there);
its `before` means it never changed; anything else means someone changed it since, and then only
git can tell whether the write had been committed (`provenance.request_commit`). A move landed when
its note is at the new name: the links the row lists are then rewritten if they still hold the text
the move read, so no link is left naming the old name. A commit is made once: a row cut short after
its commit finds that commit by its request-id trailer and answers with it.
"""

from __future__ import annotations

import os
import stat
from contextlib import ExitStack
from dataclasses import replace
from typing import TYPE_CHECKING

from vault_index.engine.files import fileio
from vault_index.errors import UnsafePathError, WriteBusyError
from vault_index.services.writes import journal, provenance, request_ids
from vault_index.services.writes.write_types import Caller, Target, WriteOutcome

if TYPE_CHECKING:
    from vault_index.services.writes.journal import Intent
    from vault_index.services.writes.write import WriteService

BUSY = object()  # another writer holds a file of the row: it is alive, and finishes the row itself
SWEEP_LIMIT = 8  # rows finished by one write at most (a commit each): a write is never held long by others'


def finish_own(service: WriteService, intent: Intent, held: dict) -> WriteOutcome | None | object:
    """The row of a retried request, with the locks of `held` (rel -> (folder fd, name)) taken by the caller."""
    return _recover(service, intent, held, service.lock_wait)


def settle_path(service: WriteService, rel: str, held: dict) -> None:
    """Finish the rows of writers that died on `rel` (the caller holds its lock): before this write's change."""
    try:
        rows = service.requests.pending()
    except Exception:  # noqa: BLE001 - an unreadable journal: the write's own record refuses it if it must
        return
    for intent in rows:
        if rel in intent.paths:
            _recover(service, intent, held, 0.0)


def sweep(service: WriteService, uncommitted_before: float | None) -> int:
    """Finish rows whose writer died (their locks are free); how many were settled. Never raises."""
    settled = 0
    try:
        for intent in service.requests.pending(uncommitted_before)[:SWEEP_LIMIT]:
            settled += _recover(service, intent, {}, 0.0) is not BUSY
    except Exception:  # noqa: BLE001, S110 - a sweep is housekeeping: the write at hand goes on
        pass
    return settled


def _recover(service: WriteService, intent: Intent, held: dict, wait: float) -> WriteOutcome | None | object:
    """BUSY when a file of the row is locked; None when the write never landed (row dropped);
    else the answer, stored under the request id (a commit that failed keeps the row for later)."""
    root = service.vault.root
    with ExitStack() as stack:
        folders = dict(held)
        try:
            for rel in intent.paths:
                if rel not in folders:
                    folders[rel] = _open(stack, root, rel)
            _lock(stack, service, intent, folders, held, wait)
        except (WriteBusyError, OSError):  # held by a live writer, or out of descriptors: later
            return BUSY
        except UnsafePathError as exc:  # a link or a FIFO where a note was: never written through
            return _answer(service, intent, WriteOutcome("failed", intent.paths[0], f"request {intent.request_id} "
                                                         f"was cut short and cannot be finished: {exc}"))
        again = service.requests.intent(intent.key)
        if again is None or again.at != intent.at:  # finished (or begun again) while we waited
            return BUSY
        if intent.operation == "move":
            return _finish_move(service, intent, folders)
        return _finish_write(service, intent, folders)


def _open(stack: ExitStack, root, rel: str) -> tuple[int | None, str]:
    parts = tuple(rel.split("/"))
    try:
        fd = fileio.open_folder(root, parts[:-1])
    except FileNotFoundError:
        return None, parts[-1]  # no folder: no file there to lock or to read
    stack.callback(os.close, fd)
    return fd, parts[-1]


def _lock(stack: ExitStack, service: WriteService, intent: Intent, folders: dict, held: dict, wait: float) -> None:
    from vault_index.services.writes.many_files import lock_all

    lockable = {rel: folder for rel, folder in folders.items() if rel not in held and folder[0] is not None}
    if lockable:
        lock_all(stack, service, intent.caller[0], lockable, wait=wait)


def _read(folders: dict, rel: str) -> bytes | None:
    fd, name = folders[rel]
    return None if fd is None else fileio.read_current(fd, name, rel)[0]


def _finish_write(service: WriteService, intent: Intent, folders: dict) -> WriteOutcome | None:
    rel = intent.paths[0]
    before, after = intent.versions[rel]
    now = fileio.file_version(_read(folders, rel))
    if now == before:  # the replace never happened: nothing to finish; a retry writes it
        service.requests.drop(intent.key)
        return None
    caller = Caller(*intent.caller)
    notices = [f"request {intent.request_id} was cut short; this finished it"]
    if now == after:
        _reindex(service, [rel], notices)
        commit = _commit_once(service, caller, intent, [rel], notices)
        return _answer(service, intent, WriteOutcome("written", rel, f"{rel} written", version=after,
                                                     notices=tuple(notices), commit=commit, result=intent.result))
    _reindex(service, [rel], notices)  # someone changed it since: the index follows what is there
    commit = _found(service, intent, rel)
    if commit is not None:
        return _answer(service, intent, WriteOutcome("written", rel, f"{rel} written (it has changed since)",
                                                     version=after, commit=commit, result=intent.result))
    return _answer(service, intent, WriteOutcome(
        "stale", rel, f"request {intent.request_id} was cut short and {rel} has changed since (now {now}); whether "
        "its change landed cannot be told - read the note and redo the change if it is missing", version=now))


def _finish_move(service: WriteService, intent: Intent, folders: dict) -> WriteOutcome | None:
    source, target, *linkers = intent.paths
    src, dst = folders[source], folders[target]
    src_info, dst_info = _stat(src), _stat(dst)
    if src_info is not None and dst_info is not None and _same(src_info, dst_info) and src_info.st_nlink > 1:
        os.unlink(src[1], dir_fd=src[0])  # cut short between the hard link and the unlink: finish the rename
        src_info = None
    if src_info is not None or dst_info is None:  # never renamed (or the note is at neither name)
        if src_info is None:
            return _answer(service, intent, WriteOutcome("not_found", source, f"request {intent.request_id} was "
                                                         f"cut short; {source} is at neither name now"))
        service.requests.drop(intent.key)
        return None
    notices = [f"request {intent.request_id} was cut short after the rename; this finished it"]
    changed = [source, target]
    for rel in [target, *linkers]:
        before, after = intent.versions[rel]
        fd, name = folders[rel]
        data, info = (None, None) if fd is None else fileio.read_current(fd, name, rel)
        now = fileio.file_version(data)
        if rel in intent.texts and now == before:
            from vault_index.engine.files.guarded_replace import replace_unchanged

            done = replace_unchanged(fd, name, intent.texts[rel].encode("utf-8"), stat.S_IMODE(info.st_mode),
                                     data) is None
            now = after if done else now
        if now == after:
            changed.append(rel)
        elif rel != target or rel in intent.texts:
            notices.append(f"links in {rel} not rewritten: it changed after the move was cut short; fix them by hand")
    caller = Caller(*intent.caller)
    _reindex(service, list(dict.fromkeys(changed)), notices)
    commit = _commit_once(service, caller, intent, list(dict.fromkeys(changed)), notices)
    result = intent.result or {}
    message = (f"{source} moved to {target}; {sum(result.get('links_rewritten', {}).values())} link(s) rewritten in "
               f"{len(result.get('links_rewritten', {}))} note(s)")
    version = fileio.file_version(_read(folders, target))
    return _answer(service, intent, WriteOutcome("written", target, message, version=version, notices=tuple(notices),
                                                 commit=commit, result=intent.result))


def _stat(folder: tuple[int | None, str]) -> os.stat_result | None:
    fd, name = folder
    if fd is None:
        return None
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _reindex(service: WriteService, rels: list[str], notices: list[str]) -> None:
    if service.reindex is None:
        return
    for rel in rels:
        service._late(f"re-indexed ({rel})", lambda rel=rel: service.reindex(service.vault.root / rel), notices)


def _found(service: WriteService, intent: Intent, rel: str) -> str | None:
    repo = provenance.repo_root(service.vault.root)
    if not intent.commit or repo is None:
        return None
    try:
        return provenance.request_commit(service.vault.root, rel, intent.request_id, intent.caller[0])
    except provenance.ProvenanceError:
        return None


def _commit_once(service: WriteService, caller: Caller, intent: Intent, rels: list[str],
                 notices: list[str]) -> str | None:
    """The commit of this request: the one already made (cut short after it), else a new one."""
    if not intent.commit:
        return None
    found = _found(service, intent, rels[1] if intent.operation == "move" else rels[0])
    if found is not None:
        return found
    if intent.operation == "move":
        from vault_index.services.writes.many_files import commit_paths

        source, target = intent.paths[:2]
        return commit_paths(service, caller, rels, intent.request_id, intent.why, notices,
                            subject=f"move {source} -> {target}")
    parts = tuple(rels[0].split("/"))
    target = Target(rels[0], parts, parts[0] if len(parts) > 1 else "")
    return service._commit(caller, target, intent.operation, intent.request_id, intent.why, notices)


def close(service: WriteService, intent: Intent, outcome: WriteOutcome) -> WriteOutcome:
    """Store the answer and close the journal row at once. A `written` whose commit failed keeps its
    row (marked): a retry with the same request id, or the next start, commits it."""
    try:
        if outcome.status == "written" and intent.commit and outcome.commit is None:
            service.requests.mark(intent.key, journal.UNCOMMITTED)
            return replace(outcome, notices=(*outcome.notices, f"a retry with request_id {intent.request_id} "
                                             "commits it once git works again"))
        stored = outcome.as_dict() if intent.digest is None else {**outcome.as_dict(),
                                                                  request_ids.DIGEST_KEY: intent.digest}
        service.requests.finish(intent.key, outcome.path, stored)
    except Exception as exc:  # noqa: BLE001 - the write happened; say the retry guard is missing
        return replace(outcome, notices=(*outcome.notices, f"written, but its answer was not recorded: {exc}"))
    return outcome


_answer = close


def retried(service: WriteService, caller: Caller, request_id: str, target: Target, operation: str,
            digest: str | None, held: dict) -> WriteOutcome | None:
    """The answer a retry gets: the stored one, or that of its row finished now (the first try was
    cut short); None when this request is to be written (new, or its first try never landed)."""
    answered = service._answered(caller, request_id)
    if answered is None:
        try:
            pending = service.requests.intent(service._request_key(caller, request_id))
        except Exception:  # noqa: BLE001 - unreadable: the write's own record refuses it (nothing written)
            return None
        if pending is None:
            return None
        if digest and pending.digest and digest != pending.digest:
            return request_ids.conflict(request_id, target.rel, WriteOutcome(pending.operation, pending.paths[0], ""))
        finished = finish_own(service, pending, held if target.rel in pending.paths else {})
        if finished is BUSY:
            return WriteOutcome("locked", target.rel, f"request {request_id} is still being written; retry in a moment")
        if finished is None:
            return None
        answered = finished, pending.digest
    first, first_digest = answered
    if digest and first_digest and digest != first_digest:  # the id, reused for another request
        return request_ids.conflict(request_id, target.rel, first)
    # Trigger: the id already answered a write of another file. Why: reporting that outcome
    # would tell the caller this note was written when it was not. Outcome: refused. An ADR
    # retry is the exception: it numbers itself afresh, so its retry names the next number.
    if first.path != target.rel and operation != "adr":
        return WriteOutcome("invalid", target.rel, f"request_id {request_id} was already used for "
                            f"{first.path}; give each write its own request_id")
    return first
