"""A document lock every writer of a vault shares: one in the vault, one in the user's folder.

Trigger: document locks lived only in a per-user folder (`fileio.machine_locks_dir`), so two
writers of one vault with a different HOME, XDG_STATE_HOME or VAULT_LOCK_DIR locked in two places
and lost 1 append in 30 (issue 22). ADR 0006 puts the lock in the vault.
Why: the vault's `.vault-index/locks/` is what every writer of that vault root sees, whoever runs
it; the per-user folder is what one user's writers see whichever root (or alias of a note) they
started from. Taking both covers both, and a fixed order (vault first) cannot deadlock: nobody
holding the second waits for a first.
Outcome: `SharedDocumentLock(vault_locks_fd, machine_locks_fd, key, ...)`, used like DocumentLock.
"""

from __future__ import annotations

import time

from vault_index.engine import fileio


class SharedDocumentLock:
    """Both kernel locks of one document key, taken in order and released in reverse."""

    def __init__(self, folders: tuple[int, ...], key: str, holder: str, *, wait: float = fileio.LOCK_WAIT_S,
                 shown: str = "") -> None:
        self.wait = wait
        self._locks = [fileio.DocumentLock(fd, key, holder, wait=wait, shown=shown) for fd in folders]
        self._held: list[fileio.DocumentLock] = []

    def acquire(self) -> None:
        deadline = time.monotonic() + self.wait
        try:
            for lock in self._locks:
                lock.wait = max(0.0, deadline - time.monotonic())  # one wait for the whole set
                lock.acquire()
                self._held.append(lock)
        except BaseException:
            self.release()
            raise

    def refresh(self) -> None:
        for lock in self._held:
            lock.refresh()

    def release(self) -> None:
        while self._held:
            self._held.pop().release()

    def __enter__(self) -> SharedDocumentLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
