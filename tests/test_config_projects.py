"""config: which index and which content folder a process uses (docs/adr/0012)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import REPO
from vault_index import config


@pytest.fixture
def clean(monkeypatch, tmp_path):
    for name in ("VAULT_INDEX_DB", "VAULT_PROJECT", "CLAUDE_PROJECT_DIR", "VAULT_CONTENT_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VAULT_INDEX_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_no_project_means_the_personal_index(clean):
    assert config.default_db_path() == clean / "vault-index.db"


def test_every_workspace_shares_one_index(clean, monkeypatch, tmp_path):
    """ADR 0020: a named project no longer gets a file of its own; its sources carry its scope."""
    a = tmp_path / "one" / "app"
    a.mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(a))
    assert config.default_db_path() == clean / "vault-index.db"
    monkeypatch.setenv("VAULT_INDEX_DB", str(tmp_path / "elsewhere.db"))
    assert config.default_db_path() == tmp_path / "elsewhere.db"


def test_the_tool_checkout_is_no_project_and_its_content_goes_to_the_personal_folder(clean, monkeypatch):
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(REPO))
    assert config.is_tool_checkout(REPO)
    assert config.default_db_path() == clean / "vault-index.db"
    assert config.content_dir() == clean / config.PERSONAL_FOLDER
    assert not (clean / config.PERSONAL_FOLDER).exists()
    assert config.content_root() == clean / config.PERSONAL_FOLDER and (clean / config.PERSONAL_FOLDER).is_dir()


def test_a_users_project_keeps_its_content_and_the_overrides_win(clean, monkeypatch, tmp_path):
    project = tmp_path / "mine"
    project.mkdir()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    assert config.content_dir() == project.resolve()
    monkeypatch.setenv("VAULT_CONTENT_DIR", str(tmp_path / "elsewhere"))
    assert config.content_dir() == (tmp_path / "elsewhere").resolve()
    monkeypatch.setenv("VAULT_INDEX_DB", str(tmp_path / "x.db"))
    assert config.default_db_path() == Path(tmp_path / "x.db")
    assert config.Settings.from_env().db_path == Path(tmp_path / "x.db")
