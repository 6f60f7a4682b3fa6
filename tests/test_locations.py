"""locations: the index path in plain strings (what the edit hook uses) equals config's Paths."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from helpers import REPO
from vault_index import config, locations


@pytest.fixture
def clean(monkeypatch, tmp_path):
    for name in ("VAULT_INDEX_DB", "VAULT_PROJECT", "CLAUDE_PROJECT_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VAULT_INDEX_HOME", str(tmp_path / "home"))
    return tmp_path


def reference_slug(project: Path) -> str:
    """project_slug as config computed it before locations existed (pathlib, re, hashlib)."""
    import re

    resolved = str(Path(project).expanduser().resolve())
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(resolved).name).strip("-.")[:40] or "root"
    return f"{name}-{hashlib.sha256(resolved.encode('utf-8')).hexdigest()[:8]}"


@pytest.mark.parametrize("name", ["app", "my project (copy)", "--x--", "ünïcode dir", "a" * 60, ".hidden", "é",
                                  "a -- b", "x!!y..z", "tab\tname", "日本語"])
def test_project_slug_matches_the_pathlib_version(clean, name):
    folder = clean / "work" / name
    folder.mkdir(parents=True)
    assert locations.project_slug(str(folder)) == reference_slug(folder) == config.project_slug(folder)


def test_a_symlinked_project_resolves_to_its_target(clean):
    real = clean / "real"
    real.mkdir()
    link = clean / "link"
    link.symlink_to(real)
    assert locations.project_slug(str(link)) == reference_slug(link) == reference_slug(real)


def test_builtin_sha256_is_hashlibs():
    for data in (b"", b"abc", "/home/ü/project".encode()):
        assert locations._sha256_hex(data) == hashlib.sha256(data).hexdigest()


def test_each_way_of_naming_the_index_gives_configs_path(clean, monkeypatch):
    project = clean / "proj"
    project.mkdir()
    cases = [({}, clean / "home" / "vault-index.db"),
             ({"CLAUDE_PROJECT_DIR": str(project)}, None),
             ({"VAULT_PROJECT": str(project), "CLAUDE_PROJECT_DIR": str(REPO)}, None),
             ({"CLAUDE_PROJECT_DIR": str(REPO)}, clean / "home" / "vault-index.db"),  # the tool checkout
             ({"VAULT_INDEX_DB": "~/elsewhere/i.db", "CLAUDE_PROJECT_DIR": str(project)},
              Path("~/elsewhere/i.db").expanduser())]
    for env, expected in cases:
        for name in ("VAULT_INDEX_DB", "VAULT_PROJECT", "CLAUDE_PROJECT_DIR"):
            monkeypatch.delenv(name, raising=False)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        assert Path(locations.default_db_path()) == config.default_db_path()
        if expected is None:  # ADR 0020: a named project shares the one index
            expected = clean / "home" / "vault-index.db"
        assert config.default_db_path() == expected, env
