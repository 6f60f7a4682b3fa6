"""The index and its side files are the owner's alone: folders 0700, files 0600, whatever the umask.

Trigger: the index was created 0644 in a 0755 folder, so another local user read a note from a
0700 folder through it (issue 22). The index holds every indexed note's text; its WAL and SHM,
the sources list, the stamps and locks beside it say as much.
Why: SQLite creates `-wal` and `-shm` with the database file's own mode, so a database created
0600 keeps its WAL and SHM 0600; a 0700 folder also covers side files other code creates later
(filelock's locks, the edit socket, temp files) with the umask's mode.
Outcome: `private_index(db_path)` before the first connect; `write_private_text` for side files.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def make_private_dir(folder: Path) -> None:
    """Create `folder` and any missing parent as 0700 (chmod after: umask only ever takes bits away)."""
    missing = []
    probe = Path(folder)
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for made in reversed(missing):
        try:
            os.mkdir(made, DIR_MODE)
        except FileExistsError:  # another process made it first
            continue
        os.chmod(made, DIR_MODE)


def tighten(path: Path, mode: int = FILE_MODE) -> None:
    """Drop group and other bits from a file or folder this user owns (never follows a symlink)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode) or info.st_uid != os.getuid():
        return
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, stat.S_IMODE(info.st_mode) & ~0o077)


def private_index(db_path: Path, home: Path | None = None) -> None:
    """Make the index's folder (and any parent made for it) 0700 and the database, its WAL/SHM and
    `<db>.*` side files 0600, creating the database file 0600 if absent.

    `home` (the index home, ~/.mcp-memory): existing folders from it down to the index's are
    tightened too; a folder elsewhere (VAULT_INDEX_DB in a project) keeps its mode, only the
    files are made private.
    """
    db_path = Path(db_path)
    make_private_dir(db_path.parent)
    if home is not None:
        home, folder = Path(os.path.realpath(home)), Path(os.path.realpath(db_path.parent))
        if folder.is_relative_to(home):
            for step in (folder, *folder.parents):
                tighten(step, DIR_MODE)
                if step == home:
                    break
    try:
        fd = os.open(db_path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    except FileExistsError:
        pass
    else:
        os.fchmod(fd, FILE_MODE)
        os.close(fd)
    prefix = db_path.name
    with os.scandir(db_path.parent) as entries:
        side = [e.name for e in entries if e.name.startswith(prefix) and e.is_file(follow_symlinks=False)]
    for name in side:
        tighten(db_path.parent / name, FILE_MODE)


def write_private_text(path: Path, text: str) -> None:
    """Atomic replace of `path` with `text`, 0600 (a temp file created 0600, renamed over)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    try:
        try:
            os.fchmod(fd, FILE_MODE)
            view = memoryview(text.encode("utf-8"))
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError:
        try:
            temporary.unlink()
        except OSError:
            pass
        raise
