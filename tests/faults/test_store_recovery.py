"""Fault suite (must-show 3): the index always comes back, and a permission problem is not damage.

Each case damages or locks a real index that the real CLI built, then drives the real CLI:
search works or says why, the registered sources survive, and the next sync restores the index.
Read-only cases use a read-only bind mount when the suite runs as root (chmod does not bind
root) and chmod otherwise, so both EROFS and EACCES are covered where they can be.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import anyio
import pytest
from helpers import CLI, cli_env, make_settings
from vault_index.engine.embedding.models import Models
from vault_index.engine.stores.store import Store
from vault_index.errors import IndexRebuiltError
from vault_index.services.app import App
from vault_index.surfaces.server import build_server

from mcp import Client

TIMEOUT_S = 60
WORD = "derailleur"  # in the conftest vault's bike.md
PAGE = 4096
IS_ROOT = os.geteuid() == 0


def _cli(env, *args, wrap: list[str] | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([*(wrap or []), CLI, *args], env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _hits(env, wrap=None) -> tuple[list[str], list[str]]:
    done = _cli(env, "search", WORD, "--mode", "keyword", "--json", wrap=wrap)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    return [h["path"] for h in result["hits"]], result["notices"]


def _sources(env, wrap=None) -> list[str]:
    done = _cli(env, "sources", "--json", wrap=wrap)
    assert done.returncode == 0, done.stderr
    return [s["path"] for s in json.loads(done.stdout)]


@pytest.fixture
def indexed(tmp_path, vault):
    """(env, db path, vault) for an index of the conftest vault, checkpointed and closed."""
    db = tmp_path / "idx" / "index.db"
    env = cli_env(db)
    assert _cli(env, "index", str(vault), "-s").returncode == 0
    with closing(sqlite3.connect(db)) as conn:  # read directly: two more CLI runs per case cost about 1.5 s
        assert [r[0] for r in conn.execute("SELECT path FROM sources")] == [str(vault)]
        assert conn.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (WORD,)).fetchone()[0]
    return env, db, vault


def _truncate(db: Path) -> None:
    with open(db, "r+b") as handle:
        handle.truncate(db.stat().st_size // 2)


def _garbage(db: Path) -> None:
    db.write_bytes(os.urandom(db.stat().st_size))


def _damage_pages(db: Path) -> None:
    """Keep page 1 (header) and the schema's pages valid; scribble over every other page's header area.

    The schema outgrew page 1 with the checkout tables (m005): its other pages are found with dbstat."""
    with sqlite3.connect(db) as con:
        schema = {n for (n,) in con.execute("SELECT pageno FROM dbstat WHERE name = 'sqlite_schema'")}
    con.close()
    data = bytearray(db.read_bytes())
    for start in range(PAGE, len(data), PAGE):
        if start // PAGE + 1 not in schema:
            data[start:start + 64] = os.urandom(64)
    db.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_truncate, _garbage, _damage_pages], ids=["truncated", "garbage", "damaged-pages"])
def test_a_damaged_index_is_moved_aside_rebuilt_with_its_sources_and_the_next_sync_restores_it(indexed, damage):
    env, db, vault = indexed
    damage(db)

    hits, notices = _hits(env)
    assert hits == [] and any("was damaged" in n and "vault-index index" in n for n in notices), notices
    assert _sources(env) == [str(vault)]  # the sources survived the rebuild
    status = json.loads(_cli(env, "status", "--json").stdout)
    assert any("rebuilt" in n for n in status["notices"])
    assert list(db.parent.glob("index.db.corrupt-*"))  # the damaged file kept for inspection

    assert _cli(env, "index", "-s").returncode == 0  # no paths: every registered source
    hits, notices = _hits(env)
    assert hits == [str(vault / "bike.md")] and notices == []


def test_two_processes_that_find_the_same_damage_rebuild_once(indexed):
    env, db, vault = indexed
    _damage_pages(db)
    runs = [subprocess.Popen([CLI, "index", "-s"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]
    outcomes = [(run.wait(timeout=TIMEOUT_S), run.stderr.read()) for run in runs]
    for code, stderr in outcomes:
        assert "Traceback" not in stderr and code in (0, 9), stderr  # 9: it met the damage mid-run
    assert len([p for p in db.parent.glob("index.db.corrupt-*") if not p.name.endswith(("-wal", "-shm"))]) == 1
    assert _sources(env) == [str(vault)]
    assert _cli(env, "index", "-s").returncode == 0
    assert _hits(env)[0] == [str(vault / "bike.md")]


def test_damage_found_after_open_rebuilds_at_once_and_says_so(indexed):
    env, db, vault = indexed
    store = Store(db)  # checks the file and remembers it was clean
    store.close()
    info = db.stat()
    _damage_pages(db)
    os.utime(db, ns=(info.st_atime_ns, info.st_mtime_ns))  # same size and time: the open skips quick_check

    store = Store(db)
    try:
        with pytest.raises(IndexRebuiltError, match="was damaged"):
            store.chunk_rows(range(1, 50))
        assert store.sources() == [(1, str(vault))]
    finally:
        store.close()
    assert _cli(env, "index", "-s").returncode == 0
    assert _hits(env)[0] == [str(vault / "bike.md")]


def test_a_sources_file_beside_the_index_brings_the_sources_back_when_the_old_file_cannot(indexed, tmp_path):
    env, db, vault = indexed
    saved = json.loads(Path(str(db) + ".sources.json").read_text(encoding="utf-8"))
    assert saved["sources"] == [str(vault)]
    _garbage(db)  # nothing left to read the sources from
    assert _sources(env) == [str(vault)]


def _read_only_wrap(folder: Path) -> list[str] | None:
    """A command prefix that runs the CLI with `folder` on a read-only bind mount (root only)."""
    if not IS_ROOT:
        return None
    if not shutil.which("unshare"):
        pytest.skip("running as root without unshare: cannot make a read-only folder")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, timeout=TIMEOUT_S)
    if probe.returncode != 0:
        pytest.skip("running as root where mount namespaces are not allowed")
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && shift && exec "$@"'
    return ["unshare", "-m", "sh", "-c", script, str(folder), "--"]


def test_a_read_only_folder_serves_search_and_refuses_writes_clearly(indexed):
    env, db, vault = indexed
    wrap = _read_only_wrap(db.parent)
    before = sorted(p.name for p in db.parent.iterdir())
    if wrap is None:
        db.parent.chmod(0o555)
    try:
        hits, notices = _hits(env, wrap)
        assert hits == [str(vault / "bike.md")]
        assert any("read-only" in n for n in notices), notices
        assert _sources(env, wrap) == [str(vault)]
        status = _cli(env, "status", "--json", wrap=wrap)
        assert status.returncode == 0 and json.loads(status.stdout)["read_only"], status.stderr
        refused = _cli(env, "index", str(vault), wrap=wrap)
        assert refused.returncode == 7 and f"the index at {db} is read-only" in refused.stderr, refused.stderr
        removed = _cli(env, "remove", str(vault), wrap=wrap)
        assert removed.returncode == 7 and "read-only" in removed.stderr
    finally:
        db.parent.chmod(0o755)
    assert sorted(p.name for p in db.parent.iterdir()) == before  # nothing moved aside
    assert _cli(env, "index", "-s").returncode == 0 and _hits(env)[0] == [str(vault / "bike.md")]


def test_a_read_only_index_file_is_never_taken_for_damage(indexed):
    env, db, vault = indexed
    if IS_ROOT:
        locked = subprocess.run(["chattr", "+i", str(db)], capture_output=True, timeout=TIMEOUT_S)
        if locked.returncode != 0:
            pytest.skip("running as root where chattr +i is not available")
    else:
        db.chmod(0o444)
    try:
        hits, notices = _hits(env)
        assert hits == [str(vault / "bike.md")] and any("read-only" in n for n in notices)
        refused = _cli(env, "index", "-s")
        assert refused.returncode == 7 and "read-only" in refused.stderr
    finally:
        if IS_ROOT:
            subprocess.run(["chattr", "-i", str(db)], capture_output=True, timeout=TIMEOUT_S)
        db.chmod(0o644)
    assert not list(db.parent.glob("*.corrupt-*"))


@pytest.mark.parametrize("part", ["-wal", "-shm"])
def test_an_unreadable_wal_or_shm_file_is_said_never_moved(indexed, part):
    env, db, vault = indexed
    blocked = Path(str(db) + part)
    if blocked.exists():
        blocked.unlink()
    if IS_ROOT:
        blocked.mkdir()  # root reads any file; a folder in its place cannot be opened as one
    else:
        blocked.write_bytes(b"")
        blocked.chmod(0)
    try:
        done = _cli(env, "search", WORD, "--mode", "keyword", "--json")
        if done.returncode == 0:
            result = json.loads(done.stdout)
            assert [h["path"] for h in result["hits"]] == [str(vault / "bike.md")], result
            assert any("read-only" in n for n in result["notices"]), result
        else:
            assert str(db) in done.stderr and "Nothing was moved" in done.stderr, done.stderr
    finally:
        if blocked.is_dir():
            blocked.rmdir()
        elif blocked.exists():
            blocked.chmod(0o644)
            blocked.unlink()
    assert not list(db.parent.glob("*.corrupt-*"))
    assert _sources(env) == [str(vault)]
    assert _cli(env, "index", "-s").returncode == 0 and _hits(env)[0] == [str(vault / "bike.md")]


def test_the_sources_file_follows_every_change(tmp_path, vault):
    db = tmp_path / "s" / "index.db"
    store = Store(db)
    try:
        store.add_source(str(vault))
        store.add_source(str(tmp_path))
        assert json.loads(Path(str(db) + ".sources.json").read_text())["sources"] == sorted([str(vault), str(tmp_path)])
        store.remove_source(str(tmp_path))
        assert json.loads(Path(str(db) + ".sources.json").read_text())["sources"] == [str(vault)]
    finally:
        store.close()
    assert sqlite3.connect(db).execute("PRAGMA quick_check").fetchone() == ("ok",)


def _lock_file(db: Path) -> bool:
    """Make the index file itself unwritable; False where this process cannot."""
    if IS_ROOT:
        return subprocess.run(["chattr", "+i", str(db)], capture_output=True, timeout=TIMEOUT_S).returncode == 0
    db.chmod(0o444)
    return True


def _unlock_file(db: Path) -> None:
    if IS_ROOT:
        subprocess.run(["chattr", "-i", str(db)], capture_output=True, timeout=TIMEOUT_S)
    db.chmod(0o644)


def test_over_mcp_a_damaged_index_is_said_and_a_read_only_one_refuses_index_paths_clearly(indexed, tmp_path,
                                                                                         monkeypatch):
    env, db, vault = indexed
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    settings = make_settings(db.parent, db.name)

    async def calls(steps):
        app = App.open(settings, models=Models.fixed(None))
        try:
            with anyio.fail_after(TIMEOUT_S):
                async with Client(build_server(app, tmp_path / "memory.jsonl")) as client:
                    return [await client.call_tool(name, arguments) for name, arguments in steps]
        finally:
            app.close()

    _damage_pages(db)
    searched, indexed_again, found = anyio.run(calls, [
        ("search_notes", {"query": WORD, "mode": "keyword"}), ("index_paths", {"paths": []}),
        ("search_notes", {"query": WORD, "mode": "keyword"})])
    assert not searched.is_error and any("was damaged" in n for n in searched.structured_content["notices"])
    assert not indexed_again.is_error
    assert [h["path"] for h in found.structured_content["hits"]] == [str(vault / "bike.md")]

    if not _lock_file(db):
        pytest.skip("cannot make the index file read-only here")
    try:
        searched, refused = anyio.run(calls, [("search_notes", {"query": WORD, "mode": "keyword"}),
                                              ("index_paths", {"paths": [str(vault)]})])
    finally:
        _unlock_file(db)
    assert [h["path"] for h in searched.structured_content["hits"]] == [str(vault / "bike.md")]
    text = "\n".join(getattr(c, "text", "") for c in refused.content)
    assert refused.is_error and f"the index at {db} is read-only" in text and "VAULT_INDEX_DB" in text, text


def test_a_rebuild_keeps_the_names_given_with_index_name(tmp_path, vault):
    db = tmp_path / "idx" / "index.db"
    env = cli_env(db)
    assert _cli(env, "index", str(vault), "--name", "garden-notes", "-s").returncode == 0
    _garbage(db)  # the names can only come back from the sources file
    done = _cli(env, "sources", "--json")
    assert done.returncode == 0, done.stderr
    assert [(s["name"], s["path"]) for s in json.loads(done.stdout)] == [("garden-notes", str(vault))]


def test_a_rebuilt_index_keeps_every_checkout_of_a_team_source(tmp_path, vault):
    """ADR 0019: the sources file lists further checkouts, so a rebuild registers them again under
    their source and the next sync stores each note once."""
    import shutil

    db = tmp_path / "idx" / "index.db"
    env = cli_env(db)
    copy = tmp_path / "second-checkout"
    shutil.copytree(vault, copy)
    assert _cli(env, "index", str(vault), "--name", "team", "-s").returncode == 0
    assert _cli(env, "index", str(copy), "--name", "team", "--checkout", "-s").returncode == 0
    files = json.loads(_cli(env, "status", "--json").stdout)["files"]
    _garbage(db)

    [source] = json.loads(_cli(env, "sources", "--json").stdout)
    assert source["name"] == "team" and [c["path"] for c in source["checkouts"]] == [str(vault), str(copy)]
    assert _cli(env, "index", "-s").returncode == 0
    assert json.loads(_cli(env, "status", "--json").stdout)["files"] == files
    assert _hits(env)[0] == [str(vault / "bike.md")]
