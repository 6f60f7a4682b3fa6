"""engine/files/fileio.py on real files and real processes: the walk, the read, atomic_replace, DocumentLock."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import REPO
from vault_index.engine.files import doc_locks, fileio
from vault_index.errors import UnsafePathError, WriteBusyError


@pytest.fixture
def root(tmp_path) -> Path:
    folder = tmp_path / "vault"
    (folder / "notes").mkdir(parents=True)
    return Path(os.path.realpath(folder))


def _folder(root: Path, *parts: str) -> int:
    return fileio.open_folder(root, parts)


def test_atomic_replace_creates_replaces_and_keeps_the_mode(root):
    fd = _folder(root, "notes")
    try:
        fileio.atomic_replace(fd, "a.md", b"first\r\n")
        assert (root / "notes" / "a.md").read_bytes() == b"first\r\n"
        os.chmod(root / "notes" / "a.md", 0o640)
        data, info = fileio.read_current(fd, "a.md")
        fileio.atomic_replace(fd, "a.md", "second ü\n".encode(), stat.S_IMODE(info.st_mode))
    finally:
        os.close(fd)
    target = root / "notes" / "a.md"
    assert target.read_text(encoding="utf-8") == "second ü\n" and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in (root / "notes").iterdir()) == ["a.md"]  # no temp file left


@pytest.mark.parametrize("fault", ["write", "fsync", "replace"])
def test_a_failure_at_any_step_leaves_the_old_file_and_no_temp(root, monkeypatch, fault):
    target = root / "notes" / "a.md"
    target.write_bytes(b"precious\n")

    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(*{"write": (fileio, "_raw_write"), "fsync": (fileio, "_sync"),
                          "replace": (fileio.os, "replace")}[fault], no_space)
    fd = _folder(root, "notes")
    try:
        with pytest.raises(OSError) as caught:
            fileio.atomic_replace(fd, "a.md", b"replacement\n" * 1000)
    finally:
        monkeypatch.undo()
        os.close(fd)
    assert caught.value.errno == errno.ENOSPC
    assert target.read_bytes() == b"precious\n"
    assert [p.name for p in (root / "notes").iterdir()] == ["a.md"]


def test_read_current_refuses_symlinks_fifos_devices_folders_and_hardlinks(root, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("not yours\n")
    notes = root / "notes"
    (notes / "link.md").symlink_to(outside)
    os.mkfifo(notes / "pipe.md")
    (notes / "folder.md").mkdir()
    os.link(outside, notes / "hard.md")
    fd = _folder(root, "notes")
    try:
        for name, words in (("link.md", "symlink"), ("pipe.md", "FIFO"), ("folder.md", "folder"),
                            ("hard.md", "hard links")):
            started = time.monotonic()
            with pytest.raises(UnsafePathError, match=words):
                fileio.read_current(fd, name)
            assert time.monotonic() - started < 2  # the FIFO never blocks: opened O_NONBLOCK
        assert fileio.read_current(fd, "missing.md") == (None, None)
    finally:
        os.close(fd)
    if Path("/dev/null").exists():
        devfd = os.open("/dev", os.O_RDONLY)
        try:
            with pytest.raises(UnsafePathError, match="device"):
                fileio.read_current(devfd, "null")
        finally:
            os.close(devfd)
    assert outside.read_text() == "not yours\n"


def test_the_walk_refuses_a_parent_swapped_for_a_symlink(root, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "docs").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePathError, match="symlink"):
        fileio.open_folder(root, ("docs",))
    with pytest.raises(UnsafePathError, match="symlink"):
        fileio.open_folder(root, ("docs", "adr"), create=True)
    assert list(outside.iterdir()) == []


def test_real_parts_keeps_links_inside_and_refuses_the_way_out(root, tmp_path):
    (root / "alias").symlink_to(root / "notes", target_is_directory=True)
    (root / "out").symlink_to(tmp_path, target_is_directory=True)
    assert fileio.real_parts(root, "alias/x.md") == ("notes", "x.md")
    assert fileio.real_parts(root, "./notes/../notes/x.md") == ("notes", "x.md")
    assert fileio.real_parts(root, str(root / "notes" / "x.md")) == ("notes", "x.md")
    for path in ("../x.md", "out/x.md", "/etc/passwd", "notes/../../x.md", "."):
        with pytest.raises(UnsafePathError, match="leads out"):
            fileio.real_parts(root, path)


@pytest.mark.parametrize("part", [".git", ".GIT", ".vault-index", "secrets", "Secrets", "SECRETS", ".obsidian"])
def test_control_and_hidden_parts_are_refused_in_any_case(part):
    assert fileio.part_problem(part)
    assert fileio.part_problem("notes") is None


def test_file_version_is_a_short_content_hash():
    assert fileio.file_version(None) is None
    assert fileio.file_version(b"a") == fileio.file_version(b"a") != fileio.file_version(b"b")
    assert len(fileio.file_version(b"a")) == fileio.VERSION_CHARS


def _lock(root: Path, *parts: str, wait: float = 0.2, holder: str = "me") -> doc_locks.DocumentLock:
    locks = fileio.ensure_state_dir(root)
    folder = fileio.open_folder(root, parts[:-1])
    try:
        key = doc_locks.document_key(folder, parts[-1])
    finally:
        os.close(folder)
    return doc_locks.DocumentLock(locks, key, holder, wait=wait)


def test_aliases_of_one_document_meet_on_one_lock(root):
    (root / "alias").symlink_to(root / "notes", target_is_directory=True)
    with _lock(root, "notes", "a.md", holder="first writer"):
        for alias in (("alias", "a.md"), ("notes", "A.md")):
            real = fileio.real_parts(root, "/".join(alias))  # the service resolves, then keys the real folder
            with pytest.raises(WriteBusyError, match="first writer"):
                _lock(root, *real).acquire()
        with _lock(root, "notes", "b.md"):  # another document is free
            pass
    with _lock(root, "notes", "a.md"):  # released
        pass
    gitignore = root / ".vault-index" / ".gitignore"
    assert "locks/" in gitignore.read_text()


def test_a_waiter_is_told_who_holds_the_lock_and_its_lease(root):
    holder = _lock(root, "notes", "a.md", holder="Ann <ann@example.org>")
    holder.acquire()
    try:
        started = time.monotonic()
        with pytest.raises(WriteBusyError) as caught:
            _lock(root, "notes", "a.md", wait=0.3).acquire()
        assert time.monotonic() - started >= 0.3
        message = str(caught.value)
        assert "Ann <ann@example.org>" in message and "lease runs" in message and str(os.getpid()) in message
    finally:
        holder.release()


LOCK_HOLDER = """
import sys, time
sys.path.insert(0, {mcp!r})
from pathlib import Path
from vault_index.engine.files import doc_locks, fileio
root = Path(sys.argv[1])
locks = fileio.ensure_state_dir(root)
folder = fileio.open_folder(root, ("notes",))
lock = doc_locks.DocumentLock(locks, doc_locks.document_key(folder, "a.md"), "doomed")
lock.acquire()
print("held", flush=True)
time.sleep(60)
"""


def test_a_killed_holder_releases_the_lock_at_once(root):
    proc = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER.format(mcp=str(REPO / "mcp")), str(root)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(WriteBusyError, match="doomed"):
            _lock(root, "notes", "a.md", wait=0.1).acquire()
    finally:
        proc.kill()
        proc.wait(timeout=10)
    started = time.monotonic()
    with _lock(root, "notes", "a.md", wait=2.0):
        assert time.monotonic() - started < 1.0  # the kernel let go with the process, no TTL to wait out


COUNTER = """
import sys
sys.path.insert(0, {mcp!r})
from pathlib import Path
from vault_index.engine.files import doc_locks, fileio
root = Path(sys.argv[1])
locks = fileio.ensure_state_dir(root)
for _ in range(40):
    folder = fileio.open_folder(root, ("notes",))
    with doc_locks.DocumentLock(locks, doc_locks.document_key(folder, "count.md"), "p", wait=30):
        data, _ = fileio.read_current(folder, "count.md")
        fileio.atomic_replace(folder, "count.md", str(int(data or b"0") + 1).encode())
    import os
    os.close(folder)
"""


def test_processes_and_threads_never_lose_an_increment(root):
    code = COUNTER.format(mcp=str(REPO / "mcp"))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(root)]) for _ in range(2)]

    def bump():
        locks = fileio.ensure_state_dir(root)
        for _ in range(20):
            folder = fileio.open_folder(root, ("notes",))
            try:
                with doc_locks.DocumentLock(locks, doc_locks.document_key(folder, "count.md"), "t", wait=30):
                    data, _ = fileio.read_current(folder, "count.md")
                    fileio.atomic_replace(folder, "count.md", str(int(data or b"0") + 1).encode())
            finally:
                os.close(folder)

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    assert (root / "notes" / "count.md").read_text() == str(2 * 40 + 2 * 20)
    assert [p.name for p in (root / "notes").iterdir()] == ["count.md"]


def test_replace_file_for_a_store_outside_any_vault(tmp_path):
    store = tmp_path / "state" / "memory.jsonl"
    store.parent.mkdir()
    fileio.replace_file(store, b"one\n")
    fileio.replace_file(store, b"two\n")
    assert store.read_bytes() == b"two\n"


def test_the_next_replace_sweeps_temp_files_of_dead_writers_only(root):
    notes = root / "notes"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = notes / f".a.md.{dead.stdout.strip()}.cafe.tmp"
    live = notes / f".a.md.{os.getppid()}.beef.tmp"  # a live process (our parent): never touched
    other = notes / f".b.md.{dead.stdout.strip()}.cafe.tmp"  # another note's: left for its own writer
    for path in (stale, live, other):
        path.write_text("half")
    fd = _folder(root, "notes")
    try:
        fileio.atomic_replace(fd, "a.md", b"whole\n")
    finally:
        os.close(fd)
    assert not stale.exists() and live.exists() and other.exists()


def test_an_expired_lease_is_reported_but_never_frees_the_lock(root):
    holder = _lock(root, "notes", "a.md", holder="slow writer")
    holder.lease_s = 0.05
    holder.acquire()
    try:
        time.sleep(0.2)
        with pytest.raises(WriteBusyError, match="lease ran out"):
            _lock(root, "notes", "a.md", wait=0.1).acquire()
        holder.lease_s = 30
        holder.refresh()  # a long stage says it is alive
        with pytest.raises(WriteBusyError, match="lease runs"):
            _lock(root, "notes", "a.md", wait=0.1).acquire()
    finally:
        holder.release()
