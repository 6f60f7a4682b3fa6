"""Locks and the commit of one write that changes several files (a move, and finishing one cut short).

services/writes/move.py and services/writes/recovery.py both take every file's document lock at once
and make one commit of every path; this module holds those two steps below both of them.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from typing import TYPE_CHECKING

from vault_index.engine.files import doc_locks, fileio
from vault_index.engine.files.doc_locks import SharedDocumentLock
from vault_index.errors import VaultIndexError
from vault_index.services.writes import provenance

if TYPE_CHECKING:
    from vault_index.services.writes.write import WriteService
    from vault_index.services.writes.write_types import Caller


def lock_all(stack: ExitStack, service: WriteService, holder: str, folders: dict, *,
             wait: float | None = None) -> _Leases:
    """The document lock of every file, taken in key order (two moves never wait on each other in a
    circle) and once per key (a case-only rename names one document twice); the leases are returned
    for their refresh. `wait` 0: only when free (services/writes/recovery.py, finishing others' rows)."""
    # the vault's own lock folder (every writer of the vault) and the user's, as WriteService._pipeline
    vault_fd = fileio.ensure_state_dir(service.vault.root, service.vault.config_path is None)
    stack.callback(os.close, vault_fd)
    locks_fd = doc_locks.machine_locks_dir()
    stack.callback(os.close, locks_fd)
    keys = {}
    for rel, (fd, name) in folders.items():
        keys.setdefault(doc_locks.document_key(fd, name), rel)
    taken = []
    for key in sorted(keys):
        lock = SharedDocumentLock((vault_fd, locks_fd), key, holder, wait=service.lock_wait if wait is None else wait,
                                  shown=keys[key])
        lock.acquire()
        stack.callback(lock.release)
        taken.append(lock)
    return _Leases(taken)


class _Leases:
    """Refreshes every held lock's lease at once (the single-file pipeline refreshes its one)."""

    def __init__(self, locks: list[SharedDocumentLock]) -> None:
        self.locks = locks

    def refresh(self) -> None:
        for lock in self.locks:
            lock.refresh()


def commit_paths(service: WriteService, caller: Caller, rels: list[str], request_id: str, why: str,
                 notices: list[str], *, subject: str) -> str | None:
    """One commit of every changed path (the old name's removal too), with the write's trailers.

    Mirrors `WriteService._commit` for several files: same vault-wide commit lock, same identity and
    trailers (services/writes/provenance.py), `--only` so what a person staged stays out of it.
    """
    vault = service.vault
    if not vault.commit_wanted:
        return None
    repo = provenance.repo_root(vault.root)
    if repo is None:
        notices.append("written, but not committed: the vault is not a git repository (git init it, or set "
                       "git.commit: false)")
        return None
    try:
        locks = fileio.ensure_state_dir(vault.root, vault.config_path is None)
        try:
            with doc_locks.DocumentLock(locks, "git-commit", caller.identity, wait=max(service.lock_wait, 30.0),
                                     shown="the git repository"):
                return provenance.commit_many(vault.root, rels, identity=caller.identity, agent=caller.agent,
                                              role=caller.role, request_id=request_id, why=why, subject=subject)
        finally:
            os.close(locks)
    except (VaultIndexError, OSError) as exc:
        notices.append(f"written, but not committed: {exc}")
        return None
