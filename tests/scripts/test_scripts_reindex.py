"""scripts/learn.py and scripts/adr.py re-index what they write, as the MCP tools do (one write path)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

from helpers import REPO, make_settings, write
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App


def run(script: str, project, db, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "VAULT_"))}
    env.update(CLAUDE_PROJECT_DIR=str(project), VAULT_INDEX_DB=str(db), VAULT_EMBED_MODEL="none",
               VAULT_RERANK="0", VAULT_MEMORY_FILE=str(project.parent / "memory.jsonl"))
    return subprocess.run([sys.executable, str(REPO / "scripts" / script), *args], capture_output=True, text=True,
                          env=env, cwd=project, timeout=120)


def indexed_hash(tmp_path, path) -> str | None:
    app = App.open(make_settings(tmp_path), models=Models.fixed(None, None))
    try:
        state = app.store.file_state(str(path.resolve()))
        return state.hash if state else None
    finally:
        app.close()


def test_learn_and_adr_reindex_through_the_write_service(tmp_path):
    project = tmp_path / "project"
    write(project, "docs/readme.md", "# Docs\n")
    app = App.open(make_settings(tmp_path), models=Models.fixed(None, None))
    app.index([str(project / "docs")])
    app.close()
    db = make_settings(tmp_path).db_path

    added = run("learn.py", project, db, "add", "--lesson", "Re-index what you write", "--cause", "a twin forgot",
                "--detect", "this test")
    assert (added.returncode, added.stdout, added.stderr) == (0, "L-0001\n", "")
    lessons_md = project / "docs" / "lessons.md"
    assert indexed_hash(tmp_path, lessons_md) == hashlib.sha256(lessons_md.read_bytes()).hexdigest()

    made = run("adr.py", project, db, "new", "Index on write", "--context", "c", "--options", "o", "--decision", "d",
               "--no-graph")
    assert made.returncode == 0, made.stderr
    record = project / "docs" / "adr" / "0001-index-on-write.md"
    assert made.stdout.strip() == str(record)
    assert indexed_hash(tmp_path, record) == hashlib.sha256(record.read_bytes()).hexdigest()
