"""A person's save during a move is never lost, and an odd file never stops one (a hostile audit,
stop 34). Each save is made at the last moment the move could miss it: just before the linking
note is replaced, just before the note is renamed. On the old code every one of them was lost
with an exit 0, a FIFO hung every move, and a swap that failed past the exchange deleted the file
that was swapped out."""

from __future__ import annotations

import os
import subprocess
import threading

import pytest
from vault_index.engine.files import guarded_replace
from vault_index.services.vault.vault import Vault
from vault_index.services.writes import move as move_module
from vault_index.services.writes.move import MoveRequest
from vault_index.services.writes.write import Caller, WriteRequest, WriteService

pytestmark = pytest.mark.faults


@pytest.fixture
def notes(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    (tmp_path / "gitconfig").write_text("[user]\n\tname = Pat Person\n\temail = pat@example.org\n")
    root = tmp_path / "notes"
    root.mkdir()
    subprocess.run(["git", "-C", str(root), "init", "-q"], check=True)
    (root / "a.md").write_text("# A\n\nthe moved note\n")
    (root / "l.md").write_text("# L\n\nsee [[a]]\n")
    service = WriteService(Vault.open(root))
    return root, service, Caller.local(service.vault, agent="claude-code")


def person_saves(path, extra: str) -> None:
    """An editor's atomic save: a temp file renamed over the note."""
    temp = path.with_name(f".{path.name}.swp")
    temp.write_text(path.read_text() + extra)
    os.replace(temp, path)


def test_a_save_of_a_linking_note_during_the_move_is_kept_and_said(notes, monkeypatch):
    root, service, caller = notes
    real = guarded_replace._write_temp

    def save_first(dir_fd, temp, data, mode):
        if temp.startswith(".l.md."):
            person_saves(root / "l.md", "PERSON EDIT\n")
        return real(dir_fd, temp, data, mode)

    monkeypatch.setattr(guarded_replace, "_write_temp", save_first)
    outcome = move_module.move(service, caller, MoveRequest("a.md", "b.md"))
    assert outcome.status == "written" and (root / "b.md").is_file()
    assert "PERSON EDIT" in (root / "l.md").read_text()  # old code: overwritten by the rewrite
    assert any("l.md" in n and "changed during the move" in n for n in outcome.notices), outcome.notices


def test_a_save_of_the_note_just_before_its_rename_is_moved_not_deleted(notes, monkeypatch):
    root, service, caller = notes
    real = guarded_replace.rename_noreplace

    def save_first(src_fd, src, dst_fd, dst):
        person_saves(root / "a.md", "PERSON EDIT\n")
        return real(src_fd, src, dst_fd, dst)

    monkeypatch.setattr(guarded_replace, "rename_noreplace", save_first)
    outcome = move_module.move(service, caller, MoveRequest("a.md", "b.md"))
    assert outcome.status == "written"
    assert "PERSON EDIT" in (root / "b.md").read_text()  # old code (link, then unlink): the save was unlinked
    assert not (root / "a.md").exists()


def test_a_move_whose_old_name_cannot_be_removed_leaves_one_name(notes, monkeypatch):
    root, service, caller = notes
    monkeypatch.setattr(move_module, "_rename_noreplace", lambda *args: False)  # the link-then-unlink path
    real_unlink = os.unlink

    def refuse(name, *args, dir_fd=None):
        if name == "a.md" and dir_fd is not None:
            raise PermissionError(13, "Permission denied", name)
        return real_unlink(name, *args, dir_fd=dir_fd)

    monkeypatch.setattr(move_module.os, "unlink", refuse)
    outcome = move_module.move(service, caller, MoveRequest("a.md", "b.md"))
    monkeypatch.setattr(move_module.os, "unlink", real_unlink)
    assert outcome.status == "failed" and "nothing changed" in outcome.message
    assert (root / "a.md").stat().st_nlink == 1 and not (root / "b.md").exists()  # old code: a second link


def test_a_fifo_named_like_a_note_does_not_hang_a_move(notes):
    root, service, caller = notes
    os.mkfifo(root / "pipe.md")
    done = []
    mover = threading.Thread(target=lambda: done.append(move_module.move(service, caller, MoveRequest("a.md", "b.md"))),
                             daemon=True)
    mover.start()
    mover.join(30)
    if mover.is_alive():  # old code: blocked in open() until a writer came; free it, then fail
        with open(root / "pipe.md", "w"):
            pass
        pytest.fail("the move hung on a FIFO named like a note")
    assert done[0].status == "written"


def test_a_failure_after_the_exchange_puts_the_swapped_out_file_back(notes, monkeypatch):
    """Their file became unreadable to us (another user's 0600 save, a link swapped in): the write
    fails, and their file is at the note's name again instead of deleted with the temp file."""
    root, service, caller = notes
    if not guarded_replace.exchange_supported():
        pytest.skip("no renameat2 here")
    real = guarded_replace._settled_bytes

    def save_then_fail(dir_fd, temp):
        raise PermissionError(13, "Permission denied", temp)

    monkeypatch.setattr(guarded_replace, "_settled_bytes", save_then_fail)
    before = (root / "l.md").read_bytes()
    outcome = service.write(caller, WriteRequest("append", "l.md", body="agent line"))
    monkeypatch.setattr(guarded_replace, "_settled_bytes", real)
    assert outcome.status == "failed", outcome
    assert (root / "l.md").read_bytes() == before  # old code: the file swapped out was deleted
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(".l.md")) == []
