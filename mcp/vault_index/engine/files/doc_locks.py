"""Document locks: `DocumentLock`, one kernel lock per document, and `SharedDocumentLock`, the pair
every writer of a vault shares (one in the vault, one in the user's folder).

`DocumentLock` is a kernel lock (flock) on a lock file, keyed on the real parent folder's
(st_dev, st_ino) plus the case-folded name, so every alias of one document (symlinked folder,
`./`, `..`, letter case, another vault root) meets on the same lock.

Trigger: document locks lived only in a per-user folder (`machine_locks_dir`), so two
writers of one vault with a different HOME, XDG_STATE_HOME or VAULT_LOCK_DIR locked in two places
and lost 1 append in 30 (issue 22). ADR 0006 puts the lock in the vault.
Why: the vault's `.vault-index/locks/` is what every writer of that vault root sees, whoever runs
it; the per-user folder is what one user's writers see whichever root (or alias of a note) they
started from. Taking both covers both, and a fixed order (vault first) cannot deadlock: nobody
holding the second waits for a first.
Outcome: `SharedDocumentLock(vault_locks_fd, machine_locks_fd, key, ...)`, used like DocumentLock.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from contextlib import suppress
from pathlib import Path

from vault_index.engine.files.fileio import LOCK_WAIT_S
from vault_index.errors import WriteBusyError

try:
    import fcntl
except ImportError:  # Windows: no flock and no dir_fd; DocumentLock says so
    fcntl = None

# Trigger: a lock must show who holds it and until when, and long writes must say they are alive.
# Why: the kernel lock is released the instant its holder dies, so expiry never needs to free it;
# the lease is what a waiter reports ("held by X until T") and what tells a hung holder apart.
# Outcome: LEASE_S is written into the lock file on acquire and refreshed by long stages.
LEASE_S = 30.0
_POLL_FIRST_S = 0.002
_POLL_MAX_S = 0.05


class SharedDocumentLock:
    """Both kernel locks of one document key, taken in order and released in reverse."""

    def __init__(self, folders: tuple[int, ...], key: str, holder: str, *, wait: float = LOCK_WAIT_S,
                 shown: str = "") -> None:
        self.wait = wait
        self._locks = [DocumentLock(fd, key, holder, wait=wait, shown=shown) for fd in folders]
        self._held: list[DocumentLock] = []

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


def machine_locks_dir() -> int:
    """Descriptor of the one folder that holds every document lock of this user on this machine.

    Trigger: lock files under each vault's own `.vault-index/locks` let two writers that saw the
    same note through different vault roots (a script's bare path before and after `docs/` exists,
    `--vault` beside CLAUDE_PROJECT_DIR, a vault inside a project) lock in two folders.
    Why: that lost a lesson in 2 of 6 runs of two concurrent `learn.py` processes.
    Outcome: one folder (VAULT_LOCK_DIR, else $XDG_STATE_HOME or ~/.local/state, then
    vault-index/locks, mode 0700); the key (the real folder's st_dev/st_ino plus the case-folded
    name) already makes every alias of a note meet there, whichever root a writer started from.
    """
    chosen = os.environ.get("VAULT_LOCK_DIR")
    if chosen:
        folder = Path(chosen).expanduser()
    else:
        state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        folder = Path(state).expanduser() / "vault-index" / "locks"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))


def document_key(dir_fd: int, name: str) -> str:
    """The lock key of `name` in an open folder: the folder's (st_dev, st_ino) and the case-folded name."""
    info = os.fstat(dir_fd)
    return hashlib.sha256(f"{info.st_dev}:{info.st_ino}:{name.casefold()}".encode()).hexdigest()[:32]


class DocumentLock:
    """An exclusive, non-forgeable lock on one document, across threads and processes.

    The truth is a kernel lock (flock) on an open descriptor of `<locks>/<key>.lock`: only the
    process holding that descriptor holds the lock, and a killed holder releases it at once. The
    file also records a lease (holder, pid, host, expiry) that `refresh` extends; waiters only read
    it to say who is in the way. Lock files are kept (one per document ever written): removing
    them on release would let a waiter lock an unlinked inode while a newcomer locks a new one.
    """

    def __init__(self, locks_fd: int, key: str, holder: str, *, wait: float = LOCK_WAIT_S,
                 lease_s: float = LEASE_S, shown: str = "") -> None:
        self._locks_fd = locks_fd
        self.name = f"{key}.lock"
        self.holder = holder
        self.wait = wait
        self.lease_s = lease_s
        self.shown = shown or key
        self._fd: int | None = None

    def acquire(self) -> None:
        if fcntl is None:  # pragma: no cover - the dir_fd walk above is POSIX-only as well
            raise WriteBusyError("curated writes need a POSIX system (flock and dir_fd); use WSL on Windows")
        fd = os.open(self.name, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0),
                     0o644, dir_fd=self._locks_fd)
        deadline = time.monotonic() + self.wait
        pause = _POLL_FIRST_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    lease = self._read_lease(fd)
                    os.close(fd)
                    raise WriteBusyError(_busy_message(self.shown, self.wait, lease)) from None
                time.sleep(pause)
                pause = min(pause * 2, _POLL_MAX_S)
        self._fd = fd
        self.refresh()
        return None

    def refresh(self) -> None:
        """Extend the lease; long stages (a slow hook, a big commit) call this as they go."""
        if self._fd is None:
            return
        lease = {"holder": self.holder, "pid": os.getpid(), "host": socket.gethostname(),
                 "expires": time.time() + self.lease_s}
        data = json.dumps(lease).encode()
        with suppress(OSError):  # the lease is advisory; a full disk must not fail the lock
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, data, 0)

    def release(self) -> None:
        if self._fd is None:
            return
        with suppress(OSError):
            os.ftruncate(self._fd, 0)
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> DocumentLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    @staticmethod
    def _read_lease(fd: int) -> dict | None:
        try:
            raw = os.pread(fd, 4096, 0)
            lease = json.loads(raw) if raw else None
        except (OSError, ValueError):
            return None
        return lease if isinstance(lease, dict) else None


def _busy_message(shown: str, wait: float, lease: dict | None) -> str:
    who = ""
    if lease and isinstance(lease.get("expires"), (int, float)):
        left = lease["expires"] - time.time()
        state = f"its lease runs {left:.0f} s more" if left > 0 else f"its lease ran out {-left:.0f} s ago (hung?)"
        who = f" by {lease.get('holder', '?')} (pid {lease.get('pid', '?')}); {state}"
    return f"{shown} is being written{who}; waited {wait:g} s - try again in a moment"
