"""Issue 22 (Medium, Low OAuth): registration is bounded and never evicts an approved client; a
literal wildcard redirect is refused; tokens are bound to this server's resource (RFC 8707); a
rotated refresh token presented again revokes the newer one (OAuth 2.1). Real uvicorn, real httpx.
Each test failed on the old code (the approved client was evicted, `*.claude.ai` registered, a
token worked on another resource, the newer refresh token kept working)."""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qs, urlsplit

import httpx
from remote_harness import ThreadServer, free_port
from test_http_oauth import authorize, mcp_status, pkce, register, server, tokens_for  # noqa: F401
from vault_index.services.access import oauth
from vault_index.services.access.oauth import OwnerOAuth
from vault_index.services.access.tokens import TokenStore
from vault_index.surfaces.http_config import HttpConfig


def refresh(s, tokens: dict) -> httpx.Response:
    return s.http.post("/token", data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                                       "client_id": tokens["client_id"]})


def test_a_registration_flood_is_rate_limited_and_never_evicts_an_approved_client(server):  # noqa: F811
    s = server
    approved = tokens_for(s)
    s.clock.offset += oauth.REGISTRATION_WINDOW_S + 1
    statuses = []
    for n in range(oauth.MAX_CLIENTS + 5):
        if n and n % oauth.REGISTRATIONS_PER_WINDOW == 0:
            s.clock.offset += oauth.REGISTRATION_WINDOW_S + 1  # a new window: the flood goes on
        statuses.append(register(s).status_code)
    assert set(statuses) == {201}
    renewed = refresh(s, approved)  # old code: the approved client was evicted, its refresh refused
    assert renewed.status_code == 200, renewed.text
    assert mcp_status(s, renewed.json()["access_token"]) == 200
    too_fast = [register(s) for _ in range(oauth.REGISTRATIONS_PER_WINDOW)]
    assert too_fast[-1].status_code == 400 and "too many client registrations" in too_fast[-1].text


def test_a_book_full_of_approved_clients_refuses_rather_than_evicts(tmp_path, monkeypatch):
    monkeypatch.setattr(oauth, "MAX_CLIENTS", 2)
    store = TokenStore(tmp_path / "creds")
    secret, _ = store.new("owner", vault=tmp_path)
    provider = OwnerOAuth(store, "http://127.0.0.1:1", vault=tmp_path)

    async def flow():
        from mcp.shared.auth import OAuthClientInformationFull

        ids = []
        for n in range(2):
            info = OAuthClientInformationFull(client_id=f"c{n}", redirect_uris=["https://claude.ai/cb"])
            await provider.register_client(info)
            params = oauth.AuthorizationParams(state="s", scopes=[], code_challenge="x" * 43,
                                               redirect_uri="https://claude.ai/cb",
                                               redirect_uri_provided_explicitly=True)
            consent = await provider.authorize(await provider.get_client(f"c{n}"), params)
            target, _ = provider.approve(parse_qs(urlsplit(consent).query)["request"][0], secret)
            assert target is not None
            ids.append(info.client_id)
        extra = OAuthClientInformationFull(client_id="c-new", redirect_uris=["https://claude.ai/cb"])
        try:
            await provider.register_client(extra)
        except oauth.RegistrationError as exc:
            return ids, exc.error_description
        return ids, None

    ids, refused = asyncio.run(flow())
    assert refused and "approved clients" in refused
    reopened = OwnerOAuth(store, "http://127.0.0.1:1", vault=tmp_path)  # the approvals are kept on disk
    assert asyncio.run(reopened.get_client("c0")) is not None and reopened._approved == set(ids)


def test_a_literal_wildcard_redirect_is_refused(server):  # noqa: F811
    for uri in ("https://*.claude.ai/cb", "https://a*b.claude.com/cb", "https://x_y.claude.ai/cb"):
        answer = register(server, redirect_uris=(uri,))
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_redirect_uri", uri
    assert register(server, redirect_uris=("https://app.claude.ai/cb",)).status_code == 201


def test_tokens_are_bound_to_this_servers_resource(server, open_app, tmp_path):  # noqa: F811
    s = server
    cid = register(s).json()["client_id"]
    _, challenge = pkce()
    asked = s.http.get("/authorize", params={"response_type": "code", "client_id": cid, "state": "st-1",
                                             "redirect_uri": "https://claude.ai/api/mcp/auth_callback",
                                             "code_challenge": challenge, "code_challenge_method": "S256",
                                             "resource": "https://other.example/mcp"})
    assert "error=invalid_target" in asked.headers.get("location", ""), (asked.status_code, asked.text)
    assert authorize(s, cid, challenge).status_code == 302  # this server's own resource is fine
    tokens = tokens_for(s)
    assert mcp_status(s, tokens["access_token"]) == 200
    # another server (another resource URL) sharing the credentials folder refuses the token
    config = HttpConfig(port=free_port(), credentials=s.store.folder, rate_per_s=0)
    with ThreadServer(open_app(None), config, vault_root=s.root, memory_file=tmp_path / "m2.jsonl") as other, \
            httpx.Client(base_url=other.base, timeout=30) as http:
        other.http = http
        assert mcp_status(other, tokens["access_token"]) == 401  # old code: 200
        assert mcp_status(other, s.owner) == 200  # its own bearer tokens still work


def test_replaying_a_rotated_refresh_token_revokes_the_newer_tokens(server):  # noqa: F811
    s = server
    first = tokens_for(s)
    second = refresh(s, first)
    assert second.status_code == 200
    newer = {**second.json(), "client_id": first["client_id"]}
    assert refresh(s, first).status_code == 400  # the replay itself
    assert refresh(s, newer).status_code == 400  # old code: 200, the thief's or the client's pair lived on
    assert mcp_status(s, newer["access_token"]) == 401
    assert mcp_status(s, tokens_for(s)["access_token"]) == 200  # a new approval starts a new family
