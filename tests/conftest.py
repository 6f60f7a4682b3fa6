"""Shared fixtures: tmp vaults and apps on a tmp index with the fake models from helpers.py."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import BIKE, GARDEN, OLD_RUNBOOK, SECRET, SOURDOUGH, FakeEmbedder, make_settings, write
from vault_index.engine.models import Models
from vault_index.services.app import App

# Document locks live in one folder per user (engine/fileio.machine_locks_dir); the suite and the
# processes it spawns share a throwaway one instead of the person's ~/.local/state.
os.environ.setdefault("VAULT_LOCK_DIR", tempfile.mkdtemp(prefix="vault-index-test-locks-"))
# Indexes, the invariants' stamp and the personal folder live under VAULT_INDEX_HOME (default
# ~/.mcp-memory); the suite keeps them in a throwaway one too (docs/adr/0012).
os.environ.setdefault("VAULT_INDEX_HOME", tempfile.mkdtemp(prefix="vault-index-test-home-"))


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def open_app(tmp_path) -> Callable[..., App]:
    """Factory: App.open on tmp_path/index.db with the given (fake) models; closed at teardown."""
    opened: list[App] = []

    def factory(embedder=None, reranker=None, db_name: str = "index.db") -> App:
        app = App.open(make_settings(tmp_path, db_name), models=Models.fixed(embedder, reranker))
        opened.append(app)
        return app

    yield factory
    for app in opened:
        try:
            app.close()
        except Exception:  # noqa: BLE001 - already closed by the test
            pass


@pytest.fixture
def vault(tmp_path) -> Path:
    """A small vault: nested headings, tags, a deprecated note, a subfolder and a secrets/ folder."""
    root = tmp_path / "vault"
    write(root, "garden.md", GARDEN)
    write(root, "bike.md", BIKE)
    write(root, "kitchen/sourdough.md", SOURDOUGH)
    write(root, "ops/old-runbook.md", OLD_RUNBOOK)
    write(root, "secrets/keys.md", SECRET)
    write(root, ".hidden/notes.md", "# Hidden\n\nzanzibarhidden text\n")
    return root
