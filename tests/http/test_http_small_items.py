"""Issue 21's smaller HTTP items, against the real server (uvicorn on a real socket, httpx, the SDK client):
- the RFC 8414 metadata lists `none` (public clients) for the token endpoint beside the secret
  methods, and a public client does get a token without a secret;
- a token whose role the config no longer has gets a tool error saying so, not "no such note";
- with no token, `serve --http` names a role the vault's config has, not a hard-coded `owner`.
"""

from __future__ import annotations

import subprocess

import httpx
import pytest
from helpers import CLI, cli_env, write
from remote_harness import CALL_TIMEOUT_S, CONFIG, NOTE, ThreadServer, free_port, open_client, run
from test_http_oauth import mcp_status, tokens_for
from vault_index.services.access.tokens import TokenStore
from vault_index.surfaces.http_config import HttpConfig


@pytest.fixture
def server(tmp_path, open_app):
    root = tmp_path / "vault"
    write(root, ".vault-index/config.yaml", CONFIG)
    write(root, "notes/bikes.md", NOTE.format(title="Bikes", words="brake pads wear a groove in the rim"))
    app = open_app(None)
    app.index([str(root)])
    store = TokenStore(tmp_path / "index.remote")
    owner, _ = store.new("owner", vault=root)
    ghost, _ = store.new("auditor", vault=root)  # a role the config never had (or lost): the store does not check
    config = HttpConfig(port=free_port(), credentials=store.folder, rate_per_s=0)
    with ThreadServer(app, config, vault_root=root, memory_file=tmp_path / "mem.jsonl") as running:
        running.root, running.store, running.owner, running.ghost = root, store, owner, ghost
        running.http = httpx.Client(base_url=running.base, timeout=30)
        yield running
        running.http.close()


def test_metadata_lists_public_clients_and_a_public_client_works(server):
    meta = server.http.get("/.well-known/oauth-authorization-server").json()
    assert "none" in meta["token_endpoint_auth_methods_supported"]
    assert {"client_secret_post", "client_secret_basic"} <= set(meta["token_endpoint_auth_methods_supported"])
    # the SDK's revocation endpoint wants a client_secret field, so revocation does not claim `none`
    assert "none" not in meta["revocation_endpoint_auth_methods_supported"]
    assert meta["code_challenge_methods_supported"] == ["S256"] and meta["registration_endpoint"].endswith("/register")
    # what the metadata promises holds: a client registered with "none" gets a token with no secret
    tokens = tokens_for(server)
    assert "client_secret" not in tokens
    assert mcp_status(server, tokens["access_token"]) == 200


async def _search(url: str, token: str):
    stack, client = await open_client(url, token, "legacy")
    async with stack:
        return await client.call_tool("search_notes", {"query": "brake groove", "mode": "keyword"})


def test_a_token_of_a_role_the_config_lacks_is_told_so(server):
    answer = run(_search, server.base + "/mcp", server.ghost)
    text = " ".join(getattr(c, "text", "") for c in answer.content)
    assert answer.is_error and "'auditor' is not a role of the vault's config" in text, text
    assert "reader" not in text  # the roles are not listed to a remote caller
    fine = run(_search, server.base + "/mcp", server.owner)
    assert not fine.is_error and "bikes.md" in str(fine.structured_content)


def test_the_no_token_hint_names_a_role_the_config_has(tmp_path):
    root = tmp_path / "vault"
    write(root, ".vault-index/config.yaml", CONFIG.replace("owner:", "keeper:").replace("local_role: owner",
                                                                                         "local_role: keeper"))
    env = cli_env(tmp_path / "index.db", CLAUDE_PROJECT_DIR=str(root))
    env.pop("VAULT_ROLE", None)
    refused = subprocess.run([CLI, "serve", "--http", str(free_port())], env=env, cwd=root, capture_output=True,
                             text=True, timeout=CALL_TIMEOUT_S)
    assert refused.returncode == 2
    assert "`vault-index token new --role keeper`" in refused.stderr and "--role owner" not in refused.stderr
    listed = subprocess.run([CLI, "token", "list"], env=env, cwd=root, capture_output=True, text=True,
                            timeout=CALL_TIMEOUT_S)
    assert "--role keeper" in listed.stderr and "--role owner" not in listed.stderr
    # without a config file the one role is owner, and the hint says so
    plain = tmp_path / "plain"
    plain.mkdir()
    bare = subprocess.run([CLI, "serve", "--http", str(free_port())], env={**env, "CLAUDE_PROJECT_DIR": str(plain)},
                          cwd=plain, capture_output=True, text=True, timeout=CALL_TIMEOUT_S)
    assert bare.returncode == 2 and "--role owner" in bare.stderr
