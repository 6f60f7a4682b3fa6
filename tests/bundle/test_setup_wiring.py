"""setup.py's Claude Code wiring: idempotent, and never changes an entry that is the user's own."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import load_setup

setup = load_setup()

PYTHON = Path(sys.executable)


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def commands(settings: dict, event: str) -> list[str]:
    return [h["command"] for g in settings["hooks"].get(event, []) for h in g["hooks"]]


def test_first_run_writes_the_server_and_all_five_hooks(tmp_path):
    done = setup.wire(tmp_path, PYTHON)
    assert done == {".mcp.json": "written", ".claude/settings.json": "written"}
    server = read(tmp_path / ".mcp.json")["mcpServers"]["vault-index"]
    assert server["command"] == str(PYTHON)
    assert server["args"][:3] == ["-m", "vault_index", "--memory-file"]
    assert server["args"][3].startswith("${VAULT_MEMORY_FILE:-") and server["args"][3].endswith("memory.jsonl}")
    settings = read(tmp_path / ".claude/settings.json")
    assert set(settings["hooks"]) == {"SessionStart", "PostToolUse", "UserPromptSubmit", "PreCompact", "Stop"}
    assert "scripts/capture_hook.py" in commands(settings, "Stop")[0]
    assert settings["hooks"]["PostToolUse"][0]["matcher"] == "Write|Edit|MultiEdit"
    assert "scripts/invariants.py\" --hook" in commands(settings, "SessionStart")[0]
    for event, *_ in setup.HOOKS:
        assert all(c.startswith('"$CLAUDE_PROJECT_DIR/') for c in commands(settings, event))


def test_second_run_changes_nothing(tmp_path):
    setup.wire(tmp_path, PYTHON, memory_file=str(tmp_path / "graph.jsonl"))
    before = {p: p.read_bytes() for p in (tmp_path / ".mcp.json", tmp_path / ".claude/settings.json")}
    mtimes = {p: p.stat().st_mtime_ns for p in before}
    assert setup.wire(tmp_path, PYTHON) == {".mcp.json": "unchanged", ".claude/settings.json": "unchanged"}
    assert {p: p.read_bytes() for p in before} == before
    assert {p: p.stat().st_mtime_ns for p in before} == mtimes
    # the memory file chosen once is remembered, not reset to the default
    args = read(tmp_path / ".mcp.json")["mcpServers"]["vault-index"]["args"]
    assert args[3] == str(tmp_path / "graph.jsonl")


def test_user_entries_survive_and_a_changed_server_is_kept(tmp_path):
    (tmp_path / ".claude").mkdir()
    mine = {"command": "/opt/my/vault-index", "args": ["--memory-file", "/data/mine.jsonl"]}
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}, "vault-index": mine}}))
    own_hook = {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"}]}
    (tmp_path / ".claude/settings.json").write_text(json.dumps({
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {"PostToolUse": [own_hook],
                  "PreCompact": [{"hooks": [{"type": "command",
                                             "command": "python my/scripts/precompact_snapshot.py"}]}]},
    }))
    done = setup.wire(tmp_path, PYTHON)
    assert done[".mcp.json"] == "kept"
    config = read(tmp_path / ".mcp.json")
    assert config["mcpServers"] == {"other": {"command": "x"}, "vault-index": mine}
    settings = read(tmp_path / ".claude/settings.json")
    assert settings["permissions"] == {"allow": ["Bash(ls:*)"]}
    assert settings["hooks"]["PostToolUse"][0] == own_hook  # still first, untouched
    assert any("reindex_hook.py" in c for c in commands(settings, "PostToolUse"))
    # a PreCompact hook that already runs the snapshot script is the user's choice: no duplicate
    assert commands(settings, "PreCompact") == ["python my/scripts/precompact_snapshot.py"]


def test_an_entry_setup_wrote_earlier_is_updated(tmp_path):
    setup.wire(tmp_path, Path("/old/python"))
    setup.wire(tmp_path, PYTHON)
    assert read(tmp_path / ".mcp.json")["mcpServers"]["vault-index"]["command"] == str(PYTHON)


@pytest.mark.parametrize("content", ["{not json", "[1, 2]"])
def test_a_broken_file_is_refused_and_left_alone(tmp_path, content):
    (tmp_path / ".mcp.json").write_text(content)
    with pytest.raises(SystemExit) as exc:
        setup.wire(tmp_path, PYTHON)
    assert ".mcp.json" in str(exc.value) and "fix" in str(exc.value)
    assert (tmp_path / ".mcp.json").read_text() == content


@pytest.mark.parametrize("settings", [
    {"hooks": {"PostToolUse": {"matcher": "Write"}}},
    {"hooks": {"PreCompact": ["echo"]}},
    {"hooks": []},
])
def test_settings_it_cannot_merge_stop_it_before_anything_is_written(tmp_path, settings):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude/settings.json").write_text(json.dumps(settings))
    with pytest.raises(SystemExit) as exc:
        setup.wire(tmp_path, PYTHON)
    assert "settings.json" in str(exc.value) and "fix it" in str(exc.value)
    assert not (tmp_path / ".mcp.json").exists()  # nothing half-wired
    assert json.loads((tmp_path / ".claude/settings.json").read_text()) == settings
