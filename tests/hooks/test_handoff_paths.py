"""In a clone of vault-index, /handoff and the pre-compact snapshot write to the personal folder
(config.content_dir); the path they print must be one that exists, not a docs/handoffs/...
relative to the clone, where there is no such file (issue 21)."""

from __future__ import annotations

import json
from pathlib import Path

from hookrun import FIXTURES, hook_env, run_script

LONG = FIXTURES / "long_session.jsonl"


def _clone(tmp_path) -> Path:
    """A folder config.is_tool_checkout takes for a clone of vault-index."""
    clone = tmp_path / "vault-index"
    (clone / "mcp" / "vault_index").mkdir(parents=True)
    (clone / "mcp" / "vault_index" / "__init__.py").write_text("")
    (clone / "setup.py").write_text("")
    return clone


def test_handoff_in_a_clone_prints_the_real_path_of_the_note(tmp_path):
    clone, home = _clone(tmp_path), tmp_path / "home"
    env = hook_env(CLAUDE_PROJECT_DIR=str(clone), VAULT_INDEX_HOME=str(home))
    done = run_script("handoff.py", "", env, args=("new", "--topic", "clone work", "--session", "s-1",
                                                   "--transcript", str(LONG)), cwd=clone)
    assert done.returncode == 0 and not done.stderr, done.stderr
    shown = done.stdout.decode().splitlines()[0]
    assert Path(shown).is_absolute() and Path(shown).is_file(), shown
    assert Path(shown).parent == (home / "personal" / "docs" / "handoffs").resolve()
    assert not (clone / "docs").exists()  # nothing went into the clone
    out = json.loads(run_script("handoff.py", "", env, args=("new", "--session", "s-2", "--transcript", str(LONG),
                                                             "--json"), cwd=clone).stdout)
    assert Path(out["path"]).is_file() and out["path"] in out["card"]


def test_precompact_snapshot_in_a_clone_names_a_file_that_exists(tmp_path):
    clone, home = _clone(tmp_path), tmp_path / "home"
    env = hook_env(CLAUDE_PROJECT_DIR=str(clone), VAULT_INDEX_HOME=str(home))
    payload = {"session_id": "5f0c2d1e-8a47", "transcript_path": str(LONG), "cwd": str(clone),
               "hook_event_name": "PreCompact", "trigger": "auto"}
    done = run_script("precompact_snapshot.py", payload, env, cwd=clone)
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    shown = done.stdout.decode().strip().rsplit(" ", 1)[1]
    assert Path(shown).is_absolute() and Path(shown).is_file(), shown
    assert Path(shown).parent == (home / "personal" / "docs" / "handoffs" / "auto").resolve()
