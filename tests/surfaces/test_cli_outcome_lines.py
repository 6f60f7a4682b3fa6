"""The line each CLI write command prints for a person says its outcome once (walkthrough A:
`promote` printed "written: drafts/idea.md written"), names the note, and is followed by the
version the next step takes. Run in-process through main(), as a terminal in the vault runs it."""

from __future__ import annotations

import re

import pytest
from helpers import fresh_machine
from vault_index.services.curation.scaffold import scaffold
from vault_index.surfaces.cli import main

BODY = "# Kiwi\n\n## Eggs\n\nHuge eggs.\n\n## Diet\n\nWorms.\n"


@pytest.fixture
def vault(tmp_path, monkeypatch):
    fresh_machine(monkeypatch, tmp_path)
    root = tmp_path / "v"
    scaffold(root)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(root))
    monkeypatch.chdir(root)
    return root


def _said(capsys, *argv: str) -> tuple[str, str]:
    """(the outcome line, the version printed below it) of one successful command."""
    assert main(list(argv)) == 0, capsys.readouterr()
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[1].startswith("version "), lines
    return lines[0], lines[1].split()[1]


def test_every_write_command_says_written_once(vault, capsys):
    note = "drafts/kiwi.md"
    said = {}
    said["write"], version = _said(capsys, "write", note, "--body", BODY, "--set", "title=Kiwi", "--set",
                                   "confidence=high", "--set", "ttl_days=30", "--frontmatter",
                                   '{"sources": ["field guide"]}')
    said["append"], version = _said(capsys, "append", note, "--body", "## Range\n\nNew Zealand.\n")
    said["prepend"], version = _said(capsys, "prepend", note, "--body", "A flightless bird.")
    said["replace-section"], version = _said(capsys, "replace-section", note, "Eggs", "--body", "Very large eggs.",
                                             "--base-version", version)
    said["find-replace"], version = _said(capsys, "find-replace", note, "Worms", "Grubs")
    said["promote"], version = _said(capsys, "promote", note, "--base-version", version)
    said["deprecate"], version = _said(capsys, "deprecate", note, "--reason", "merged elsewhere",
                                       "--base-version", version)
    said["move"], _ = _said(capsys, "move", note, "drafts/kiwi-bird.md")
    for command, line in said.items():
        words = re.findall(r"[\w-]+", line.casefold())
        assert words.count("written") == 1, (command, line)
        assert "kiwi" in line, (command, line)  # the line names the note it wrote
    assert (vault / "drafts" / "kiwi-bird.md").is_file()


def test_an_outcome_that_does_not_say_its_status_keeps_it_in_front(vault, capsys):
    assert main(["write", "drafts/x.md", "--body", "x", "--set", "title=X", "--set", "status=canonical"]) != 0
    line = capsys.readouterr().err.splitlines()[0]
    status, _, message = line.partition(": ")
    assert status in ("invalid", "refused") and status not in message.casefold() and "drafts/x.md" in message
