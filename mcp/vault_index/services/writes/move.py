"""Move (rename) a note, and rewrite every link to it, in one write of the one write service.

    authorize both paths -> find the notes whose links name it -> lock the note, its new name and
    every one of those notes (in key order) -> check the base version and that the new name is free
    -> rename -> rewrite the links -> record -> re-index each file -> one git commit -> release

The lock, the version rule, the record of request ids, the re-index and the commit with its
provenance trailers are the write service's own (services/writes/write.py); this module only holds the
part a single-file write has no room for: several files changed as one. Which links name the note
is engine/parsing/link_rewrite.py (the index's resolution rule, before and after the move). A move refuses
when the new name is taken by another note; a case-only rename (`a.md` to `A.md`) works on a
case-insensitive file system too (the "existing" file is the note itself). A failure after the
rename (a linking note that cannot be replaced, the index, the commit) is a notice on `written`.
"""

from __future__ import annotations

import errno
import os
import stat
import uuid
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from vault_index.engine.files import fileio
from vault_index.engine.files.guarded_replace import read_only
from vault_index.engine.parsing import link_rewrite
from vault_index.errors import UnsafePathError, WriteBusyError
from vault_index.services.access import agent_memory
from vault_index.services.vault.vault import not_visible
from vault_index.services.writes import journal, many_files
from vault_index.services.writes.write_types import MoveRequest

if TYPE_CHECKING:
    from vault_index.services.writes.write import WriteService
    from vault_index.services.writes.write_types import Caller, Target, WriteOutcome

MAX_SCANNED_BYTES = 2_000_000  # the write limit of a note; a bigger file is not a note we rewrite


def move(service: WriteService, caller: Caller, request: MoveRequest) -> WriteOutcome:
    """Rename `request.path` to `request.new_path` and rewrite the links to it (see the module docstring)."""
    from vault_index.services.writes.write_types import MAX_REQUEST_ID_CHARS, StageTimes, WriteOutcome

    service.last_times = StageTimes()  # a move's own stages are not timed; no earlier write's times shown
    rid = request.request_id
    if rid is not None and (not rid.strip() or len(rid) > MAX_REQUEST_ID_CHARS or any(c in rid for c in "\r\n\x00")):
        return WriteOutcome("invalid", request.path, f"request_id must be one line of at most {MAX_REQUEST_ID_CHARS} "
                            "characters")
    from vault_index.services.writes import safe_text

    for path in (request.path, request.new_path):  # as _pipeline: no control text reaches git or a name
        if unsafe := safe_text.unsafe_write(caller, path, request.reason or ""):
            return unsafe
    source, refusal = service.authorize(caller, request.path, "write")
    if refusal:
        return refusal
    target, refusal = service.authorize(caller, request.new_path, "write")
    if refusal:
        return refusal
    service.recover()  # moves and writes cut short by a crash are finished first (services/writes/recovery.py)
    if request.request_id and (answered := _answer_of(service, caller, request)) is not None:
        return answered  # a retry after the move: the first answer, before the note is looked for
    if source.rel == target.rel:
        return WriteOutcome("unchanged", source.rel, f"{source.rel} is already at that path")
    root = service.vault.root
    # Trigger: a move in project A rewrote links inside project B's hidden notes and named them in its
    # answer, and a role got denied or written depending on whether a note it cannot read linked here.
    # Why: every note of the folder was scanned. Outcome: only the notes the caller sees (its role's
    # read grants, its workspace: services/boundary.seen) are read, resolved and rewritten.
    grants = service.vault.grants(caller.role)
    texts = {rel: text for rel, text in _scan(root).items()
             if grants.can("read", rel.split("/")[0] if "/" in rel else "")
             and (service.visible is None or service.visible(root / rel))}
    if source.rel not in texts:  # a note the walk skips (a templates folder) can still be moved
        data = _read_path(root, source.rel)
        if data is None:
            return WriteOutcome("not_found", source.rel, not_visible(source.rel))
        texts[source.rel] = data.decode("utf-8", errors="replace")
    # another agent's memory (a Cline memory bank in the project) is searched, never written: its
    # links to the note stay as they are, and the outcome says so
    linkers = sorted({r.path for r in link_rewrite.plan(texts, source.rel, target.rel)} - {target.rel})
    kept = {rel: f"links in {rel} not rewritten: it is another agent's memory (read-only); it still names "
                 f"{source.rel}" for rel in linkers if agent_memory.kind_of(root / rel)}
    linkers = [rel for rel in linkers if rel not in kept]
    for rel in linkers:  # every note whose links change must be one the caller may change
        if not service.vault.grants(caller.role).can("write", rel.split("/")[0] if "/" in rel else ""):
            return WriteOutcome("denied", source.rel, f"moving {source.rel} would rewrite links in notes your "
                                f"role {caller.role or 'guest'} may not change; nothing was moved")
    made = _missing_folders(root, target)
    outcome = _move_locked(service, caller, request, source, target, texts, linkers, kept)
    if not outcome.ok:  # a refused move leaves no folder behind for the name it did not take
        for folder in made:
            with suppress(OSError):
                folder.rmdir()
    return outcome


def _move_locked(service, caller, request, source: Target, target: Target, texts: dict,
                 linkers: list[str], kept: dict[str, str]) -> WriteOutcome:
    from vault_index.services.writes.write_types import WriteOutcome

    root = service.vault.root
    with ExitStack() as stack:
        try:
            folders = _open_folders(stack, root, [source, target, *(_target(rel) for rel in linkers)])
            locked = many_files.lock_all(stack, service, caller.identity, folders)
        except WriteBusyError as exc:
            return WriteOutcome("locked", source.rel, str(exc))
        except UnsafePathError as exc:
            return WriteOutcome("refused", source.rel, f"{source.rel}: {exc}")
        except FileNotFoundError:
            return WriteOutcome("not_found", source.rel, not_visible(source.rel))
        except OSError as exc:
            return WriteOutcome("failed", source.rel, f"nothing was moved ({exc.strerror or exc})")
        return _locked(service, caller, request, source, target, folders, texts, linkers, locked, kept)


def _locked(service, caller, request, source: Target, target: Target, folders: dict, texts: dict,
            linkers: list[str], lock, kept: dict[str, str]) -> WriteOutcome:
    from vault_index.services.writes.write_types import WriteOutcome

    if request.request_id and (answered := service._answered(caller, request.request_id)) is not None:
        return _retried(request, answered)
    try:
        current = {rel: _read(folders, rel) for rel in [source.rel, *linkers]}
    except UnsafePathError as exc:
        return WriteOutcome("refused", source.rel, f"nothing was moved: {exc}")
    old_data = current[source.rel]
    if old_data is None:
        return WriteOutcome("not_found", source.rel, not_visible(source.rel))
    version = fileio.file_version(old_data[0])
    if request.base_version and request.base_version != version:
        outcome = WriteOutcome("stale", source.rel, f"{source.rel} changed since version {request.base_version} "
                               f"(now {version}); read it again and redo the move", version=version,
                               result={"base_version": request.base_version})
        service._record_rejection(source, outcome, caller, request.request_id)
        return outcome
    taken, info = _exists(folders, target)
    if taken and not _same_file(info, old_data[1]):
        return WriteOutcome("refused", source.rel, f"{target.rel} already exists; move to a free name (or move "
                            "that note first)", version=version)
    try:
        for rel, found in current.items():
            if found is not None:
                texts[rel] = found[0].decode("utf-8")
    except UnicodeDecodeError:
        return WriteOutcome("invalid", source.rel, "a note that links here is not UTF-8 text; nothing was moved")
    rewrites = {r.path: r for r in link_rewrite.plan(texts, source.rel, target.rel)}
    notices = [*kept.values(), *(f"links in {rel} not rewritten: it gained a link to the note during the move; "
                                 "fix it by hand" for rel in rewrites if rel not in (*linkers, *kept, target.rel))]
    moved_text = _with_collection(service, rewrites[target.rel].text if target.rel in rewrites else texts[source.rel],
                                  target)
    changing = [rel for rel in linkers if rel in rewrites]
    if moved_text.encode("utf-8") != old_data[0]:
        changing.append(source.rel)
    if locked_rel := next((rel for rel in changing if current.get(rel) and read_only(current[rel][1])), None):
        return WriteOutcome("refused", source.rel, f"nothing was moved: {locked_rel} is read-only (its permissions "
                            "allow no writes) and the move would change it; make it writable (chmod u+w) first")
    intent = _intent(service, caller, request, source, target, old_data[0], moved_text, current, rewrites, linkers)
    try:  # on disk before the rename: a move cut short is finished by its retry or the next write
        service.requests.begin(intent)
    except Exception as exc:  # noqa: BLE001 - without the record a crash would leave links broken for good
        return WriteOutcome("failed", source.rel, f"{source.rel} was not moved: the write journal could not record "
                            f"it ({exc}); nothing changed")
    journal.checkpoint("intent")
    lock.refresh()
    try:
        _rename(folders, source, target, taken)
    except OSError as exc:
        service._drop(intent)
        return WriteOutcome("failed", source.rel, f"{source.rel} was not moved ({exc.strerror or exc}); nothing "
                            "changed")
    journal.checkpoint("renamed")
    changed = [source.rel, target.rel]
    rewritten = {}
    if moved_text.encode("utf-8") != old_data[0]:  # its own relative links (and a vault's collection field)
        try:
            if _replace(folders, target.rel, moved_text.encode("utf-8"), old_data):
                rewritten = {target.rel: rewrites[target.rel].links} if target.rel in rewrites else {}
            else:
                notices.append("moved, but its own links were not rewritten: it changed during the move (that "
                               "edit is kept); fix them by hand")
        except OSError as exc:
            notices.append(f"moved, but its own links were not rewritten ({exc.strerror or exc})")
    for rel in linkers:
        if rel not in rewrites:
            continue
        try:
            if _replace(folders, rel, rewrites[rel].text.encode("utf-8"), current[rel]):
                changed.append(rel)
                rewritten[rel] = rewrites[rel].links
            else:
                notices.append(f"links in {rel} not rewritten: it changed during the move (that edit is kept); "
                               "fix them by hand")
        except OSError as exc:
            notices.append(f"moved, but the links in {rel} were not rewritten ({exc.strerror or exc})")
    journal.checkpoint("rewritten")
    return _finish(service, caller, intent, changed, rewritten, notices, lock)


def _intent(service, caller, request, source, target, old: bytes, moved_text: str, current: dict, rewrites: dict,
            linkers: list[str]) -> journal.Intent:
    """The move's journal row: every file it changes, its version before and after, and the new text of
    each one it rewrites (a later process finishes the links from these)."""
    from vault_index.services.writes import request_ids

    moved = moved_text.encode("utf-8")
    versions = {source.rel: [fileio.file_version(old), None],
                target.rel: [fileio.file_version(old), fileio.file_version(moved)]}
    texts = {target.rel: moved_text} if moved != old else {}
    for rel in linkers:
        if rel in rewrites and current.get(rel) is not None:
            versions[rel] = [fileio.file_version(current[rel][0]), fileio.file_version(rewrites[rel].text.encode())]
            texts[rel] = rewrites[rel].text
    planned = {rel: rewrites[rel].links for rel in texts if rel in rewrites}
    request_id = request.request_id or uuid.uuid4().hex
    return journal.Intent(service._request_key(caller, request_id), request_id, "move", tuple(versions), versions,
                          (caller.identity, caller.role, caller.agent),
                          request.reason or f"move {source.rel} to {target.rel} via vault-index",
                          service._commits(True), request_ids.digest(request),
                          {"from": source.rel, "to": target.rel, "links_rewritten": planned}, texts)


def _answer_of(service, caller, request) -> WriteOutcome | None:
    """A retry's answer: the stored one, or its first try's, finished now from the journal (cut short
    after the rename: the links are rewritten then); None when this move is to be made."""
    from vault_index.services.writes import recovery, request_ids
    from vault_index.services.writes.write_types import WriteOutcome

    if (answered := service._answered(caller, request.request_id)) is not None:
        return _retried(request, answered)
    try:
        pending = service.requests.intent(service._request_key(caller, request.request_id))
    except Exception:  # noqa: BLE001 - unreadable: the move's own record refuses it (nothing moved)
        return None
    if pending is None:
        return None
    if pending.digest != request_ids.digest(request):
        return request_ids.conflict(request.request_id, request.path, WriteOutcome(pending.operation,
                                                                                   pending.paths[0], ""))
    finished = recovery.finish_own(service, pending, {})
    if finished is recovery.BUSY:
        return WriteOutcome("locked", request.path, f"request {request.request_id} is still being written; retry "
                            "in a moment")
    return finished


def _retried(request, answered) -> WriteOutcome:
    """The first answer to this request id, if it answered this very move; else a conflict."""
    from vault_index.services.writes import request_ids

    first, first_digest = answered
    if first_digest != request_ids.digest(request):  # the id, reused for another request (or a write's)
        return request_ids.conflict(request.request_id, request.path, first)
    return first


def _finish(service, caller, intent: journal.Intent, changed, rewritten, notices, lock) -> WriteOutcome:
    from vault_index.services.writes import recovery
    from vault_index.services.writes.write_types import WriteOutcome

    source, target = intent.paths[:2]
    new_version = fileio.file_version(_read_path(service.vault.root, target))
    result = {"from": source, "to": target, "links_rewritten": rewritten}
    message = f"{source} moved to {target}; {sum(rewritten.values())} link(s) rewritten in {len(rewritten)} note(s)"
    if service.reindex is not None:
        for rel in dict.fromkeys(changed):
            service._late(f"re-indexed ({rel})", lambda rel=rel: service.reindex(service.vault.root / rel), notices)
    journal.checkpoint("reindexed")
    lock.refresh()
    commit = many_files.commit_paths(service, caller, changed, intent.request_id, intent.why, notices,
                          subject=f"move {source} -> {target}")
    journal.checkpoint("committed")
    outcome = WriteOutcome("written", target, message, version=new_version, notices=tuple(notices),
                           commit=commit, result=result)
    return recovery.close(service, intent, outcome)


# --- files ----------------------------------------------------------------------------------------


def _scan(root: Path) -> dict[str, str]:
    """Every note of the vault by path, as text (the candidates whose links may name the note)."""
    from vault_index.services.vault.walk import note_paths

    texts = {}
    for rel in note_paths(root):
        try:  # O_NONBLOCK and a regular-file check: a FIFO named like a note hung every move
            fd = os.open(root / rel, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            data = os.read(fd, MAX_SCANNED_BYTES + 1)
        except OSError:
            continue
        finally:
            os.close(fd)
        if len(data) <= MAX_SCANNED_BYTES:
            texts[rel] = data.decode("utf-8", errors="replace")
    return texts


def _missing_folders(root: Path, target: Target) -> list[Path]:
    """The new name's folders that do not exist yet, deepest first (a refused move removes them)."""
    missing = []
    for depth in range(len(target.parts) - 1, 0, -1):
        folder = root.joinpath(*target.parts[:depth])
        if folder.exists():
            break
        missing.append(folder)
    return missing


def _target(rel: str) -> Target:
    from vault_index.services.writes.write_types import Target

    parts = tuple(rel.split("/"))
    return Target(rel, parts, parts[0] if len(parts) > 1 else "")


def _open_folders(stack: ExitStack, root: Path, targets: list[Target]) -> dict[str, tuple[int, str]]:
    """rel -> (folder descriptor, file name); the new name's folders are made when missing."""
    folders: dict[str, tuple[int, str]] = {}
    for index, item in enumerate(targets):
        fd = fileio.open_folder(root, item.parts[:-1], create=index == 1)
        stack.callback(os.close, fd)
        folders[item.rel] = (fd, item.parts[-1])
    return folders


def _read(folders: dict, rel: str) -> tuple[bytes, os.stat_result] | None:
    fd, name = folders[rel]
    data, info = fileio.read_current(fd, name, rel)
    return None if data is None else (data, info)


def _read_path(root: Path, rel: str) -> bytes | None:
    parts = tuple(rel.split("/"))
    try:
        fd = fileio.open_folder(root, parts[:-1])
    except OSError:
        return None
    try:
        return fileio.read_current(fd, parts[-1], rel)[0]
    except (OSError, UnsafePathError):
        return None
    finally:
        os.close(fd)


def _exists(folders: dict, target: Target) -> tuple[bool, os.stat_result | None]:
    fd, name = folders[target.rel]
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False, None
    return True, info


def _same_file(a: os.stat_result | None, b: os.stat_result) -> bool:
    return a is not None and (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _rename(folders: dict, source: Target, target: Target, case_only: bool) -> None:
    """The note under its new name. A hard link then an unlink never replaces a file that appeared
    at the new name meanwhile (a person's editor does not take our lock); a case-only rename on a
    case-insensitive file system, or a file system without hard links, uses rename."""
    src_fd, src_name = folders[source.rel]
    dst_fd, dst_name = folders[target.rel]
    if not case_only and _rename_noreplace(src_fd, src_name, dst_fd, dst_name):
        for fd in {src_fd, dst_fd}:
            with suppress(OSError):
                os.fsync(fd)
        return
    if not case_only:
        try:
            os.link(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
        except OSError as exc:
            if exc.errno == errno.EEXIST:
                raise
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
        else:
            try:
                os.unlink(src_name, dir_fd=src_fd)
            except OSError:  # a second name would stay and refuse every later write: take it back
                with suppress(OSError):
                    os.unlink(dst_name, dir_fd=dst_fd)
                raise
            with suppress(OSError):
                os.fsync(src_fd)
            return
    os.rename(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    with suppress(OSError):
        os.fsync(dst_fd)


def _rename_noreplace(src_fd: int, src_name: str, dst_fd: int, dst_name: str) -> bool:
    """One atomic rename that never replaces a file at the new name (Linux renameat2); False where
    the flag is unknown, so the caller links then unlinks. A link then an unlink could remove a
    person's save that an editor renamed over the old name in between (a hostile audit did)."""
    from vault_index.engine.files.guarded_replace import rename_noreplace

    try:
        return rename_noreplace(src_fd, src_name, dst_fd, dst_name)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            return False
        raise


def _replace(folders: dict, rel: str, data: bytes, read: tuple[bytes, os.stat_result]) -> bool:
    """Put `data` at `rel` if it still holds the bytes read under the lock (a person's editor takes no
    lock: guarded_replace); False, the person's file left alone, when it changed."""
    from vault_index.engine.files.guarded_replace import replace_unchanged

    fd, name = folders[rel]
    expected, info = read
    return replace_unchanged(fd, name, data, stat.S_IMODE(info.st_mode), expected) is None


def _with_collection(service: WriteService, text: str, target: Target) -> str:
    """In a vault, a moved note's `collection:` field follows its folder (a note's collection is where
    it lies); only that one line changes. Plain folders have no collections: the text is kept."""
    if service.vault.config_path is None or not target.collection:
        return text
    from vault_index.services.writes.edit_ops import split_text

    head, body = split_text(text)
    lines = head.split("\n")
    for index, line in enumerate(lines[1:-2], start=1):
        if line.startswith("collection:"):
            ending = "\r" if line.endswith("\r") else ""
            lines[index] = f"collection: {target.collection}{ending}"
    return "\n".join(lines) + body
