"""Our server driven by a client from another SDK: the MCP Inspector's CLI (TypeScript, npm).

.ci/run installs it as it installs the Claude Code CLI and exports MCP_INSPECTOR_CLI; without it
these tests skip with a reason that says so (and .ci/run prints a warning). Each call starts the
server over stdio, as a host such as Claude Desktop, Cursor, VS Code or Zed does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from helpers import CLI, REPO, cli_env, write
from vault_index.surfaces.prompts import ARGUMENT_NAMES
from vault_index.surfaces.resources import GUIDE_URI, NOTE_TEMPLATE, note_uri

TIMEOUT_S = 120  # npx-free start of node plus our server; generous against a hang, not a speed test
# The inspector's own limit on the handshake is 15 s; at load 20-30 on 2 cores our server's first
# answer took 13-17 s (the MCP SDK's import alone), and prompts/get failed as "unreachable".
CONNECT_TIMEOUT_MS = (TIMEOUT_S - 20) * 1000
LOCAL_INSTALL = REPO / ".ci-tools" / "node_modules" / ".bin" / "mcp-inspector"


def inspector() -> str | None:
    """$MCP_INSPECTOR_CLI (set by .ci/run), else a local `npm install --prefix .ci-tools`."""
    chosen = os.environ.get("MCP_INSPECTOR_CLI") or (str(LOCAL_INSTALL) if LOCAL_INSTALL.exists() else None)
    return chosen if chosen and Path(chosen).exists() else None


pytestmark = [pytest.mark.extras, pytest.mark.skipif(  # .ci/run installs it, then runs -m extras
    inspector() is None,
    reason="MCP_INSPECTOR_CLI is not set and .ci-tools has no MCP Inspector: the TypeScript-client tests are "
           "SKIPPED (npm install --prefix .ci-tools @modelcontextprotocol/inspector@2.12.0, as .ci/run does)",
)]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A small indexed vault, a secret and an outside note; returns a function that runs one method."""
    tmp = tmp_path_factory.mktemp("inspector")
    vault = tmp / "vault"
    write(vault, "garden.md", "# Garden\n\nThe soil sensor battery lasts a month.\n")
    write(vault, "trips/bike.md", "# Bike\n\nBrake pads wear in the wet.\n")
    write(vault, "secrets/keys.md", "# Keys\n\nnot for the agent\n")
    write(tmp, "outside.md", "# Outside\n\nnot for the agent\n")
    env = cli_env(tmp / "db" / "index.db")
    subprocess.run([CLI, "index", str(vault), "-s"], env=env, check=True, capture_output=True, timeout=60)
    server_env = {k: v for k, v in env.items() if k.startswith(("VAULT_", "HF_", "PYTHONPATH"))}
    server_env["VAULT_MEMORY_FILE"] = str(tmp / "memory.jsonl")
    home = tmp / "home"  # the inspector may keep a catalog in ~/.mcp-inspector: never the user's
    home.mkdir()
    node_env = {**os.environ, "HOME": str(home), "MCP_CATALOG_PATH": str(home / "mcp.json")}

    def run(method: str, *options: str) -> tuple[int, dict]:
        env_options = [part for k, v in sorted(server_env.items()) for part in ("-e", f"{k}={v}")]
        command = [inspector(), "--cli", CLI, *env_options, "--cwd", str(tmp),
                   "--connect-timeout", str(CONNECT_TIMEOUT_MS), "--method", method, *options]
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, env=node_env)
        text = done.stdout if done.returncode == 0 else done.stderr
        lines = [line for line in text.strip().splitlines() if line.startswith("{")] or ["{}"]
        payload = done.stdout if done.returncode == 0 else lines[-1]
        try:
            return done.returncode, json.loads(payload)
        except json.JSONDecodeError:
            pytest.fail(f"{method}: no JSON from the inspector (rc {done.returncode})\n{done.stdout}\n{done.stderr}")

    return run, tmp


def slash_command_text(name: str, arguments: str) -> str:
    """The slash command's text with its script calls as they run where the server runs
    (surfaces/prompt_host.py: the prompt goes to projects that have no scripts/)."""
    from vault_index.surfaces.prompt_host import runnable_here

    text = (REPO / ".claude" / "commands" / f"{name}.md").read_text(encoding="utf-8")
    body = re.match(r"\A---\n.*?\n---\n(.*)\Z", text, re.S).group(1)
    return runnable_here(body.strip().replace("$ARGUMENTS", arguments))


def test_prompts_list_and_each_prompt_is_its_slash_command(served):
    run, _ = served
    code, listed = run("prompts/list")
    assert code == 0, listed
    assert {p["name"]: p["arguments"][0]["name"] for p in listed["prompts"]} == ARGUMENT_NAMES
    for name, argument in ARGUMENT_NAMES.items():
        code, got = run("prompts/get", "--prompt-name", name, "--prompt-args", f"{argument}=garden sensor")
        assert code == 0, got
        [message] = got["messages"]
        assert message["content"]["text"] == slash_command_text(name, "garden sensor"), name


def test_resources_and_the_template_through_the_typescript_client(served):
    run, _ = served
    code, templates = run("resources/templates/list")
    assert code == 0, templates
    assert [(t["uriTemplate"], t["mimeType"]) for t in templates["resourceTemplates"]] == [(NOTE_TEMPLATE,
                                                                                             "text/markdown")]
    code, listed = run("resources/list")
    assert code == 0, listed
    uris = [r["uri"] for r in listed["resources"]]
    assert uris == [GUIDE_URI, note_uri("garden.md"), note_uri("trips/bike.md")]
    code, read = run("resources/read", "--uri", note_uri("trips/bike.md"))
    assert code == 0, read
    assert read["contents"][0]["text"] == "# Bike\n\nBrake pads wear in the wet."


def test_refused_reads_through_the_typescript_client(served):
    run, tmp = served
    answers = {}
    for path in ["../outside.md", "../nowhere.md", str(tmp / "outside.md"), "secrets/keys.md", "secrets/none.md"]:
        code, answer = run("resources/read", "--uri", note_uri(path))
        assert code != 0 and "contents" not in answer, (path, answer)
        answers[path] = answer["error"]["message"]
    assert "outside every registered source" in answers["../outside.md"]
    same = lambda exists, missing: answers[exists].replace(exists, "<p>") == answers[missing].replace(missing, "<p>")  # noqa: E731
    assert same("../outside.md", "../nowhere.md")  # one answer whether or not the target exists
    assert same("secrets/keys.md", "secrets/none.md")
    assert "secrets/" in answers["secrets/keys.md"]
    assert "not for the agent" not in json.dumps(answers)
