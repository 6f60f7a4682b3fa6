"""Must-show 4: the holes found in the write tools, each a test that failed on the old code.

Symlinks and hardlinks out of the project (lessons, ADRs, handoffs, snapshots), a FIFO named like a
note, writes into control folders in any letter case, a lock taken through an alias of a path, a
config typo, and a retry after a late failure (re-index, graph link) that used to write twice.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import REPO
from vault_index.errors import ConfigError
from vault_index.services.curation import adr, lessons
from vault_index.services.vault.vault import Vault
from vault_index.services.writes.write import Caller, WriteRequest, WriteService

pytestmark = pytest.mark.faults

ME = Caller("Me <me@example.org>", "owner", "holes-test")
SECTIONS = {"context": "c", "options": "o", "decision": "d"}
HANG_S = 30  # a hang guard, not a speed claim


@pytest.fixture
def project(tmp_path) -> Path:
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    return project


@pytest.fixture
def outside(tmp_path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "victim.md").write_text("precious, not the project's\n")
    return folder


def bounded(fn, *args, **kwargs):
    """fn(*args, **kwargs) on a daemon thread: a call still running after HANG_S fails the test
    instead of hanging the suite (the old writer opened a FIFO and waited for a writer for ever)."""
    done, raised = [], []

    def run() -> None:
        try:
            done.append(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - re-raised below, on the test's thread
            raised.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(HANG_S)
    if worker.is_alive():
        pytest.fail(f"{getattr(fn, '__qualname__', fn)} still blocked after {HANG_S} s")
    if raised:
        raise raised[0]
    return done[0]


def untouched(outside: Path) -> bool:
    return sorted(p.name for p in outside.iterdir()) == ["victim.md"] and (
        (outside / "victim.md").read_text() == "precious, not the project's\n")


def script(name: str, project: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "VAULT_"))}
    env.update(CLAUDE_PROJECT_DIR=str(project), VAULT_INDEX_DB=str(project.parent / "none" / "index.db"),
               VAULT_MEMORY_FILE=str(project.parent / "memory.jsonl"), VAULT_EMBED_MODEL="none")
    return subprocess.run([sys.executable, str(REPO / "scripts" / name), *args], input=stdin, capture_output=True,
                          text=True, env=env, cwd=project, timeout=60)


def test_lessons_file_as_a_symlink_out_is_refused(project, outside):
    (project / "docs" / "lessons.md").symlink_to(outside / "victim.md")
    outcome = lessons.add_outcome(project / "docs" / "lessons.md", "Do X", "c", "d",
                                  writer=WriteService(Vault.open(project)), caller=ME)
    assert outcome.status == "refused" and "leads out of the project" in outcome.message
    done = script("learn.py", project, "add", "--lesson", "Do X", "--cause", "c", "--detect", "d")
    assert done.returncode == 2 and "leads out" in done.stderr and done.stdout == ""
    assert untouched(outside)


def test_adr_folder_as_a_symlink_out_is_refused(project, outside):
    (project / "docs" / "adr").symlink_to(outside, target_is_directory=True)
    outcome = adr.record(project / "docs" / "adr", "Use flock", **SECTIONS, writer=WriteService(Vault.open(project)),
                         caller=ME)
    assert outcome.status == "refused" and "leads out" in outcome.message
    done = script("adr.py", project, "new", "Use flock", "--context", "c", "--options", "o", "--decision", "d")
    assert done.returncode == 2 and "leads out" in done.stderr
    assert untouched(outside)


@pytest.mark.parametrize("hook", ["handoff.py", "precompact_snapshot.py"])
def test_handoffs_folder_as_a_symlink_out_is_refused(project, outside, hook):
    (project / "docs" / "handoffs").symlink_to(outside, target_is_directory=True)
    if hook == "handoff.py":
        done = script(hook, project, "new", "--topic", "t", "--session", "s1", "--project", str(project))
    else:
        done = script(hook, project, stdin=json.dumps({"session_id": "s1", "cwd": str(project), "trigger": "auto"}))
    assert done.returncode == 0 and "leads out of the project" in done.stderr  # hooks never fail the session
    assert untouched(outside)


def test_a_hardlink_out_is_refused(project, outside):
    os.link(outside / "victim.md", project / "docs" / "lessons.md")
    outcome = lessons.add_outcome(project / "docs" / "lessons.md", "Do X", "c", "d",
                                  writer=WriteService(Vault.open(project)), caller=ME)
    assert outcome.status == "refused" and "hard links" in outcome.message
    assert untouched(outside)


def test_a_fifo_at_a_note_path_never_blocks_nor_holds_a_lock(project):
    fifo = project / "docs" / "lessons.md"
    os.mkfifo(fifo)
    service = WriteService(Vault.open(project), lock_wait=0.5)
    started = time.monotonic()
    outcome = bounded(lessons.add_outcome, fifo, "Do X", "c", "d", writer=service, caller=ME)
    assert outcome.status == "refused" and "FIFO" in outcome.message
    note = bounded(service.write, ME, WriteRequest("create", "docs/pipe.md", body="b", frontmatter={"title": "t"}))
    assert note.status == "written"
    os.mkfifo(project / "docs" / "other.md")
    refused = bounded(service.write, ME, WriteRequest("replace", "docs/other.md", body="b", base_version="0" * 16))
    assert refused.status == "refused" and "FIFO" in refused.message
    again = bounded(lessons.add_outcome, fifo, "Do Y", "c", "d", writer=service, caller=ME)  # its lock was released
    assert again.status == "refused"
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("path", [".git/x.md", ".GIT/config.md", ".vault-index/x.md", ".Vault-Index/x.md",
                                  "secrets/x.md", "SeCrEtS/x.md", "notes/secrets/x.md", "notes/.hidden/x.md",
                                  "notes/../.git/x.md", "notes/.x.md", "notes/x.txt",
                                  # the read side's folding (NFKC, trailing dots and spaces): one rule for both
                                  "Secrets./x.md", "secrets /x.md", "\uff53\uff45\uff43\uff52\uff45\uff54\uff53/x.md"])
def test_writes_into_control_folders_are_refused_in_any_case(project, path):
    (project / ".git").mkdir()
    service = WriteService(Vault.open(project))
    before = sorted(str(p) for p in project.rglob("*"))
    outcome = service.write(ME, WriteRequest("create", path, body="b", frontmatter={"title": "t"}))
    assert outcome.status == "refused", outcome
    updated = service.update_file(ME, path, lambda old: "x", why="x")
    assert updated.status == "refused"
    after = sorted(str(p) for p in project.rglob("*") if ".vault-index" not in p.parts)
    assert after == [p for p in before if ".vault-index" not in Path(p).parts]


@pytest.mark.parametrize("alias", ["alias/a.md", "./notes/./a.md", "notes/../notes/a.md", "notes/A.md"])
def test_a_lock_on_an_aliased_path_serialises_with_the_real_path(project, alias):
    (project / "notes").mkdir()
    (project / "alias").symlink_to(project / "notes", target_is_directory=True)
    holding, release = threading.Event(), threading.Event()

    def slow_index(path):
        holding.set()
        release.wait(10)

    holder = WriteService(Vault.open(project), reindex=slow_index)
    thread = threading.Thread(target=holder.write, args=(ME, WriteRequest("create", "notes/a.md", body="first",
                                                                          frontmatter={"title": "A"})))
    thread.start()
    try:
        assert holding.wait(10)
        waiter = WriteService(Vault.open(project), lock_wait=0.3)
        outcome = waiter.write(ME, WriteRequest("append", alias, body="second"))
        assert outcome.status == "locked" and "being written" in outcome.message
    finally:
        release.set()
        thread.join(10)
    if alias != "notes/A.md":  # the same file, once the holder is done
        assert WriteService(Vault.open(project)).write(ME, WriteRequest("append", alias, body="second")).ok


def test_a_config_typo_is_a_loud_error_not_a_silent_default(project, open_app):
    (project / ".vault-index").mkdir()
    (project / ".vault-index" / "config.yaml").write_text("roles:\n  admin: {read: ['*'], wirte: ['*']}\n")
    app = open_app()
    with pytest.raises(ConfigError, match=r"roles\.admin\.wirte: unknown key"):
        app.vault(project)


def test_a_retry_after_a_failed_reindex_does_not_duplicate_the_lesson(project):
    def read_only_index(path):
        raise OSError(30, "attempt to write a readonly database")

    service = WriteService(Vault.open(project), reindex=read_only_index)
    path = project / "docs" / "lessons.md"
    first = lessons.add_outcome(path, "Do X", "c", "d", writer=service, caller=ME, request_id="lesson-1")
    assert first.status == "written" and first.result == {"id": "L-0001"}
    assert any("not re-indexed" in notice for notice in first.notices)
    retry = lessons.add_outcome(path, "Do X", "c", "d", writer=service, caller=ME, request_id="lesson-1")
    assert retry.status == "written" and retry.result == {"id": "L-0001"}
    assert [x.id for x in lessons.list_lessons(path)] == ["L-0001"]


def test_a_retry_after_a_failed_graph_link_does_not_write_a_second_record(project, tmp_path):
    memory = tmp_path / "memory-is-a-folder.jsonl"
    memory.mkdir()  # the graph cannot be written: a late stage fails after the record landed
    service = WriteService(Vault.open(project))
    folder = project / "docs" / "adr"
    first = adr.record(folder, "Use flock", **SECTIONS, writer=service, caller=ME, request_id="adr-1",
                       memory_file=memory, relates_to=[])
    assert first.status == "written" and any("not linked in the memory graph" in n for n in first.notices)
    retry = adr.record(folder, "Use flock", **SECTIONS, writer=service, caller=ME, request_id="adr-1",
                       memory_file=memory, relates_to=[])
    assert retry.status == "written" and retry.result["path"] == first.result["path"]
    assert [p.name for p in folder.glob("*.md")] == ["0001-use-flock.md"]


def test_promote_through_write_and_a_declared_collection_are_refused(project):
    (project / "research").mkdir()
    service = WriteService(Vault.open(project))
    canonical = service.write(ME, WriteRequest("create", "research/a.md", body="b",
                                               frontmatter={"title": "A", "status": "canonical"}))
    other = service.write(ME, WriteRequest("create", "research/b.md", body="b",
                                           frontmatter={"title": "B", "collection": "pricing"}))
    assert (canonical.status, other.status) == ("invalid", "invalid")
    assert not (project / "research" / "a.md").exists() and not (project / "research" / "b.md").exists()


def test_a_parent_swapped_for_a_symlink_after_the_check_is_caught(project, outside, monkeypatch):
    from vault_index.engine.files import fileio

    (project / "docs" / "notes").mkdir()
    checked = fileio.real_parts

    def check_then_swap(root, path, *named):
        parts = checked(root, path, *named)
        (project / "docs" / "notes").rmdir()  # between the check and the write, a link out appears
        (project / "docs" / "notes").symlink_to(outside, target_is_directory=True)
        return parts

    monkeypatch.setattr(fileio, "real_parts", check_then_swap)
    outcome = WriteService(Vault.open(project)).write(ME, WriteRequest("create", "docs/notes/victim.md", body="b",
                                                                       frontmatter={"title": "t"}))
    assert outcome.status == "refused" and "symlink" in outcome.message
    assert untouched(outside)


def test_the_graph_store_refuses_a_fifo_or_a_hardlink_without_blocking(tmp_path, outside):
    from vault_index.services.graph import graph
    from vault_index.services.graph.graph_rules import GraphFileError

    note = outside / "victim.md"
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    hard = tmp_path / "hard.jsonl"
    os.link(note, hard)
    started = time.monotonic()
    for store, words in ((fifo, "FIFO"), (hard, "hard links")):
        with pytest.raises(GraphFileError, match=words):
            bounded(graph.create, store, entities=[{"name": "X", "entityType": "t", "source": str(note)}])
    assert time.monotonic() - started < 5
    assert untouched(outside)


def test_one_note_reached_through_two_vault_roots_takes_one_lock(project):
    """Two writers that opened the vault at different roots (the project, and docs/ inside it) must
    still exclude each other on docs/lessons.md; with per-root lock folders a lesson was lost."""
    outer = WriteService(Vault.open(project), lock_wait=0.3)
    inner = WriteService(Vault.open(project / "docs"), lock_wait=0.3)
    inside, release = threading.Event(), threading.Event()

    def slow_change(old: str | None) -> str:
        inside.set()
        assert release.wait(10)
        return (old or "") + "outer\n"

    holder = threading.Thread(target=outer.update_file, args=(ME, "docs/lessons.md", slow_change),
                              kwargs={"why": "hold the lock"})
    holder.start()
    try:
        assert inside.wait(10)
        second = inner.update_file(ME, "lessons.md", lambda old: (old or "") + "inner\n", why="meanwhile")
        assert second.status == "locked", second
    finally:
        release.set()
        holder.join(10)
    assert (project / "docs" / "lessons.md").read_text() == "outer\n"
