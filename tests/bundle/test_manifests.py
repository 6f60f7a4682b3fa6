"""The plugin manifests against JSON Schemas transcribed from Claude Code's documentation.

Each schema in tests/bundle/schemas/ names the documentation page it came from. The negative
cases prove the schemas have teeth: a schema that accepts anything would pass the positive tests.
When the `claude` CLI is installed, `claude plugin validate` checks the same files a second time.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import REPO, claude_cli, load_setup
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

SCHEMAS = Path(__file__).parent / "schemas"
PLUGIN = REPO / ".claude-plugin" / "plugin.json"
MARKETPLACE = REPO / ".claude-plugin" / "marketplace.json"
HOOKS = REPO / "hooks" / "hooks.json"
WANTED_HOOKS = {  # event -> (matcher, script run through plugin_run.py)
    "SessionStart": (None, "invariants"),
    "PostToolUse": ("Write|Edit|MultiEdit", "reindex_hook"),
    "UserPromptSubmit": (None, "context_guard"),
    "PreCompact": (None, "precompact_snapshot"),
    "Stop": (None, "capture_hook"),
}


def _load(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def _registry() -> Registry:
    resources = []
    for path in SCHEMAS.glob("*.schema.json"):
        schema = _load(path)
        resources.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources)


REGISTRY = _registry()


def validator(name: str) -> Draft202012Validator:
    schema = _load(SCHEMAS / f"{name}.schema.json")
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, registry=REGISTRY)


def errors(name: str, document) -> list[str]:
    return [e.message for e in validator(name).iter_errors(document)]


# --- the schemas themselves ----------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(SCHEMAS.glob("*.schema.json")), ids=lambda p: p.name)
def test_every_schema_is_draft_2020_12_and_names_its_source_page(path):
    schema = _load(path)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    assert re.search(r"https://code\.claude\.com/docs/en/\S+", schema["$comment"])


# --- our files pass ----------------------------------------------------------------------------


def test_plugin_manifest_is_valid():
    assert errors("plugin", _load(PLUGIN)) == []


def test_marketplace_is_valid():
    assert errors("marketplace", _load(MARKETPLACE)) == []


def test_plugin_hooks_file_is_valid():
    assert errors("hooks", _load(HOOKS)) == []


def test_settings_hooks_written_by_setup_are_valid(tmp_path):
    setup = load_setup()
    if not hasattr(setup, "wire"):
        pytest.skip("setup.py has no wire() yet")
    setup.wire(tmp_path, tmp_path / ".venv" / "bin" / "python")
    settings = _load(tmp_path / ".claude" / "settings.json")
    assert errors("settings-hooks", settings) == []
    assert set(WANTED_HOOKS) <= set(settings["hooks"])


# --- our files agree with each other and with the repo ----------------------------------------


def test_versions_and_names_agree():
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    version = re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1)
    plugin, market = _load(PLUGIN), _load(MARKETPLACE)
    assert plugin["version"] == version
    [entry] = [p for p in market["plugins"] if p["name"] == plugin["name"]]
    assert entry["source"] == "./plugin"  # the links of plugin/, not the whole clone (no .venv)
    assert entry.get("version", version) == version


def test_component_paths_exist():
    plugin = _load(PLUGIN)
    commands = REPO / plugin["commands"]
    assert commands.is_dir() and sorted(commands.glob("*.md")), f"{commands} holds no commands"
    # hooks/hooks.json is loaded from its standard place; naming it again in the manifest makes
    # Claude Code report a duplicate hooks file (manifest.hooks is for *additional* files only).
    assert "hooks" not in plugin and HOOKS.is_file()


def test_server_runs_through_plugin_run_with_the_persons_own_graph():
    server = _load(PLUGIN)["mcpServers"]["vault-index"]
    assert server["command"] == "python3"
    assert server["args"][:2] == ["${CLAUDE_PLUGIN_ROOT}/scripts/plugin_run.py", "serve"]
    assert not any("CLAUDE_PLUGIN_DATA" in a for a in server["args"])  # graph and index shared (ADR 0020)
    assert (REPO / "scripts" / "plugin_run.py").is_file()


def test_plugin_hooks_are_the_four_events_and_their_scripts_exist():
    hooks = _load(HOOKS)["hooks"]
    assert set(hooks) == set(WANTED_HOOKS)
    for event, (matcher, script) in WANTED_HOOKS.items():
        [group] = hooks[event]
        assert group.get("matcher") == matcher
        [handler] = group["hooks"]
        command = handler["command"]
        assert command.startswith('python3 "${CLAUDE_PLUGIN_ROOT}/scripts/plugin_run.py" ' + script)
        assert (REPO / "scripts" / f"{script}.py").is_file(), f"{event} runs a missing script {script}.py"
        assert 0 < handler["timeout"] <= 600
    # The SessionStart hook may install the environment: it needs the long timeout.
    assert hooks["SessionStart"][0]["hooks"][0]["timeout"] >= 300


# --- the schemas reject broken manifests ---------------------------------------------------------


def _plugin() -> dict:
    return copy.deepcopy(_load(PLUGIN))


def test_plugin_without_name_is_rejected():
    plugin = _plugin()
    del plugin["name"]
    assert any("'name' is a required property" in e for e in errors("plugin", plugin))


@pytest.mark.parametrize("name", ["Vault Index", "vault_index", "-vault", "vault-", "VaultIndex"])
def test_plugin_name_must_be_kebab_case(name):
    plugin = _plugin()
    plugin["name"] = name
    assert errors("plugin", plugin)


@pytest.mark.parametrize("path", ["commands", ".claude/commands/", "../commands", "/abs/commands", ".\\commands"])
def test_component_paths_must_start_with_dot_slash_and_stay_inside(path):
    plugin = _plugin()
    plugin["commands"] = path
    assert errors("plugin", plugin)


def test_unknown_manifest_key_is_rejected():
    plugin = _plugin()
    plugin["mcpServer"] = plugin.pop("mcpServers")  # a typo Claude Code would only warn about
    assert errors("plugin", plugin)


def test_bad_hook_event_name_is_rejected():
    hooks = _load(HOOKS)
    hooks["hooks"]["PreCompaction"] = hooks["hooks"].pop("PreCompact")
    assert any("PreCompaction" in e for e in errors("hooks", hooks))
    assert errors("settings-hooks", {"hooks": hooks["hooks"]})


def test_hook_without_command_is_rejected():
    hooks = _load(HOOKS)
    del hooks["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    assert any("'command' is a required property" in e for e in errors("hooks", hooks))
    assert errors("settings-hooks", {"hooks": hooks["hooks"]})


def test_hook_with_unknown_type_or_bad_timeout_is_rejected():
    hooks = _load(HOOKS)
    hooks["hooks"]["PreCompact"][0]["hooks"][0]["type"] = "shell"
    assert errors("hooks", hooks)
    hooks = _load(HOOKS)
    hooks["hooks"]["PreCompact"][0]["hooks"][0]["timeout"] = 0
    assert errors("hooks", hooks)


def test_inline_hooks_in_the_manifest_use_the_same_rules():
    plugin = _plugin()
    plugin["hooks"] = {"hooks": {"SessionBegin": [{"hooks": [{"type": "command", "command": "true"}]}]}}
    assert errors("plugin", plugin)
    plugin["hooks"] = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "true"}]}]}}
    assert errors("plugin", plugin) == []


def test_marketplace_without_owner_or_with_bad_entry_is_rejected():
    market = _load(MARKETPLACE)
    del market["owner"]
    assert any("'owner' is a required property" in e for e in errors("marketplace", market))
    market = _load(MARKETPLACE)
    del market["plugins"][0]["source"]
    assert errors("marketplace", market)
    market = _load(MARKETPLACE)
    market["plugins"][0]["source"] = "../elsewhere"
    assert errors("marketplace", market)
    market = _load(MARKETPLACE)
    market["name"] = "Vault Index"
    assert errors("marketplace", market)


def test_remote_marketplace_sources_are_accepted():
    market = _load(MARKETPLACE)
    market["plugins"][0]["source"] = {"source": "github", "repo": "someone/vault-index"}
    assert errors("marketplace", market) == []
    market["plugins"][0]["source"] = {"source": "github"}
    assert errors("marketplace", market)


# --- the authoritative check: Claude Code's own validator, when installed -------------------------


_claude_missing = pytest.mark.skipif(
    claude_cli() is None,
    reason="the claude CLI is not installed (npm install @anthropic-ai/claude-code, or set CLAUDE_CLI); "
    "`claude plugin validate` runs offline when it is",
)


def needs_claude(test):
    """Skip without the claude CLI; an `extras` test (.ci/run installs the CLI, then runs -m extras)."""
    return pytest.mark.extras(_claude_missing(test))


def run_validate(target: Path, home: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"))
    return subprocess.run(
        [claude_cli(), "plugin", "validate", str(target)],
        capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL,
    )


@needs_claude
def test_claude_plugin_validate_accepts_the_plugin_and_the_marketplace(tmp_path):
    plugin = run_validate(PLUGIN, tmp_path)
    assert plugin.returncode == 0, plugin.stdout + plugin.stderr
    assert "error" not in plugin.stdout.lower().replace("0 errors", "")
    market = run_validate(REPO, tmp_path)
    assert market.returncode == 0, market.stdout + market.stderr


@needs_claude
def test_claude_plugin_validate_rejects_a_bad_hook_event(tmp_path):
    copy_root = tmp_path / "plugin"
    (copy_root / ".claude-plugin").mkdir(parents=True)
    shutil.copy(PLUGIN, copy_root / ".claude-plugin" / "plugin.json")
    shutil.copytree(REPO / ".claude" / "commands", copy_root / ".claude" / "commands")
    hooks = _load(HOOKS)
    hooks["hooks"]["PreCompaction"] = hooks["hooks"].pop("PreCompact")
    (copy_root / "hooks").mkdir()
    (copy_root / "hooks" / "hooks.json").write_text(json.dumps(hooks), encoding="utf-8")
    result = run_validate(copy_root, tmp_path / "home")
    assert result.returncode == 1
    assert "PreCompaction" in result.stdout + result.stderr
