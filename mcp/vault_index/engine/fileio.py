"""Read a note without leaving its source: open once, follow no link, check what was opened.

Checking a resolved path and then opening it again by name leaves a gap: a note swapped for a
symlink between the two serves whatever the link points at. So every read of a note (get_note,
the folder sync, the edit hook's single file) walks from the source's real root one folder at a
time, each opened relative to the previous one without following symlinks, opens the file the
same way (and without blocking, so a FIFO named `*.md` cannot hang a reader), and then asks the
opened descriptor what it is. The rules, in docs/adr/0008-read-boundaries.md:

- a symlink anywhere below the root (folder or file) is refused at open time (ELOOP); the index
  keys notes by their real path, so a link that stays inside a source is read through its target;
- only regular files are read (FIFOs, devices and sockets are refused before any read);
- a file with more than one hard link is refused: its other name may lie outside every source,
  and no cheap check can tell where it is.

Where the platform has no `dir_fd`/`O_NOFOLLOW` (Windows), the file is opened by name and the
opened file must be the very file `lstat` names, with no link on the way.

Stdlib only: `engine/sources.py` (importable on a bare python3) reads `.indexignore` through it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from vault_index.errors import NotFoundError, OutsideSourcesError

_READ_CHUNK = 1 << 16
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOCTTY = getattr(os, "O_NOCTTY", 0)
# Trigger: Windows has neither dir_fd nor O_NOFOLLOW.
# Why: a walk by descriptors is the only race-free way; without it, compare the opened file
# with what lstat names (a swap after the open is then a different file, and refused).
# Outcome: _open_by_walk where the platform allows, _open_by_name_checked elsewhere.
_WALK = bool(_NOFOLLOW and _DIRECTORY) and os.open in os.supports_dir_fd
# ELOOP on Linux and macOS, EMLINK on FreeBSD: "the last part is a symlink" under O_NOFOLLOW.
_LINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK})


def open_note(root: Path, real: Path) -> int:
    """A read-only descriptor of `real`, a regular file with one link at or below `root`.

    `root` is the source's real path (a folder, or the note itself for a one-file source) and
    `real` the note's real path inside it. Raises NotFoundError when it is not there (any more),
    OutsideSourcesError when a link or a special file is met, OSError for other I/O failures
    (permission denied). The caller closes the descriptor.
    """
    root, real = Path(root), Path(real)
    base = root.parent if real == root else root
    try:
        parts = real.relative_to(base).parts
    except ValueError:
        raise OutsideSourcesError(f"{real} is outside the source {root}") from None
    if not parts or any(part in ("..", ".") for part in parts):
        raise OutsideSourcesError(f"{real} is not a file below the source {root}")
    try:
        fd = _open_by_walk(base, parts) if _WALK else _open_by_name_checked(base, parts)
    except OSError as exc:
        raise _refusal(real, exc) from exc
    try:
        _check_opened(real, os.fstat(fd))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_note(root: Path, real: Path, max_bytes: int) -> tuple[bytes | None, os.stat_result]:
    """(the note's bytes, the opened file's stat); bytes None when it holds over `max_bytes`.

    What is returned is what the checked descriptor read, never a second open by name. An
    oversized file is not read at all (its size comes from fstat), and a file that grows past
    the cap while being read is reported oversized too, so a read is bounded by `max_bytes`.
    """
    fd = open_note(root, real)
    try:
        info = os.fstat(fd)
        if info.st_size > max_bytes:
            return None, info
        chunks, total = [], 0
        while total <= max_bytes:
            chunk = os.read(fd, min(_READ_CHUNK, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return (None if total > max_bytes else b"".join(chunks)), info
    finally:
        os.close(fd)


def _open_by_walk(base: Path, parts: tuple[str, ...]) -> int:
    """Open base/parts[0]/.../parts[-1], each step relative to the last and following no link."""
    folder_flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
    fd = os.open(base, folder_flags)
    try:
        for part in parts[:-1]:
            child = os.open(part, folder_flags, dir_fd=fd)
            os.close(fd)
            fd = child
        # A device is not even opened (opening some has effects); the fstat after the open is
        # what counts, this only spares the open. O_NONBLOCK: a FIFO would wait for a writer.
        mode = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode
        if not stat.S_ISREG(mode) and not stat.S_ISLNK(mode):  # a link: the open says ELOOP
            raise OSError(errno.EINVAL, "not a regular file", parts[-1])
        return os.open(parts[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _NOCTTY | _CLOEXEC, dir_fd=fd)
    finally:
        os.close(fd)


def _open_by_name_checked(base: Path, parts: tuple[str, ...]) -> int:
    """Fallback without dir_fd: no link on the way, then the opened file must be the one lstat names."""
    path = base
    for part in parts:
        path = path / part
        if stat.S_ISLNK(os.lstat(path).st_mode) or _is_junction(path):
            raise OSError(errno.ELOOP, "symbolic link", str(path))
    before = os.lstat(path)
    if not stat.S_ISREG(before.st_mode):  # never open a FIFO by name where O_NONBLOCK may not exist
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    fd = os.open(path, os.O_RDONLY | _BINARY | _NONBLOCK | _CLOEXEC)
    try:
        if not os.path.samestat(os.fstat(fd), os.lstat(path)):
            raise OSError(errno.ELOOP, "replaced while opening", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_junction(path: Path) -> bool:
    is_junction = getattr(os.path, "isjunction", None)  # Python 3.12+
    return bool(is_junction and is_junction(path))


def _check_opened(real: Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise OutsideSourcesError(f"{real} is not a regular file (a folder, FIFO, device or socket); it is never read")
    if info.st_nlink > 1:
        raise OutsideSourcesError(
            f"{real} has {info.st_nlink} hard links; vault-index reads only files with one link "
            "(another name could lie outside every source)"
        )


def _refusal(real: Path, exc: OSError) -> Exception:
    if exc.errno in _LINK_ERRNOS:
        return OutsideSourcesError(f"{real} or a folder on its way is a symbolic link here; it is never followed")
    if exc.errno == errno.EINVAL:
        return OutsideSourcesError(f"{real} is not a regular file (a folder, FIFO, device or socket); it is never read")
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):  # ENOTDIR too: a folder swapped for a link
        return NotFoundError(f"{real} is not there (any more), or a folder on its way is not a real folder")
    return exc
