"""File primitives for the write path: a replace that is never half done, and a per-file lock.

Every curated file we write (lessons, decision records, later the vault's notes) goes through
`atomic_write` while holding `file_lock`, so a reader sees the old file or the new one, never a
mix, and two writers cannot lose each other's change. `unsafe_char` is the one rule for text that
must stay on its line in such a file.
"""

from __future__ import annotations

import os
import secrets
import stat
import time
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from vault_index.errors import VaultIndexError

try:
    import fcntl
except ImportError:  # Windows: the lock-file fallback below
    fcntl = None

LOCK_WAIT_S = 10.0  # how long a writer waits for another writer before giving up
# Trigger: the fallback lock is a file, which a killed process leaves behind.
# Why: a writer holds it for milliseconds, so one a minute old belongs to a dead process.
# Outcome: older lock files are taken over instead of blocking every later write.
LOCK_STALE_S = 60.0
_POLL_S = 0.02


class FileBusyError(VaultIndexError):
    """Another writer held the file's lock for longer than the wait."""

    exit_code = 6


def atomic_write(path: str | Path, text: str) -> None:
    """Replace `path` with `text` (UTF-8): temp file in the same folder, fsync, os.replace.

    The file keeps its permission bits; a new file gets the usual umask-based ones. A symlink
    is written through, so the link stays a link. On any failure the temp file is removed and
    the old file is untouched.
    """
    target = Path(os.path.realpath(path))
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else None
    temp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    _fsync_folder(target.parent)


ZERO_WIDTH_JOINER = "\u200d"


def unsafe_char(text: str, allow: str = "") -> str | None:
    """The first character of `text` that can break or hide in a line, as 'U+2028'; None if none.

    Trigger: str.splitlines() also breaks at U+000B, U+000C, U+001C-U+001E, U+0085, U+2028 and
    U+2029, not only at "\n" and "\r".
    Why: a lesson holding U+2028 was written as one line and read back as two, forging a heading.
    Outcome: one-line fields refuse every control character (Cc) and line or paragraph separator
    (Zl, Zp); a multi-line field passes the few it keeps in `allow` (e.g. "\n\t").
    Also refused: format characters (Cf: bidi overrides, zero-width and invisible tag characters,
    which hide text from the person while an agent still reads it; the zero-width joiner inside
    emoji is kept) and lone surrogates (Cs), which cannot be written as UTF-8.
    """
    for char in text:
        if char in allow or char == ZERO_WIDTH_JOINER:
            continue
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            return f"U+{ord(char):04X}"
    return None


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (POSIX only; Windows cannot open a folder)."""
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def lock_path(path: str | Path) -> Path:
    path = Path(os.path.realpath(path))
    return path.with_name(f".{path.name}.lock")


@contextmanager
def file_lock(path: str | Path, wait: float = LOCK_WAIT_S, stale_after: float = LOCK_STALE_S) -> Iterator[None]:
    """Exclusive lock on `path` across threads and processes, held for the `with` block.

    The lock lives in a hidden `.NAME.lock` beside the file (the file itself may not exist yet)
    and is removed on release, so no lock files pile up in the project. Raises FileBusyError
    after `wait` seconds.
    """
    lock = lock_path(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait
    if fcntl is not None:
        fd = _flock(lock, deadline)
        try:
            yield
        finally:
            with suppress(FileNotFoundError):
                os.unlink(lock)  # while still held: the next writer re-checks the inode
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
    else:
        _exclusive_file(lock, deadline, stale_after)
        try:
            yield
        finally:
            with suppress(FileNotFoundError):
                os.unlink(lock)


def _flock(lock: Path, deadline: float) -> int:
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            _wait_or_give_up(lock, deadline)
            continue
        # Trigger: the holder unlinks the lock file on release.
        # Why: a waiter may have opened the old file and then locked a file nobody else sees.
        # Outcome: the lock counts only if our descriptor is still the file at that path.
        try:
            current = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            current = False
        if current:
            return fd
        os.close(fd)


def _exclusive_file(lock: Path, deadline: float, stale_after: float) -> None:
    while True:
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            try:
                age = time.time() - os.stat(lock).st_mtime
            except FileNotFoundError:
                continue
            if age > stale_after:
                with suppress(FileNotFoundError):
                    os.unlink(lock)
                continue
            _wait_or_give_up(lock, deadline)
            continue
        with os.fdopen(fd, "w") as handle:
            handle.write(f"{os.getpid()}\n")
        return


def _wait_or_give_up(lock: Path, deadline: float) -> None:
    if time.monotonic() >= deadline:
        raise FileBusyError(
            f"another writer is holding {lock.name}; try again in a moment "
            f"(if no writer is running, delete {lock})"
        )
    time.sleep(_POLL_S)
