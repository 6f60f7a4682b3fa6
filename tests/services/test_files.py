"""atomic_write and file_lock on real files, across real processes."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

import pytest
from helpers import REPO
from vault_index.services import files
from vault_index.services.files import FileBusyError, atomic_write, file_lock, lock_path


def test_atomic_write_creates_and_replaces(tmp_path):
    target = tmp_path / "note.md"
    atomic_write(target, "first\r\nline\n")
    assert target.read_bytes() == b"first\r\nline\n"  # line endings written as given
    atomic_write(target, "second ü\n")
    assert target.read_text(encoding="utf-8") == "second ü\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["note.md"]  # no temp files left


def test_atomic_write_keeps_the_file_mode(tmp_path):
    target = tmp_path / "private.md"
    target.write_text("old")
    os.chmod(target, 0o640)
    atomic_write(target, "new")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640 and target.read_text() == "new"


def test_atomic_write_goes_through_a_symlink(tmp_path):
    real = tmp_path / "real.md"
    real.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    atomic_write(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


def test_a_failed_replace_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "note.md"
    target.write_bytes(b"precious\n")

    def broken(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, "replacement\n")
    assert target.read_bytes() == b"precious\n"
    assert [p.name for p in tmp_path.iterdir()] == ["note.md"]


@pytest.fixture(params=["fcntl", "lock-file"])
def lock_kind(request, monkeypatch):
    if request.param == "lock-file":
        monkeypatch.setattr(files, "fcntl", None)
    elif files.fcntl is None:
        pytest.skip("no fcntl on this platform")
    return request.param


def test_lock_excludes_a_second_holder_and_cleans_up(tmp_path, lock_kind):
    target = tmp_path / "lessons.md"
    with file_lock(target):
        assert lock_path(target).exists()
        started = time.monotonic()
        with pytest.raises(FileBusyError, match="another writer"), file_lock(target, wait=0.2):
            pass
        assert time.monotonic() - started >= 0.2
    assert not lock_path(target).exists()  # no lock files pile up beside the notes
    with file_lock(target, wait=0.2):  # free again
        pass


def test_lock_file_fallback_takes_over_a_stale_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "fcntl", None)
    target = tmp_path / "lessons.md"
    stale = lock_path(target)
    stale.write_text("12345\n")
    old = time.time() - 120
    os.utime(stale, (old, old))
    with file_lock(target, wait=0.2, stale_after=60):
        assert stale.read_text().strip() == str(os.getpid())
    fresh = lock_path(target)
    fresh.write_text("12345\n")
    with pytest.raises(FileBusyError), file_lock(target, wait=0.1, stale_after=60):
        pass


COUNTER = """
import sys
sys.path.insert(0, {mcp!r})
from pathlib import Path
from vault_index.services import files
if sys.argv[2] == "lock-file":
    files.fcntl = None
path = Path(sys.argv[1])
for _ in range(40):
    with files.file_lock(path, wait=30):
        value = int(path.read_text()) if path.exists() else 0
        files.atomic_write(path, str(value + 1))
"""


def test_two_processes_never_lose_an_increment(tmp_path, lock_kind):
    counter = tmp_path / "counter.txt"
    code = COUNTER.format(mcp=str(REPO / "mcp"))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(counter), lock_kind]) for _ in range(2)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    assert counter.read_text() == "80"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["counter.txt"]
