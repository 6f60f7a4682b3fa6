"""A role name the vault does not define, and a collection name its config does not list, are
refused loudly wherever they are given (issue 21): `--role`, VAULT_ROLE (CLI and the stdio
server), `token new --role`, and a role's grants in the config. Before, each became the
deny-all guest or granted nothing, and every answer was "no such note"."""

from __future__ import annotations

import json
import subprocess
import sys

import anyio
import pytest
from helpers import CLI, REPO, cli_env
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

TIMEOUT_S = 60


def run(env, *args, code: int = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == code, (args, proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    return proc


@pytest.fixture
def env(tmp_path):
    environment = cli_env(tmp_path / "cli" / "index.db", VAULT_MEMORY_FILE=str(tmp_path / "mem.jsonl"))
    environment.pop("VAULT_ROLE", None)
    environment.pop("CLAUDE_PROJECT_DIR", None)
    return environment


@pytest.fixture
def vault(tmp_path, env):
    root = tmp_path / "v"
    run(env, "init", str(root))
    return root


def test_a_role_typo_is_a_usage_error_naming_the_roles(env, vault):
    v = ["--vault", str(vault)]
    typo = run(env, "read", "research/how-this-vault-works.md", *v, "--role", "editr", code=2)
    assert "--role: no role 'editr'" in typo.stderr and "editor, reader" in typo.stderr
    assert "no such note" not in typo.stderr
    from_env = run({**env, "VAULT_ROLE": "editr"}, "write", "drafts/x.md", *v, "--body", "x", code=2)
    assert "VAULT_ROLE: no role 'editr'" in from_env.stderr and not (vault / "drafts/x.md").exists()
    assert json.loads(run(env, "read", "research/how-this-vault-works.md", *v, "--role", "reader",
                          "--json").stdout)["status"] == "ok"  # a real role still works
    # a folder without a config file has one role, owner
    plain = vault.parent / "plain"
    plain.mkdir()
    (plain / "a.md").write_text("# a\n")
    bare = run(env, "read", "a.md", "--vault", str(plain), "--role", "editor", code=2)
    assert "no role 'editor'" in bare.stderr and "owner" in bare.stderr


def test_token_new_refuses_a_role_the_vault_lacks(env, vault, tmp_path):
    refused = run(env, "token", "new", "--role", "editr", "--vault", str(vault), code=2)
    assert "no role 'editr'" in refused.stderr and "editor, reader" in refused.stderr
    assert refused.stdout == ""
    assert json.loads(run(env, "token", "list", "--json").stdout) == []  # nothing was stored
    made = json.loads(run(env, "token", "new", "--role", "reader", "--vault", str(vault), "--json").stdout)
    assert made["role"] == "reader" and made["token"].startswith("vi_")


async def _call(params, tool: str, arguments: dict):
    with anyio.fail_after(TIMEOUT_S):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool(tool, arguments)


def test_the_stdio_server_refuses_a_vault_role_typo_by_name(env, vault):
    server_env = {**env, "VAULT_ROLE": "editr", "CLAUDE_PROJECT_DIR": str(vault), "PYTHONPATH": str(REPO / "mcp")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "vault_index"], env=server_env, cwd=str(vault))
    answer = anyio.run(_call, params, "note_read", {"path": "research/how-this-vault-works.md"})
    text = " ".join(getattr(c, "text", "") for c in answer.content)
    assert answer.is_error and "VAULT_ROLE: no role 'editr'" in text and "editor, reader" in text, text
    params.env = {**server_env, "VAULT_ROLE": "reader"}
    fine = anyio.run(_call, params, "note_read", {"path": "research/how-this-vault-works.md"})
    assert not fine.is_error and fine.structured_content["status"] == "ok"


def test_a_grant_of_a_collection_the_list_lacks_is_a_config_error(env, vault):
    config = vault / ".vault-index" / "config.yaml"
    original = config.read_text()
    config.write_text(original.replace("read: [research, decisions]", "read: [research, decisons]"))
    note = vault / "research" / "how-this-vault-works.md"
    before = note.read_bytes()
    broken = run(env, "read", "research/how-this-vault-works.md", "--vault", str(vault), code=2)
    assert "roles.reader.read[1]: 'decisons' is not one of the collections" in broken.stderr
    assert "did you mean 'decisions'?" in broken.stderr
    written = run(env, "write", "drafts/y.md", "--vault", str(vault), "--body", "x", "--set", "title=Y", code=2)
    assert "decisons" in written.stderr and not (vault / "drafts/y.md").exists()
    assert note.read_bytes() == before  # nothing lost: the notes are untouched, the config kept as written
    assert "decisons" in config.read_text()
    # the same typo on the list's side is caught by the grant that names the real folder
    config.write_text(original.replace("collections: [research, decisions, drafts]",
                                       "collections: [research, decisons, drafts]"))
    other = run(env, "read", "research/how-this-vault-works.md", "--vault", str(vault), code=2)
    assert "roles.reader.read[1]: 'decisions' is not one of the collections (research, decisons, drafts)" \
        in other.stderr
    config.write_text(original)
    assert json.loads(run(env, "read", "research/how-this-vault-works.md", "--vault", str(vault),
                          "--json").stdout)["status"] == "ok"


def test_the_terminal_scripts_refuse_a_vault_role_typo_too(env, tmp_path):
    """scripts/learn.py (what /learn's terminal twin runs) takes its role through Caller.local."""
    project = tmp_path / "project"
    project.mkdir()
    script_env = {**env, "CLAUDE_PROJECT_DIR": str(project), "VAULT_ROLE": "ownr"}
    args = [sys.executable, str(REPO / "scripts" / "learn.py"), "add", "--lesson", "Run the tests first",
            "--cause", "a red build", "--detect", "CI"]
    refused = subprocess.run(args, env=script_env, cwd=project, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert refused.returncode == 2, refused.stderr
    assert "VAULT_ROLE: no role 'ownr'" in refused.stderr and "owner" in refused.stderr
    assert not (project / "docs" / "lessons.md").exists()
    done = subprocess.run(args, env={**script_env, "VAULT_ROLE": "owner"}, cwd=project, capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    assert "Run the tests first" in (project / "docs" / "lessons.md").read_text()
