"""Issue 36 item 15: a note the person made read-only (chmod a-w) is refused by every write, as an
editor refuses it, with a message that says how to allow it. Before, the atomic replace renamed a
new file over it (the folder's permission allows that) and every operation wrote it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from vault_index.services.vault.vault import Vault
from vault_index.services.writes.edit_ops import write_op
from vault_index.services.writes.write import Caller, WriteService, local_identity

NOTE = "# Plan\n\n## Steps\n\nfirst step\n"


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "plan.md").write_text(NOTE)
    (root / "other.md").write_text("# Other\n\nsee [plan](plan.md)\n")
    return root


def _caller(service: WriteService) -> Caller:
    return Caller(local_identity(), service.vault.local_role, "test")


def _frozen(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), os.stat(path).st_mode


@pytest.mark.parametrize("op, fields", [
    ("replace", {"body": "new\n"}), ("append", {"body": "more\n"}), ("prepend", {"body": "first\n"}),
    ("replace_section", {"heading": "Steps", "body": "other\n"}), ("find_replace", {"find": "first", "body": "1st"}),
])
def test_every_edit_refuses_a_read_only_note(folder, op, fields):
    service = WriteService(Vault.open(folder))
    note = folder / "plan.md"
    version = service.read(_caller(service), "plan.md").version
    note.chmod(0o444)
    before = _frozen(note)
    outcome = write_op(service, _caller(service), op, "plan.md", base_version=version, **fields)
    assert outcome.status == "refused", (outcome.status, outcome.message)  # old code: written
    assert "read-only" in outcome.message and "chmod u+w" in outcome.message
    assert _frozen(note) == before
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]  # no temp file left behind
    note.chmod(0o644)  # made writable again, the same edit goes through
    assert write_op(service, _caller(service), op, "plan.md", base_version=version, **fields).status == "written"


def test_a_move_that_would_rewrite_a_read_only_note_moves_nothing(folder):
    service = WriteService(Vault.open(folder))
    linker = folder / "other.md"
    linker.chmod(0o444)
    before = _frozen(linker)
    outcome = write_op(service, _caller(service), "move", "plan.md", new_path="plans/steps.md")
    assert outcome.status == "refused" and "other.md is read-only" in outcome.message, outcome.message
    assert (folder / "plan.md").exists() and not (folder / "plans" / "steps.md").exists()  # old: moved, rewritten
    assert _frozen(linker) == before


def test_a_curated_file_written_by_update_file_is_refused_too(folder):
    service = WriteService(Vault.open(folder))
    lessons = folder / "lessons.md"
    lessons.write_text("# Lessons\n")
    lessons.chmod(0o400)
    outcome = service.update_file(_caller(service), "lessons.md", lambda old: (old or "") + "- one\n", why="test")
    assert outcome.status == "refused" and lessons.read_text() == "# Lessons\n"
