"""docs/clients.md: every configuration block a user pastes is valid and starts a server that answers.

The hosts themselves cannot run here; what can be checked is that each block parses, names the
server the way its host expects, and that its command line (the local install in place of `uvx`)
is one `vault-index` accepts and that serves prompts and resource templates over stdio.
"""

from __future__ import annotations

import json
import re

import anyio
import pytest
from helpers import CLI, REPO, cli_env
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from vault_index.surfaces.prompts import COMMANDS
from vault_index.surfaces.resources import GUIDE_URI, NOTE_TEMPLATE

DOC = REPO / "docs" / "clients.md"
TIMEOUT_S = 60
TOP_KEYS = {"mcpServers", "servers", "context_servers"}  # Claude Desktop and Cursor, VS Code, Zed
PLACEHOLDERS = ("/path/to/project", "${workspaceFolder}")
CLONE = "/path/to/vault-index"  # where the user cloned this repository
# `vault-index` on PyPI is another project's package (a different MCP server): a bare
# `uvx vault-index` downloads and runs that, so every uvx line must name the clone with --from.
UVX_FROM_CLONE = ["--from", CLONE, "vault-index"]


def blocks() -> list[dict]:
    return [json.loads(text) for text in re.findall(r"```json\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)]


def entry(block: dict) -> dict:
    [top] = TOP_KEYS & set(block)
    return block[top]["vault-index"]


def stdio_entries() -> list[dict]:
    return [entry(b) for b in blocks() if "command" in entry(b)]


def test_every_block_is_one_vault_index_entry_in_a_known_format():
    found = blocks()
    assert len(found) == 7  # four hosts over stdio, three over HTTP
    for block in found:
        server = entry(block)
        if "servers" in block:  # VS Code's format wants a type
            assert server["type"] in ("stdio", "http")
        if "command" in server:
            assert server["command"] == "uvx" and server["args"][:4] == [*UVX_FROM_CLONE, "serve"]
        else:
            assert re.fullmatch(r"http://127\.0\.0\.1:8765/mcp", server["url"])
            assert server["headers"]["Authorization"].startswith("Bearer ")
    assert "serve --http 8765" in DOC.read_text(encoding="utf-8")


@pytest.mark.parametrize("doc", [DOC, REPO / "README.md", REPO / "docs" / "getting-started.md"])
def test_no_command_runs_the_unrelated_pypi_package(doc):
    text = doc.read_text(encoding="utf-8")
    bare = [line for line in text.splitlines() if re.search(r'^\s*uvx vault-index|"args": \["vault-index"', line)]
    assert not bare, bare


def test_the_doc_names_every_prompt_and_resource():
    text = DOC.read_text(encoding="utf-8")
    for name in COMMANDS:
        assert f"`{name}`" in text, name
    assert NOTE_TEMPLATE in text and GUIDE_URI in text


async def _answers(params, errlog) -> tuple[list[str], list[str]]:
    with anyio.fail_after(TIMEOUT_S):
        async with (
            stdio_client(params, errlog=errlog) as (read, write_stream),
            ClientSession(read, write_stream) as session,
        ):
            await session.initialize()
            prompts = [p.name for p in (await session.list_prompts()).prompts]
            templates = [t.uri_template for t in (await session.list_resource_templates()).resource_templates]
    return prompts, templates


@pytest.mark.parametrize("index", range(4))
def test_each_stdio_block_starts_a_server_that_answers(index, tmp_path):
    server = stdio_entries()[index]
    project = tmp_path / "project"
    project.mkdir()
    args = [str(project) if a in PLACEHOLDERS else a for a in server["args"][len(UVX_FROM_CLONE):]]  # CLI
    env = {k: v for k, v in cli_env(tmp_path / "db" / "index.db").items() if k.startswith(("VAULT_", "HF_", "PYTHON"))}
    env.update(server.get("env", {}), VAULT_MEMORY_FILE=str(tmp_path / "memory.jsonl"))
    params = StdioServerParameters(command=CLI, args=args, env=env, cwd=str(tmp_path))
    with open(tmp_path / "server-stderr.log", "w") as errlog:
        prompts, templates = anyio.run(_answers, params, errlog)
    assert sorted(prompts) == sorted(COMMANDS)
    assert templates == [NOTE_TEMPLATE]
