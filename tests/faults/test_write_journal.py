"""Exactly-once writes (issue 36 items 8 and 9): a write or a move killed at a named step of its
pipeline is finished by its retry, by the next write, or by the next start, and never applied twice.

Each test forks a writer that kills itself at one step (services/writes/journal.FAULT_ENV), then
checks the files, the git history and the answer of the retry with the same request id.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
from pathlib import Path

import pytest
from vault_index.engine.files import fileio
from vault_index.services.vault.vault import Vault
from vault_index.services.writes import journal
from vault_index.services.writes.edit_ops import EditRequest
from vault_index.services.writes.write import Caller, WriteRequest, WriteService
from vault_index.services.writes.write_types import MoveRequest

pytestmark = [pytest.mark.faults, pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")]

CONFIG = "roles: {owner: {read: ['*'], write: ['*']}}\nlocal_role: owner\ngit: {commit: true}\n"
ME = Caller("Pat Person <pat@example.org>", "owner", "journal-test")
LINKER = "# Linker {n}\n\nSee [[plan]] and [the plan](../work/plan.md).\n"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("VAULT_LOCK_DIR", str(tmp_path / "locks"))
    (tmp_path / "gitconfig").write_text("[user]\n\tname = Pat Person\n\temail = pat@example.org\n")
    root = tmp_path / "vault"
    for folder in ("work", "notes", ".vault-index"):
        (root / folder).mkdir(parents=True)
    (root / ".vault-index" / "config.yaml").write_text(CONFIG)
    (root / ".vault-index" / ".gitignore").write_text(fileio.STATE_GITIGNORE)
    (root / "work" / "plan.md").write_text("---\ntitle: Plan\n---\n# Plan\n\nfirst line\n")
    for n in range(3):
        (root / "notes" / f"l{n}.md").write_text(LINKER.format(n=n))
    (root / "notes" / "other.md").write_text("---\ntitle: Other\n---\nother\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seed")
    return root


def killed_at(step: str, action) -> int:
    """Run `action()` in a forked child that kills itself at `step`; its exit code."""
    context = multiprocessing.get_context("fork")

    def child():
        os.environ[journal.FAULT_ENV] = step
        action()
        os._exit(0)

    process = context.Process(target=child)
    process.start()
    process.join(60)
    return process.exitcode


def service(root: Path) -> WriteService:
    return WriteService(Vault.open(root))


def kill_me(*_args, **_kwargs):
    os.kill(os.getpid(), signal.SIGKILL)


def killed_in_reindex(root: Path, action) -> int:
    """`action(service)` in a forked child whose re-index kills it: right after the file is replaced
    (a move: after its rename and its link rewrites). No test hook needed: it holds on old code too."""
    return killed_at("none", lambda: action(WriteService(Vault.open(root), reindex=kill_me)))


def request_commits(root: Path, request_id: str) -> list[str]:
    return git(root, "log", "--format=%H", "-F", f"--grep=Vault-Request-Id: {request_id}").split()


def test_a_write_killed_right_after_its_replace_is_committed_once_by_its_retry(root):
    append = WriteRequest("append", "work/plan.md", body="the appended line", request_id="r-8")
    assert killed_in_reindex(root, lambda s: s.write(ME, append)) == -signal.SIGKILL
    retry = service(root).write(ME, append)
    assert retry.status == "written" and retry.commit, retry  # old code: written, commit None
    assert request_commits(root, "r-8") == [retry.commit]
    assert (root / "work" / "plan.md").read_text().count("the appended line") == 1


def test_a_move_killed_after_its_rename_has_its_links_rewritten_by_its_retry(root, monkeypatch):
    from vault_index.services.writes import move as moving

    move = MoveRequest("work/plan.md", "archive/plan.md", request_id="r-9")

    def killed_at_the_first_link():
        monkeypatch.setattr(moving, "_replace", kill_me)
        service(root).move(ME, move)

    assert killed_at("none", killed_at_the_first_link) == -signal.SIGKILL
    assert (root / "archive" / "plan.md").exists() and "(../work/plan.md)" in (root / "notes" / "l0.md").read_text()
    retry = service(root).move(ME, move)
    assert retry.status == "written" and retry.commit, retry  # old code: not_found, every link broken
    assert all("(../archive/plan.md)" in (root / "notes" / f"l{n}.md").read_text() for n in range(3))


@pytest.mark.parametrize("step", ["intent", "replaced", "reindexed", "committed"])
def test_a_write_killed_at_any_step_is_finished_once_by_its_retry(root, step):
    append = WriteRequest("append", "work/plan.md", body="the appended line", request_id="r-append")
    assert killed_at(step, lambda: service(root).write(ME, append)) == -signal.SIGKILL
    retry = service(root).write(ME, append)
    # old code, killed after the replace: `written` with no commit (the answer stored before it), and
    # killed before that answer was stored: the line appended a second time
    assert retry.status == "written" and retry.commit, retry
    text = (root / "work" / "plan.md").read_text()
    assert text.count("the appended line") == 1
    assert request_commits(root, "r-append") == [retry.commit]
    assert "the appended line" in git(root, "show", f"{retry.commit}:work/plan.md")
    assert git(root, "status", "--porcelain", "--", "work/plan.md") == ""
    again = service(root).write(ME, append)
    assert (again.status, again.commit) == ("written", retry.commit)
    assert (root / "work" / "plan.md").read_text() == text and service(root).requests.pending() == []


def test_the_next_writer_of_the_note_commits_a_dead_writers_change_under_its_own_request(root):
    first = EditRequest("prepend", "work/plan.md", text="dead writer's line", request_id="r-dead")
    assert killed_at("replaced", lambda: service(root).edit(ME, first)) == -signal.SIGKILL
    assert git(root, "status", "--porcelain", "--", "work/plan.md") != ""  # replaced, never committed
    second = service(root).write(ME, WriteRequest("append", "work/plan.md", body="next writer's line",
                                                  request_id="r-next"))
    assert second.status == "written" and second.commit
    (dead,) = request_commits(root, "r-dead")  # old code: none; the next writer's commit carried the line
    assert "dead writer's line" in git(root, "show", f"{dead}:work/plan.md")
    assert "next writer's line" not in git(root, "show", f"{dead}:work/plan.md")
    assert git(root, "rev-parse", f"{second.commit}~1").strip() == dead
    retry = service(root).edit(ME, first)  # the dead writer's retry learns what happened
    assert (retry.status, retry.commit) == ("written", dead)
    assert (root / "work" / "plan.md").read_text().count("dead writer's line") == 1


def test_a_write_killed_before_its_replace_is_written_once_by_its_retry(root):
    view = service(root).read(ME, "work/plan.md")
    replace = WriteRequest("replace", "work/plan.md", body="# Plan\n\nreplaced\n", base_version=view.version,
                           request_id="r-replace")
    assert killed_at("intent", lambda: service(root).write(ME, replace)) == -signal.SIGKILL
    assert "replaced" not in (root / "work" / "plan.md").read_text()
    retry = service(root).write(ME, replace)
    assert retry.status == "written" and retry.commit and request_commits(root, "r-replace") == [retry.commit]


@pytest.mark.parametrize("step", ["renamed", "rewritten", "reindexed", "committed"])
def test_a_move_killed_after_its_rename_is_finished_by_its_retry(root, step):
    move = MoveRequest("work/plan.md", "archive/plan-2026.md", request_id="r-move")
    assert killed_at(step, lambda: service(root).move(ME, move)) == -signal.SIGKILL
    assert not (root / "work" / "plan.md").exists()
    retry = service(root).move(ME, move)  # old code: not_found, and every link left naming work/plan.md
    assert retry.status == "written" and retry.commit, retry
    assert request_commits(root, "r-move") == [retry.commit]
    for n in range(3):
        text = (root / "notes" / f"l{n}.md").read_text()
        assert "[[plan-2026]]" in text and "(../archive/plan-2026.md)" in text and "work/plan" not in text
    assert git(root, "status", "--porcelain") == ""  # the rename and every rewritten link in that commit
    assert service(root).requests.pending() == []


def test_a_move_killed_after_its_rename_is_finished_by_the_next_write(root):
    move = MoveRequest("work/plan.md", "archive/plan.md", request_id="r-move")
    assert killed_at("renamed", lambda: service(root).move(ME, move)) == -signal.SIGKILL
    assert "(../work/plan.md)" in (root / "notes" / "l0.md").read_text()  # broken until someone finishes it
    other = service(root).write(ME, WriteRequest("append", "notes/other.md", body="unrelated"))
    assert other.status == "written"
    assert all("(../archive/plan.md)" in (root / "notes" / f"l{n}.md").read_text() for n in range(3))
    assert len(request_commits(root, "r-move")) == 1 and git(root, "status", "--porcelain") == ""


def test_a_person_who_edits_a_note_after_the_crash_keeps_their_edit(root):
    append = WriteRequest("append", "work/plan.md", body="agent line", request_id="r-a")
    assert killed_at("replaced", lambda: service(root).write(ME, append)) == -signal.SIGKILL
    (root / "work" / "plan.md").write_text("the person rewrote it\n")
    retry = service(root).write(ME, append)
    # the change may or may not be in what they saved: never applied again, and the answer says so
    assert retry.status == "stale" and "cut short" in retry.message
    assert (root / "work" / "plan.md").read_text() == "the person rewrote it\n"


def test_a_server_that_opens_the_vault_finishes_a_move_cut_short(root, open_app, tmp_path):
    from vault_index.surfaces.tool_context import ToolContext, _Vaults
    from vault_index.surfaces.tools_notes import note_read

    move = MoveRequest("work/plan.md", "archive/plan.md", request_id="r-start")
    assert killed_at("renamed", lambda: service(root).move(ME, move)) == -signal.SIGKILL
    app = open_app(None)
    app.index([str(root)])
    app.serve_from(root)
    tc = ToolContext(app, tmp_path / "memory.jsonl", lambda vault, ctx: ME, _Vaults(app, root))
    assert note_read(tc, "notes/other.md", None).status == "ok"  # the first tool call of the server
    assert all("(../archive/plan.md)" in (root / "notes" / f"l{n}.md").read_text() for n in range(3))
    assert len(request_commits(root, "r-start")) == 1
    indexed = app.store.file_state(str((root / "archive" / "plan.md").resolve()))
    assert indexed is not None and app.store.file_state(str((root / "work" / "plan.md").resolve())) is None


def test_a_move_killed_between_git_add_and_git_commit_is_committed_whole(root, monkeypatch):
    """The old name's removal was staged by the killed writer's `git add`: the retry's commit holds it
    (a first fix left it staged, and `git add` refused the name that is neither on disk nor staged)."""
    from vault_index.services.writes import provenance

    move = MoveRequest("work/plan.md", "archive/plan.md", request_id="r-git")
    real_git = provenance._git

    def killed_before_the_commit():
        def git_then_die(root_, env, *args, **kwargs):
            if args and "commit" in args:
                kill_me()
            return real_git(root_, env, *args, **kwargs)

        monkeypatch.setattr(provenance, "_git", git_then_die)
        service(root).move(ME, move)

    assert killed_at("none", killed_before_the_commit) == -signal.SIGKILL
    assert "R  work/plan.md -> archive/plan.md" in git(root, "status", "--porcelain")  # staged by the killed writer
    retry = service(root).move(ME, move)
    assert retry.status == "written" and retry.commit, retry
    assert git(root, "status", "--porcelain") == ""
    assert "work/plan.md" not in git(root, "ls-tree", "-r", "--name-only", retry.commit)


def test_a_write_whose_commit_failed_is_committed_by_its_retry_once_git_works(root):
    """git's index.lock, left by a person's git: the write is `written`, says it is not committed
    and how to finish it; the retry with the same request id commits it (old code: the retry
    answered the first `written`, never committed)."""
    (root / ".git" / "index.lock").write_text("")
    append = WriteRequest("append", "work/plan.md", body="while git was locked", request_id="r-locked")
    first = service(root).write(ME, append)
    assert first.status == "written" and first.commit is None
    assert any("commits it once git works again" in n for n in first.notices), first.notices
    (root / ".git" / "index.lock").unlink()
    other = service(root).write(ME, WriteRequest("append", "notes/other.md", body="unrelated"))
    assert other.commit and request_commits(root, "r-locked") == []  # ordinary writes leave it a minute
    retry = service(root).write(ME, append)
    assert retry.status == "written" and request_commits(root, "r-locked") == [retry.commit]
    assert (root / "work" / "plan.md").read_text().count("while git was locked") == 1
