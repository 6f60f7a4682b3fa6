"""Replace a note only if it still holds what the writer read: a person's save is never overwritten.

Trigger: an editor save made while a write was in flight was silently overwritten, and the agent
was told "written" (issue 22): nothing re-checked the file just before the replace.
Why: the document lock binds vault-index's writers only; a person's editor takes no lock.
Outcome, on Linux (renameat2 through ctypes):

1. the new text goes to a hidden temp file in the same folder (fsynced), as `atomic_replace` does;
2. `RENAME_EXCHANGE` swaps it with the note in one step; the file that was swapped out is then
   opened under a write lease (granted only when no one else has that file open, so no in-place
   writer can still change it) and compared with what was read;
3. the same: the swapped-out file is removed, the write stands. Different (the person saved in
   between, by rename or in place): it is swapped back, so the person's file is at the note's name
   again, and the caller answers stale. A newer save met while swapping back is put at the name too.
   A note that did not exist is created with `RENAME_NOREPLACE` (a file made meanwhile wins).

Elsewhere (macOS, a file system without renameat2 or leases) the file is re-read and compared
immediately before a plain rename; a save landing between that check and the rename (a few
microseconds) is still lost there. ADR 0021 measures both.
"""

from __future__ import annotations

import ctypes
import errno
import os
import secrets
import stat
import sys
import time
from contextlib import suppress
from dataclasses import dataclass

from vault_index.engine.files import fileio
from vault_index.errors import ReadOnlyNoteError

_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2
_LEASE_TRIES = 50  # x 1 ms: an in-place save in progress has this long to close its file
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class Changed:
    """The note no longer holds what was read; `current` is what it holds now (None: it is gone)."""

    current: bytes | None


def _renameat2():
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # glibc before 2.28, musl without it
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_RENAMEAT2 = _renameat2()


def exchange_supported() -> bool:
    return _RENAMEAT2 is not None


def _rename2(dir_fd: int, src: str, dst: str, flags: int, dst_dir_fd: int | None = None) -> None:
    target_fd = dir_fd if dst_dir_fd is None else dst_dir_fd
    if _RENAMEAT2(dir_fd, os.fsencode(src), target_fd, os.fsencode(dst), flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), dst)


def rename_noreplace(src_fd: int, src: str, dst_fd: int, dst: str) -> bool:
    """Rename src to dst (folder descriptors) unless dst exists (FileExistsError); False where
    renameat2 is missing. Raises OSError(EINVAL) where the file system lacks the flag."""
    if _RENAMEAT2 is None:
        return False
    _rename2(src_fd, src, dst, _RENAME_NOREPLACE, dst_fd)
    return True


def replace_unchanged(dir_fd: int, name: str, data: bytes, mode: int | None, expected: bytes | None) -> Changed | None:
    """Put `data` at `name` only if it still holds `expected` (None: does not exist). None when done.

    Raises ReadOnlyNoteError, before anything is written, when the note is read-only (`refuse_read_only`)."""
    if expected is not None:
        refuse_read_only(dir_fd, name)
    fileio._sweep_temps(dir_fd, name)
    temp = f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    _write_temp(dir_fd, temp, data, mode)
    try:
        if _RENAMEAT2 is None:
            return _replace_rechecked(dir_fd, temp, name, expected)
        try:
            return _replace_exchanged(dir_fd, temp, name, data, expected)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                raise
            return _replace_rechecked(dir_fd, temp, name, expected)  # a file system without the flags
    finally:
        with suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        with suppress(OSError):
            os.fsync(dir_fd)


def read_only(info: os.stat_result) -> bool:
    """Whether this user may not write the file, as its permission bits say (the owner's, the group's
    or the others' bits, whichever apply); an editor refuses to save such a file unless forced."""
    if not hasattr(os, "geteuid"):  # Windows: the read-only attribute clears every write bit
        return not info.st_mode & stat.S_IWUSR
    if info.st_uid == os.geteuid():
        return not info.st_mode & stat.S_IWUSR
    if info.st_gid == os.getegid() or info.st_gid in os.getgroups():
        return not info.st_mode & stat.S_IWGRP
    return not info.st_mode & stat.S_IWOTH


def refuse_read_only(dir_fd: int, name: str, shown: str | None = None) -> None:
    """ReadOnlyNoteError when `name` in the folder is read-only for this user.

    Trigger: a note the person made read-only (`chmod a-w`) was still edited: the atomic replace
    renames a new file over it, which the folder's permission allows. Why: read-only is the person
    saying "do not change this", and every editor honours it. Outcome: every write refuses it, even
    as root (whose writes no permission stops), and says how to allow it."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if read_only(info):
        raise ReadOnlyNoteError(f"{shown or 'the note'} is read-only (its permissions allow no writes); "
                                "vault-index changes it only once you make it writable again (chmod u+w)")


def _write_temp(dir_fd: int, temp: str, data: bytes, mode: int | None) -> None:
    fd = os.open(temp, _TEMP_FLAGS, 0o666, dir_fd=dir_fd)
    try:
        fileio._write_all(fd, data)
        if mode is not None:
            os.fchmod(fd, mode)
        fileio._sync(fd)
    except BaseException:
        os.close(fd)
        with suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    os.close(fd)


def _current(dir_fd: int, name: str) -> bytes | None:
    return fileio.read_current(dir_fd, name)[0]


def _replace_rechecked(dir_fd: int, temp: str, name: str, expected: bytes | None) -> Changed | None:
    """The portable way: compare just before the rename (a save in between is the remaining window)."""
    now = _current(dir_fd, name)
    if now != expected:
        return Changed(now)
    os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    return None


def _replace_exchanged(dir_fd: int, temp: str, name: str, data: bytes, expected: bytes | None) -> Changed | None:
    if expected is None:
        try:
            _rename2(dir_fd, temp, name, _RENAME_NOREPLACE)
        except FileExistsError:
            return Changed(_current(dir_fd, name))
        return None
    try:
        _rename2(dir_fd, temp, name, _RENAME_EXCHANGE)
    except FileNotFoundError:  # the person removed (or is renaming over) the note
        return Changed(_current(dir_fd, name))
    # `temp` now names the file that was at `name`: the person's, if they saved meanwhile
    try:
        settled = _settled_bytes(dir_fd, temp)
    except BaseException:
        _swap_back_or_keep(dir_fd, temp, name)  # the caller removes `temp`: it must not hold their file
        raise
    if settled == expected:
        return None
    _rename2(dir_fd, temp, name, _RENAME_EXCHANGE)  # theirs back at the name
    try:
        back = _settled_bytes(dir_fd, temp)
    except OSError:
        back = None  # `temp` is ours again, unreadable: the file at the name is theirs
    if back is not None and back != data:  # yet another save landed at the name meanwhile: the newest goes back
        _rename2(dir_fd, temp, name, _RENAME_EXCHANGE)
    return Changed(_current(dir_fd, name))


def _swap_back_or_keep(dir_fd: int, temp: str, name: str) -> None:
    """After a failure past the exchange (their file unreadable to us, swapped for a link): their file
    goes back to the note's name; if even that fails, it stays beside the note under a kept name."""
    try:
        _rename2(dir_fd, temp, name, _RENAME_EXCHANGE)
    except OSError:
        with suppress(OSError):
            os.rename(temp, f"{name}.kept-{secrets.token_hex(4)}", src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def _settled_bytes(dir_fd: int, temp: str) -> bytes:
    """The bytes of `temp`, read once no one else has it open (a write lease proves that).

    Only we know the temp name, so a process still holding the file opened it before the exchange:
    an in-place save in progress gets _LEASE_TRIES ms to finish. A reader that keeps the file open
    longer (`less`, `tail -f`) must not make every write stale, so then the bytes are read without
    the lease: the one case where a write into that open file after this read could still be lost.
    """
    import fcntl

    fd = os.open(temp, _READ_FLAGS, dir_fd=dir_fd)
    try:
        leased = False
        for _ in range(_LEASE_TRIES):
            try:
                fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
                leased = True
                break
            except BlockingIOError:
                time.sleep(0.001)
            except OSError as exc:  # no leases here (file system, not our file): read it as it is
                if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EACCES, errno.EPERM):
                    raise
                break
        try:
            chunks = []
            while chunk := os.pread(fd, 1 << 20, sum(len(c) for c in chunks)):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            if leased:
                fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
    finally:
        os.close(fd)
