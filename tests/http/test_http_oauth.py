"""Must-show 2: the single-owner OAuth server, driven over real HTTP (httpx) against real uvicorn.

The happy path goes the way claude.ai goes: 401 with the resource-metadata pointer, RFC 9728 and
RFC 8414 discovery, RFC 7591 registration, /authorize, the consent page with the owner secret,
the code, the token, MCP calls with it, a refresh. Every negative case asserts its refusal; a
refusal that stopped happening fails the run (the reference's OAuth script never set an exit code).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from helpers import write
from remote_harness import CONFIG, NOTE, ThreadServer, free_port, open_client, run
from vault_index.services.access.tokens import TokenStore
from vault_index.surfaces.http_config import HttpConfig

REDIRECT = "https://claude.ai/api/mcp/auth_callback"
MODERN = "2026-07-28"


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


class Clock:
    """The authorization server's clock; `offset` moves it (the SDK's token endpoint uses real time)."""

    def __init__(self):
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@pytest.fixture
def server(tmp_path, open_app):
    root = tmp_path / "vault"
    write(root, ".vault-index/config.yaml", CONFIG)
    write(root, "notes/bikes.md", NOTE.format(title="Bikes", words="brake pads wear a groove in the rim"))
    app = open_app(None)
    app.index([str(root)])
    store = TokenStore(tmp_path / "index.remote")
    owner, owner_record = store.new("owner", vault=root)
    reader, _ = store.new("reader", vault=root)
    clock = Clock()
    config = HttpConfig(port=free_port(), credentials=store.folder, rate_per_s=0)
    with ThreadServer(app, config, clock=clock, vault_root=root, memory_file=tmp_path / "mem.jsonl") as running:
        running.root, running.store, running.clock = root, store, clock
        running.owner, running.owner_id, running.reader = owner, owner_record.id, reader
        running.http = httpx.Client(base_url=running.base, timeout=30)
        yield running
        running.http.close()


def register(s, redirect_uris=(REDIRECT,)) -> httpx.Response:
    return s.http.post("/register", json={"redirect_uris": list(redirect_uris), "token_endpoint_auth_method": "none",
                                          "grant_types": ["authorization_code", "refresh_token"],
                                          "response_types": ["code"], "client_name": "claude test"})


def client_id(s) -> str:
    answer = register(s)
    assert answer.status_code == 201, answer.text
    return answer.json()["client_id"]


def authorize(s, cid: str, challenge: str | None, method: str = "S256", redirect: str = REDIRECT) -> httpx.Response:
    params = {"response_type": "code", "client_id": cid, "redirect_uri": redirect, "state": "st-1",
              "code_challenge_method": method, "resource": s.base + "/mcp"}
    if challenge is not None:
        params["code_challenge"] = challenge
    return s.http.get("/authorize", params=params)


def consent(s, cid: str, challenge: str, secret: str) -> httpx.Response:
    started = authorize(s, cid, challenge)
    assert started.status_code == 302, started.text
    page = urlsplit(started.headers["location"])
    assert page.path == "/oauth/consent"
    request_id = parse_qs(page.query)["request"][0]
    shown = s.http.get("/oauth/consent", params={"request": request_id})
    assert shown.status_code == 200 and 'type="password"' in shown.text
    return s.http.post("/oauth/consent", data={"request": request_id, "secret": secret})


def code_for(s, cid: str, challenge: str, secret: str | None = None) -> str:
    approved = consent(s, cid, challenge, secret or s.owner)
    assert approved.status_code == 302, approved.text
    target = urlsplit(approved.headers["location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == REDIRECT
    query = parse_qs(target.query)
    assert query["state"] == ["st-1"]
    return query["code"][0]


def exchange(s, cid: str, code: str, verifier: str | None) -> httpx.Response:
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": cid}
    if verifier is not None:
        form["code_verifier"] = verifier
    return s.http.post("/token", data=form)


def tokens_for(s, secret: str | None = None) -> dict:
    cid = client_id(s)
    verifier, challenge = pkce()
    answer = exchange(s, cid, code_for(s, cid, challenge, secret), verifier)
    assert answer.status_code == 200, answer.text
    return {**answer.json(), "client_id": cid}


def mcp_status(s, token: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    return s.http.post("/mcp", json=body, headers={"Authorization": f"Bearer {token}",
                                                   "Accept": "application/json, text/event-stream"}).status_code


async def _use(url: str, token: str, mode: str, note: str) -> dict:
    stack, client = await open_client(url, token, mode)
    async with stack:
        found = await client.call_tool("search_notes", {"query": "brake groove", "mode": "keyword"})
        wrote = await client.call_tool("note_write", {"op": "create", "path": note, "body": "# n\n\noauth\n",
                                                      "frontmatter": {"title": "n", "status": "draft"}})
        return {"hits": found.structured_content["hits"], "write": wrote.structured_content}


# --- the happy path ----------------------------------------------------------------------------


def test_full_flow_registration_consent_code_token_refresh(server):
    s = server
    unauth = s.http.post("/mcp", json={})
    assert unauth.status_code == 401
    assert "resource_metadata=" in unauth.headers["www-authenticate"]
    resource = s.http.get("/.well-known/oauth-protected-resource/mcp").json()
    assert resource["resource"] == s.base + "/mcp" and resource["authorization_servers"] == [s.base + "/"]
    meta = s.http.get("/.well-known/oauth-authorization-server").json()
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert {"authorization_code", "refresh_token"} <= set(meta["grant_types_supported"])
    assert meta["registration_endpoint"].endswith("/register")

    tokens = tokens_for(s)
    assert tokens["token_type"].lower() == "bearer" and tokens["expires_in"] == 900
    for mode in ("legacy", MODERN):
        used = run(_use, s.base + "/mcp", tokens["access_token"], mode, f"notes/oauth-{mode}.md")
        assert used["hits"] and used["write"]["status"] == "written", used
        assert (s.root / f"notes/oauth-{mode}.md").exists()

    refreshed = s.http.post("/token", data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                                            "client_id": tokens["client_id"]})
    assert refreshed.status_code == 200, refreshed.text
    assert mcp_status(s, refreshed.json()["access_token"]) == 200
    reused = s.http.post("/token", data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                                         "client_id": tokens["client_id"]})
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"  # refresh tokens rotate


# --- the negative suite ------------------------------------------------------------------------


def test_wrong_owner_secret_gets_no_code_and_attempts_run_out(server):
    s = server
    cid = client_id(s)
    verifier, challenge = pkce()
    started = authorize(s, cid, challenge)
    request_id = parse_qs(urlsplit(started.headers["location"]).query)["request"][0]
    wrong = s.owner[:-1] + ("A" if s.owner[-1] != "A" else "B")
    for _ in range(5):
        answer = s.http.post("/oauth/consent", data={"request": request_id, "secret": wrong})
        assert answer.status_code in (400, 403) and "location" not in answer.headers
    # after five wrong secrets the request is gone: even the right one gets nothing
    late = s.http.post("/oauth/consent", data={"request": request_id, "secret": s.owner})
    assert late.status_code == 400 and "location" not in late.headers
    short = consent(s, cid, challenge, "short")
    assert short.status_code == 403 and "location" not in short.headers


def test_pkce_missing_wrong_or_plain_is_refused(server):
    s = server
    cid = client_id(s)
    verifier, challenge = pkce()
    code = code_for(s, cid, challenge)
    missing = exchange(s, cid, code, None)
    assert missing.status_code == 400
    wrong = exchange(s, cid, code, pkce()[0])
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    # the client and redirect are valid, so the refusal goes back to the client (RFC 6749 4.1.2.1),
    # never on to the consent page
    plain = authorize(s, cid, verifier, method="plain")  # challenge == verifier: the plain method
    no_challenge = authorize(s, cid, None)
    for refused in (plain, no_challenge):
        assert refused.status_code == 302
        location = refused.headers["location"]
        assert location.startswith(REDIRECT + "?") and "error=invalid_request" in location
        assert "code=" not in location


def test_scopes_grant_nothing_and_refuse_nothing(server):
    """A client registered without a scope may ask for one (claude.ai does); the role still decides."""
    s = server
    cid = client_id(s)
    verifier, challenge = pkce()
    params = {"response_type": "code", "client_id": cid, "redirect_uri": REDIRECT, "state": "st-1",
              "code_challenge": challenge, "code_challenge_method": "S256", "scope": "claudeai"}
    started = s.http.get("/authorize", params=params)
    assert started.status_code == 302 and "/oauth/consent" in started.headers["location"], started.text


def test_code_is_single_use(server):
    s = server
    cid = client_id(s)
    verifier, challenge = pkce()
    code = code_for(s, cid, challenge)
    assert exchange(s, cid, code, verifier).status_code == 200
    replay = exchange(s, cid, code, verifier)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"


def test_code_expires_after_five_minutes(server):
    s = server
    cid = client_id(s)
    verifier, challenge = pkce()
    s.clock.offset = -301  # approved 301 s ago, as far as the code's expiry knows
    code = code_for(s, cid, challenge)
    s.clock.offset = 0
    expired = exchange(s, cid, code, verifier)
    assert expired.status_code == 400 and "expired" in expired.json()["error_description"]


def test_redirects_off_the_allowlist_are_refused(server):
    s = server
    for uri in ("https://evil.example/cb", "http://claude.ai/cb", "https://claude.ai.evil.example/cb",
                "https://user@claude.ai/cb"):
        answer = register(s, [uri])
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_redirect_uri", uri
    for uri in ("http://localhost:33418/callback", "http://127.0.0.1:9/cb", "https://claude.com/cb"):
        assert register(s, [uri]).status_code == 201, uri
    cid = client_id(s)
    verifier, challenge = pkce()
    other = authorize(s, cid, challenge, redirect="https://evil.example/cb")  # not this client's redirect
    assert other.status_code == 400 and "location" not in other.headers


def test_forged_or_tampered_tokens_are_refused(server):
    s = server
    tokens = tokens_for(s, s.reader)
    access = tokens["access_token"]
    assert mcp_status(s, access) == 200
    mark, kind, payload, signature = access.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["r"] = "owner"  # a reader's token claiming the owner's role
    raised = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    refresh_payload = tokens["refresh_token"].split(".")[2]
    for forged in (f"{mark}.{kind}.{raised}.{signature}", f"{mark}.{kind}.{payload}.{signature[:-2]}AA",
                   f"{mark}.refresh.{payload}.{signature}", f"{mark}.{kind}.{refresh_payload}.{signature}",
                   "vio.access.e30.AAAA", "vi_" + secrets.token_urlsafe(32), "not-a-token"):
        assert mcp_status(s, forged) == 401, forged


def test_rotating_the_owner_secret_revokes_what_it_granted(server):
    s = server
    tokens = tokens_for(s)
    assert mcp_status(s, tokens["access_token"]) == 200
    new_secret, _ = s.store.rotate(s.owner_id)
    assert mcp_status(s, tokens["access_token"]) == 401
    assert mcp_status(s, s.owner) == 401  # the old secret itself
    refresh = s.http.post("/token", data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                                          "client_id": tokens["client_id"]})
    assert refresh.status_code == 400 and refresh.json()["error"] == "invalid_grant"
    assert mcp_status(s, new_secret) == 200


def test_a_role_without_the_grant_is_denied_through_oauth(server):
    s = server
    tokens = tokens_for(s, s.reader)
    used = run(_use, s.base + "/mcp", tokens["access_token"], MODERN, "notes/by-reader.md")
    assert used["hits"]  # reading is granted
    assert used["write"]["status"] == "denied", used["write"]
    assert not (s.root / "notes/by-reader.md").exists()


def test_revocation_endpoint_and_access_expiry(server):
    s = server
    tokens = tokens_for(s)
    # the SDK's revocation model requires a client_secret field even for a public client: send it empty
    revoked = s.http.post("/revoke", data={"token": tokens["access_token"], "client_id": tokens["client_id"],
                                           "client_secret": ""})
    assert revoked.status_code == 200
    assert mcp_status(s, tokens["access_token"]) == 401
    fresh = tokens_for(s)
    s.clock.offset = 901  # the access token lives 15 minutes
    assert mcp_status(s, fresh["access_token"]) == 401


def test_a_restart_keeps_rotated_and_revoked_refresh_tokens_dead(server, open_app, tmp_path):
    s = server
    rotated, revoked = tokens_for(s), tokens_for(s)
    form = {"grant_type": "refresh_token", "refresh_token": rotated["refresh_token"], "client_id": rotated["client_id"]}
    assert s.http.post("/token", data=form).status_code == 200
    answer = s.http.post("/revoke", data={"token": revoked["refresh_token"], "client_id": revoked["client_id"],
                                          "client_secret": ""})
    assert answer.status_code == 200
    # the same server restarted: the same resource URL (tokens are bound to it, RFC 8707), another port here
    config = HttpConfig(port=free_port(), public_url=s.base, credentials=s.store.folder, rate_per_s=0)
    with ThreadServer(open_app(None), config, vault_root=s.root, memory_file=tmp_path / "mem2.jsonl") as again, \
            httpx.Client(base_url=again.base, timeout=30) as http:
        again.http = http
        for tokens in (rotated, revoked):
            reused = http.post("/token", data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                                               "client_id": tokens["client_id"]})
            assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant", reused.text
        fresh = tokens_for(s)  # the first server still grants; its new tokens work on the second
        assert mcp_status(again, fresh["access_token"]) == 200
