"""scripts/reindex_hook.py as Claude Code runs it after Write / Edit / MultiEdit.

The hook runs in a subprocess, so the fake embedder cannot reach it: these tests use the
keyword-only mode (VAULT_EMBED_MODEL=none); the last one runs the shipped model.
"""

from __future__ import annotations

import os

import pytest
from helpers import GARDEN, make_settings, write
from hookrun import answer, hook_env, run_script
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App


@pytest.fixture
def indexed(tmp_path, vault):
    """The conftest vault, keyword-indexed into tmp_path/index.db; yields (vault, db)."""
    app = App.open(make_settings(tmp_path), models=Models.fixed(None))
    app.index([str(vault)])
    app.close()
    return vault, tmp_path / "index.db"


def post_tool_use(cwd, tool: str, file_path: str, **tool_input) -> dict:
    response = {"filePath": file_path, **({"type": "create"} if tool == "Write" else {"userModified": False})}
    return {"session_id": "sess-1", "transcript_path": str(cwd / "t.jsonl"), "cwd": str(cwd),
            "permission_mode": "acceptEdits", "hook_event_name": "PostToolUse", "tool_name": tool,
            "tool_input": {"file_path": file_path, **tool_input}, "tool_response": response,
            "tool_use_id": "toolu_01"}


def hook(payload: dict, db) -> None:
    assert answer(run_script("reindex_hook.py", payload, hook_env(VAULT_INDEX_DB=str(db)))) is None  # silent


def paths_for(db, tmp_path, query: str) -> set[str]:
    app = App.open(make_settings(tmp_path), models=Models.fixed(None))
    try:
        assert app.settings.db_path == db
        return {os.path.relpath(h.path, tmp_path / "vault") for h in app.search(query, mode="keyword").hits}
    finally:
        app.close()


def _bump(path) -> None:
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 10_000_000_000))


def test_a_written_note_then_an_edit_are_searchable_after_the_hook(indexed, tmp_path):
    vault, db = indexed
    write(vault, "notes/battery.md", "# Battery\n\nThe quokkacell pack lasts nine months.\n")
    hook(post_tool_use(vault, "Write", "notes/battery.md", content="..."), db)  # relative to cwd
    assert paths_for(db, tmp_path, "quokkacell") == {"notes/battery.md"}

    garden = vault / "garden.md"
    garden.write_text(GARDEN.replace("Drip irrigation", "Wombatdrip irrigation"), encoding="utf-8")
    _bump(garden)
    hook(post_tool_use(vault, "Edit", str(garden), old_string="Drip", new_string="Wombatdrip"), db)
    assert paths_for(db, tmp_path, "wombatdrip") == {"garden.md"}

    garden.write_text(GARDEN.replace("Drip irrigation", "Numbatdrip irrigation"), encoding="utf-8")
    _bump(garden)
    hook(post_tool_use(vault, "MultiEdit", str(garden), edits=[{"old_string": "a", "new_string": "b"}]), db)
    assert paths_for(db, tmp_path, "numbatdrip") == {"garden.md"}
    assert paths_for(db, tmp_path, "wombatdrip") == set()  # the old text left the index


def test_files_the_index_does_not_own_are_left_out(indexed, tmp_path):
    vault, db = indexed
    outside = write(tmp_path / "elsewhere", "loose.md", "# Loose\n\nquokkaloose text\n")
    secret = write(vault, "secrets/more.md", "# Keys\n\nquokkasecret = 1\n")
    hidden = write(vault, ".hidden/more.md", "# Hidden\n\nquokkahidden\n")
    for path in (outside, secret, hidden):
        hook(post_tool_use(vault, "Write", str(path), content="..."), db)
    for word in ("quokkaloose", "quokkasecret", "quokkahidden"):
        assert paths_for(db, tmp_path, word) == set(), word


def test_a_failed_tool_is_not_reindexed(indexed, tmp_path):
    vault, db = indexed
    write(vault, "failed.md", "# Failed\n\nquokkafail\n")
    payload = post_tool_use(vault, "Write", str(vault / "failed.md"), content="...")
    payload["tool_response"] = {"success": False, "error": "permission denied"}
    hook(payload, db)
    assert paths_for(db, tmp_path, "quokkafail") == set()


def test_no_index_yet_means_no_index_file_is_created(tmp_path, vault):
    db = tmp_path / "never" / "index.db"
    hook(post_tool_use(vault, "Write", str(vault / "garden.md"), content="..."), db)
    assert not db.exists() and not db.parent.exists()


@pytest.mark.real_model
def test_with_live_vectors_the_hook_embeds_the_changed_chunk(tmp_path, vault, shipped_model_cache):
    """The shipped MiniLM, as a session whose index has vectors runs the hook."""
    settings = make_settings(tmp_path)
    env = hook_env(VAULT_INDEX_DB=str(settings.db_path), VAULT_EMBED_MODEL="shipped:minilm",
                   VAULT_MODEL_CACHE=str(shipped_model_cache))
    models = Models("shipped:minilm", "none", shipped_model_cache, rerank=False)
    app = App.open(settings, models=models)
    app.index([str(vault)])
    fingerprint = models.embedder().fingerprint
    app.close()
    write(vault, "notes/pump.md", "# Pump\n\nThe irrigation pump runs on a solar panel.\n")
    assert answer(run_script("reindex_hook.py", post_tool_use(vault, "Write", "notes/pump.md"), env)) is None
    app = App.open(settings, models=models)
    try:
        assert app.store.chunks_missing_vectors(fingerprint) == []
        hits = app.search("which device waters the garden using sunlight", mode="vector", limit=3).hits
        assert hits and hits[0].path.endswith("pump.md")
    finally:
        app.close()
