"""The MCP prompts name only what exists where the server runs (issue 21): with `claude mcp add`
in another project there is no scripts/ folder and no `${CLAUDE_PLUGIN_ROOT}`, and only Claude
Code's own slash commands fill in `${CLAUDE_SESSION_ID}`. The handoff prompt's command is run
here, from such a project, and must write the note it promises."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import anyio
from helpers import REPO, make_settings
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App
from vault_index.surfaces.prompt_host import runnable_here
from vault_index.surfaces.prompts import commands
from vault_index.surfaces.tools import build_server

from mcp import Client


async def _prompt_texts(server) -> dict[str, str]:
    async with Client(server) as client:
        listed = (await client.list_prompts()).prompts
        return {p.name: (await client.get_prompt(p.name, {p.arguments[0].name: "garden sensor"})).messages[0]
                .content.text for p in listed}


def _texts(tmp_path) -> dict[str, str]:
    app = App.open(make_settings(tmp_path), models=Models.fixed(None))
    try:
        return anyio.run(_prompt_texts, build_server(app, tmp_path / "memory.jsonl", vault_root=tmp_path))
    finally:
        app.close()


def test_no_prompt_names_a_relative_script_or_a_claude_placeholder(tmp_path):
    texts = _texts(tmp_path)
    for name, text in texts.items():
        assert "${" not in text, name  # ${CLAUDE_PLUGIN_ROOT}, ${CLAUDE_SESSION_ID}: nobody fills them in here
        assert not re.search(r"(?<![/\w])scripts/", text), name  # no path that only the clone has
        for path in re.findall(r"(/[^\s`'\"]+\.py)\b", text):
            assert Path(path).is_file(), (name, path)


def test_the_handoff_prompts_command_runs_from_another_project(tmp_path):
    """The command as the prompt gives it, run by the agent in a project with no scripts/ of its own."""
    text = _texts(tmp_path)["handoff"]
    [command] = re.findall(r"`([^`]*handoff\.py[^`]*)`", text)
    project = tmp_path / "elsewhere"
    project.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "CLAUDE_PROJECT_DIR": str(project),
           "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "VAULT_INDEX_HOME": str(tmp_path / "vh")}
    done = subprocess.run(shlex.split(command), cwd=project, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    note = done.stdout.splitlines()[0]
    assert (project / note).is_file() and note.startswith("docs/handoffs/") and note.endswith("-garden-sensor.md")


def test_without_the_scripts_the_handoff_prompt_needs_none(tmp_path):
    [handoff] = [c for c in commands() if c.name == "handoff"]
    content = tmp_path / "project"
    text = runnable_here(handoff.render("garden sensor"), folder=tmp_path / "no-scripts", content=content)
    assert "handoff.py" not in text and "${" not in text and "the script printed" not in text
    assert f"`{content}/docs/handoffs/YYYY-MM-DD-<topic>.md`" in text
    assert [line[:3] for line in text.splitlines() if re.match(r"\d\. ", line)] == ["1. ", "2. ", "3. "]


def test_the_slash_command_files_themselves_are_unchanged():
    """Claude Code in the clone and the plugin reads the files as they are; there the scripts exist."""
    for command in commands():
        shipped = (REPO / ".claude" / "commands" / f"{command.name}.md").read_text(encoding="utf-8")
        assert command.body in shipped
