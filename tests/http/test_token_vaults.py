"""Issue 36 item 2 (High): a bearer token or OAuth grant opens only the vault it was made for.

One index (and so one credentials folder, `<index>.remote/`) serves several vaults over HTTP. Before,
a token made for vault A opened vault B's server too, and approved OAuth consent there.
"""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from helpers import write
from remote_harness import CONFIG, NOTE, ThreadServer, free_port
from test_http_oauth import consent, mcp_status, pkce, tokens_for
from vault_index.services.access import oauth
from vault_index.services.access.oauth import OwnerOAuth
from vault_index.services.access.tokens import TokenStore
from vault_index.surfaces.http_config import HttpConfig


def _vault(tmp_path, name: str):
    root = tmp_path / name
    write(root, ".vault-index/config.yaml", CONFIG)
    write(root, "notes/bikes.md", NOTE.format(title="Bikes", words=f"{name} brake pads"))
    return root


@pytest.fixture
def two_vaults(tmp_path, open_app):
    a, b = _vault(tmp_path, "a"), _vault(tmp_path, "b")
    app_a, app_b = open_app(None), open_app(None)  # one index file, as two `serve --http` of one machine
    app_a.index([str(a)])
    app_b.index([str(b)])
    store = TokenStore(tmp_path / "index.remote")
    token_a, _ = store.new("owner", vault=a)
    token_b, _ = store.new("owner", vault=b)
    servers = []
    for app, root in ((app_a, a), (app_b, b)):
        config = HttpConfig(port=free_port(), credentials=store.folder, rate_per_s=0)
        running = ThreadServer(app, config, vault_root=root, memory_file=tmp_path / "mem.jsonl").__enter__()
        running.root, running.store, running.owner = root, store, None
        running.http = httpx.Client(base_url=running.base, timeout=30)
        servers.append(running)
    yield servers[0], servers[1], token_a, token_b
    for running in servers:
        running.http.close()
        running.__exit__(None, None, None)


def test_a_token_opens_only_its_own_vaults_server(two_vaults):
    server_a, server_b, token_a, token_b = two_vaults
    assert mcp_status(server_a, token_a) == 200 and mcp_status(server_b, token_b) == 200
    assert mcp_status(server_b, token_a) == 401  # old code: 200, vault A's token opened vault B
    assert mcp_status(server_a, token_b) == 401


def test_a_token_of_another_vault_does_not_approve_oauth_consent(two_vaults):
    server_a, server_b, token_a, _ = two_vaults
    from test_http_oauth import client_id

    cid = client_id(server_b)
    _, challenge = pkce()
    refused = consent(server_b, cid, challenge, token_a)
    assert refused.status_code == 403 and "location" not in refused.headers  # old code: 302 with a code
    granted = tokens_for(server_a, token_a)  # on its own vault's server the same token approves
    assert mcp_status(server_a, granted["access_token"]) == 200
    assert mcp_status(server_b, granted["access_token"]) == 401


def test_an_oauth_grant_is_bound_to_the_vault_even_under_one_resource_url(tmp_path):
    """Two servers of one index behind the same public URL (a proxy moved from one to the other):
    the resource check alone would pass; the grant's approving token names its vault."""
    store = TokenStore(tmp_path / "creds")
    secret, _ = store.new("owner", vault=tmp_path / "a")
    issuer = "https://vault.example.com"
    provider_a = OwnerOAuth(store, issuer, vault=tmp_path / "a")
    provider_b = OwnerOAuth(store, issuer, vault=tmp_path / "b")

    async def flow():
        from mcp.shared.auth import OAuthClientInformationFull

        info = OAuthClientInformationFull(client_id="c", redirect_uris=["https://claude.ai/cb"])
        await provider_a.register_client(info)
        params = oauth.AuthorizationParams(state="s", scopes=[], code_challenge="x" * 43,
                                           redirect_uri="https://claude.ai/cb", redirect_uri_provided_explicitly=True)
        started = await provider_a.authorize(info, params)
        target, _ = provider_a.approve(parse_qs(urlsplit(started).query)["request"][0], secret)
        code = await provider_a.load_authorization_code(info, parse_qs(urlsplit(target).query)["code"][0])
        pair = await provider_a.exchange_authorization_code(info, code)
        return (await provider_a.load_access_token(pair.access_token),
                await provider_b.load_access_token(pair.access_token),
                await provider_b.load_refresh_token(info, pair.refresh_token))

    on_a, on_b, refresh_on_b = asyncio.run(flow())
    assert on_a is not None and on_b is None and refresh_on_b is None
