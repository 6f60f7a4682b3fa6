"""File primitives, once: read a note without leaving its source, write one without leaving its vault.

Read side (`open_note`, `read_note`): every read of a note (get_note, the folder sync, the edit
hook's single file) walks from the source's real root one folder at a time, each opened relative to
the previous one without following symlinks, opens the file the same way (and without blocking, so
a FIFO named `*.md` cannot hang a reader), and then asks the opened descriptor what it is: only a
regular file with one hard link is read (docs/adr/0008-read-boundaries.md). Where the platform has
no `dir_fd`/`O_NOFOLLOW` (Windows), the opened file must be the very file `lstat` names.

Write side (`open_folder`, `read_current`, `atomic_replace`, `file_version`):
every curated write (notes, lessons, decision records, handoffs, the memory graph) lands through
these few functions (docs/adr/0006-write-path.md):

- a target is reached by walking its folders from the vault root with O_NOFOLLOW|O_DIRECTORY on
  each step (dir_fd), so a folder swapped for a symlink between the check and the write is caught;
- the file itself is opened with O_NOFOLLOW|O_NONBLOCK and fstat'ed: only a regular file with one
  link is read or replaced (a FIFO never blocks us, a hardlink never carries a write out);
- `atomic_replace` writes a hidden temp file in the same folder (O_EXCL|O_NOFOLLOW via dir_fd),
  fsyncs it, renames it over the target with dir_fd and fsyncs the folder; on any failure the temp
  file is removed and the old file is untouched;
- the document lock a write takes around these steps lives in `engine/files/doc_locks.py`.

Stdlib only: `engine/files/sources.py` (importable on a bare python3) reads `.indexignore` through it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

from vault_index.engine.files.sources import folded_name
from vault_index.errors import NotFoundError, OutsideSourcesError, UnsafePathError

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
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC


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
        return _read_bounded(fd, max_bytes), info
    finally:
        os.close(fd)


def _open_by_walk(base: Path, parts: tuple[str, ...]) -> int:
    """Open base/parts[0]/.../parts[-1], each step relative to the last and following no link."""
    fd = _walk_folders(os.open(base, _DIR_FLAGS), parts[:-1])
    try:
        # A device is not even opened (opening some has effects); the fstat after the open is
        # what counts, this only spares the open. O_NONBLOCK: a FIFO would wait for a writer.
        mode = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode
        if not stat.S_ISREG(mode) and not stat.S_ISLNK(mode):  # a link: the open says ELOOP
            raise OSError(errno.EINVAL, "not a regular file", parts[-1])
        return os.open(parts[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _NOCTTY | _CLOEXEC, dir_fd=fd)
    finally:
        os.close(fd)


def _walk_folders(fd: int, parts: Sequence[str], *, create: bool = False) -> int:
    """From the open folder `fd` (taken over) down through `parts`, one O_NOFOLLOW|O_DIRECTORY step each.

    The one folder walk of the read and the write side. Returns the last folder's descriptor (the
    caller closes it); `create` makes missing folders (mode 0o777 less umask). An OSError names the
    path walked so far in `filename`: ELOOP/EMLINK/ENOTDIR there mean a link or a non-folder.
    """
    try:
        for index, part in enumerate(parts):
            try:
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    with suppress(FileExistsError):
                        os.mkdir(part, 0o777, dir_fd=fd)
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                exc.filename = "/".join(parts[: index + 1])
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_bounded(fd: int, max_bytes: int) -> bytes | None:
    """Everything `fd` holds, or None when that is more than `max_bytes` (never reads past the cap)."""
    chunks, total = [], 0
    while total <= max_bytes:
        chunk = os.read(fd, min(_READ_CHUNK, max_bytes + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return None if total > max_bytes else b"".join(chunks)


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

# --- write side ----------------------------------------------------------------------------------

VERSION_CHARS = 16  # 64 bits of sha256: collisions between two versions of one note are not a concern
CONTROL_PARTS = frozenset({".git", ".vault-index", "secrets"})  # compared folded (sources.folded_name)
STATE_DIR = ".vault-index"
LOCKS_DIR = (STATE_DIR, "locks")
# A vault commits its config and hooks; locks and request ids are this machine's business.
STATE_GITIGNORE = "# vault-index: local state, never committed\nlocks/\n*.sqlite\n*.sqlite-*\n"
# A plain project (no config.yaml) gets the folder only for locks and request ids: all of it stays local.
LOCAL_ONLY_GITIGNORE = "# vault-index: local state (locks, request ids), never committed\n*\n"
LOCK_WAIT_S = 10.0
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_TEMP_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
MAX_WRITE_BYTES = 8_000_000  # a curated file larger than this is not a note we replace

_raw_write = os.write  # the one call that moves bytes; tests inject ENOSPC here


def file_version(data: bytes | None) -> str | None:
    """The version a writer names: sha256 of the file's bytes, short hex; None for no file."""
    return None if data is None else hashlib.sha256(data).hexdigest()[:VERSION_CHARS]


def part_problem(part: str, *, allow_hidden: bool = False) -> str | None:
    """Why a path part may not be written through, or None. Folded as the read side folds it:
    `SECRETS`, `Secrets.`, `secrets ` and full-width letters are secrets.

    Trigger: the write side only case-folded, so `Secrets./x.md` was written while the read side
    (NFKC, casefold, trailing dots and spaces stripped) treats that folder as secrets.
    Why: issue 8 asks for one rule on both sides. Outcome: the read side's folded_name here too.
    """
    folded = folded_name(part)
    if folded in CONTROL_PARTS:
        return f"{part}/ is a control folder (.git, .vault-index and secrets are never written)"
    if part.startswith(".") and not allow_hidden:
        return f"{part} is hidden (names starting with '.' are never written)"
    if part in ("", ".", ".."):
        return f"{part!r} is not a folder name"
    return None


def real_parts(root: Path, path: str | Path, served: str = "the folder") -> tuple[str, ...]:
    """`path` (relative to `root`, or absolute) as the parts of its real path below `root`.
    `served` names `root` in the refusal ("the vault", "the project"): the caller knows which it is.

    Symlinks that stay inside the vault are resolved (the write goes to the real file); one that
    leads out, or `..` that climbs out, is refused. The result is then re-walked with O_NOFOLLOW,
    so a link changed after this check fails the walk instead of redirecting the write.
    """
    raw = Path(path)
    if "\x00" in str(path):
        raise UnsafePathError(f"{path!r} holds a NUL byte; give a plain path")
    real = Path(os.path.realpath(raw if raw.is_absolute() else root / raw))
    if real == root or not real.is_relative_to(root):
        raise UnsafePathError(f"{path} leads out of {served} {root} (through '..', an absolute path or a "
                              "symlink); give a path to a note inside it")
    return real.relative_to(root).parts


def open_folder(root: Path, parts: Sequence[str], *, create: bool = False) -> int:
    """A descriptor of root/parts, walked one O_NOFOLLOW|O_DIRECTORY step at a time; the caller closes it.

    `create` makes missing folders (mode 0o777 less umask) on the way.
    """
    try:
        return _walk_folders(os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC), parts, create=create)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise UnsafePathError(f"{exc.filename} is a symlink or not a folder; writes never pass through "
                                  "links (replace the link by a real folder)") from exc
        raise


def make_dirs(root: Path, parts: Sequence[str]) -> None:
    """Create root/parts safely (no symlink followed on the way)."""
    os.close(open_folder(root, parts, create=True))


def read_current(dir_fd: int, name: str, shown: str = "") -> tuple[bytes | None, os.stat_result | None]:
    """(bytes, stat) of the regular file `name` in the folder, or (None, None) when there is none.

    Opened once without following and without blocking, then checked on what was opened: a
    symlink, FIFO, device, folder or a file with more than one hard link is refused.
    """
    shown = shown or name
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise UnsafePathError(f"{shown} is a symlink; writes never follow links (replace it by the file "
                                  "itself)") from exc
        if exc.errno == errno.ENXIO:  # a FIFO without a reader on some systems
            raise UnsafePathError(f"{shown} is a FIFO or device, not a note") from exc
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO, socket or device"
            raise UnsafePathError(f"{shown} is {kind}, not a note file")
        if info.st_nlink > 1:
            raise UnsafePathError(f"{shown} has {info.st_nlink} hard links; a write would change its other names too, "
                                  "which may lie anywhere, so it is refused (copy the file to break the link)")
        if info.st_size > MAX_WRITE_BYTES:
            raise UnsafePathError(f"{shown} is {info.st_size:,} bytes, over the {MAX_WRITE_BYTES:,} byte limit")
        data = _read_bounded(fd, MAX_WRITE_BYTES)
        if data is None:
            raise UnsafePathError(f"{shown} grew past the {MAX_WRITE_BYTES:,} byte limit while being read")
        return data, info
    finally:
        os.close(fd)


# fdatasync flushes the bytes and the size (what a reader needs), not the timestamps: cheaper than fsync.
_sync = getattr(os, "fdatasync", os.fsync)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = _raw_write(fd, view)
        view = view[written:]


def atomic_replace(dir_fd: int, name: str, data: bytes, mode: int | None = None) -> None:
    """Replace `name` in the folder `dir_fd` with `data`: a reader sees the old bytes or the new, never a mix.

    `mode`: permission bits to keep (the old file's); None lets umask decide for a new file.
    On any failure (ENOSPC, EIO) the temp file is removed; a kill -9 can leave a hidden
    `.NAME.<pid>.*.tmp` that no walk treats as a note, and the next replace of NAME removes it.
    """
    _sweep_temps(dir_fd, name)
    temp = f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temp, _TEMP_FLAGS, 0o666, dir_fd=dir_fd)
    try:
        try:
            _write_all(fd, data)
            if mode is not None:
                os.fchmod(fd, mode)
            _sync(fd)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    with suppress(OSError):  # some file systems cannot fsync a folder; the rename has happened
        os.fsync(dir_fd)


def _sweep_temps(dir_fd: int, name: str) -> None:
    """Remove temp files of `name` left by killed writers (their pid is gone).

    Callers hold the document's lock, so no live writer of `name` can own one; the pid check
    also spares a temp file of a writer that does not lock (a person's own tool).
    """
    prefix = f".{name}."
    with os.scandir(dir_fd) as entries:
        leftovers = [e.name for e in entries if e.name.startswith(prefix) and e.name.endswith(".tmp")]
    for leftover in leftovers:
        pid = leftover[len(prefix):].split(".", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        with suppress(FileNotFoundError):
            os.unlink(leftover, dir_fd=dir_fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def replace_file(path: str | Path, data: bytes) -> None:
    """atomic_replace for a file outside any vault (the memory graph): its folder is opened normally."""
    path = Path(path)
    fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        _, info = read_current(fd, path.name, str(path))
        atomic_replace(fd, path.name, data, stat.S_IMODE(info.st_mode) if info else None)
    finally:
        os.close(fd)


def ensure_state_dir(root: Path, local_only: bool = False) -> int:
    """Descriptor of <root>/.vault-index/locks, created with a .gitignore that keeps locks and state local.

    `local_only` (no config file): the .gitignore ignores the whole folder, itself included.
    """
    state = open_folder(root, (STATE_DIR,), create=True)
    try:
        existing, _ = read_current(state, ".gitignore", f"{STATE_DIR}/.gitignore")
        if existing is None:
            atomic_replace(state, ".gitignore", (LOCAL_ONLY_GITIGNORE if local_only else STATE_GITIGNORE).encode())
    finally:
        os.close(state)
    return open_folder(root, LOCKS_DIR, create=True)
