"""The Streamable HTTP transport: the tools of surfaces/tools.py behind bearer tokens and OAuth.

What the MCP SDK does here (we only assemble it): both protocol eras from one session manager
(the handshake revisions through its stateful transport, 2026-07-28 through its single-exchange
entry), Host/Origin checks (TransportSecuritySettings), the body limit, the bearer middleware, the
RFC 9728 resource metadata and every OAuth endpoint (services/oauth.py is the provider).

What we add, because the SDK lacks it:
- era routing keyed on the request body (`EraRouter`): the SDK picks the era from the
  MCP-Protocol-Version header alone; the spec asks us to look at the request itself;
- a pinned era (`--era legacy|modern`) answering the other era with the fallback signal:
  JSON-RPC error -32022 (unsupported protocol version) naming the versions this server speaks;
- a per-credential rate limit (`RateLimit`) and one Host/Origin check in front of every route;
- the caller: a token's role (services/tokens.py) becomes the write service's Caller.
"""

from __future__ import annotations

import hashlib
import html
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from vault_index.errors import UsageError
from vault_index.services.oauth import OwnerOAuth, is_loopback
from vault_index.services.tokens import TokenStore

Era = Literal["auto", "legacy", "modern"]
MCP_PATH = "/mcp"
DEFAULT_PORT = 8765
MAX_BODY_BYTES = 4 * 1024 * 1024  # note_write takes a body of up to 1,000,000 characters
MAX_FORM_BYTES = 16 * 1024  # the consent form
DEFAULT_RATE_PER_S = 20.0  # sustained requests per second per credential
DEFAULT_BURST = 200  # a client's start-up (tools/list, a few searches) fits in the burst
MODERN_ONLY_METHODS = frozenset({"server/discover", "subscriptions/listen"})
MODERN_MIN_VERSION = "2026-"  # protocol revisions are dates; every 2026+ revision is handshake-free
UNSUPPORTED_PROTOCOL_VERSION = -32022
NO_ROLE = "(no token)"  # not a valid role name in any config: the deny-all guest


@dataclass(frozen=True)
class HttpConfig:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    era: Era = "auto"
    public_url: str | None = None  # https://vault.example.com when a proxy or tunnel fronts it
    allowed_hosts: tuple[str, ...] = ()  # extra Host names (a LAN name); public_url's host is added
    behind_tls_proxy: bool = False
    tls_cert: str | None = None
    tls_key: str | None = None
    rate_per_s: float = DEFAULT_RATE_PER_S
    burst: int = DEFAULT_BURST
    max_body: int = MAX_BODY_BYTES
    oauth: bool = True
    credentials: Path = field(default_factory=Path)  # the token folder (services/tokens.credentials_dir)

    @property
    def base_url(self) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        scheme = "https" if self.tls_cert else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"


def check_startup(config: HttpConfig, store: TokenStore) -> None:
    """Refuse to start where a vault would reach a network unprotected (a UsageError says what to do)."""
    if not store.records():
        raise UsageError("no token yet: the HTTP server never starts unauthenticated. Create one with "
                         "`vault-index token new --role owner` (printed once) and start again")
    if not is_loopback(config.host) and not config.tls_cert and not config.behind_tls_proxy:
        raise UsageError(f"{config.host} is not a loopback address and there is no TLS: give --tls-cert and "
                         "--tls-key, or --behind-tls-proxy when a proxy (Caddy, a tunnel) terminates TLS")
    if bool(config.tls_cert) != bool(config.tls_key):
        raise UsageError("--tls-cert and --tls-key go together")
    if config.public_url and not (config.public_url.startswith("https://")
                                  or is_loopback(_hostname(config.public_url))):
        raise UsageError("--public-url must be https:// (OAuth refuses plain http except on loopback)")


def _hostname(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).hostname or ""


def security_settings(config: HttpConfig):
    """Host and Origin values a request may carry (DNS rebinding: a foreign name is refused)."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*",
               "https://127.0.0.1:*", "https://localhost:*", "https://[::1]:*"]
    names = list(config.allowed_hosts)
    if not is_loopback(config.host) and config.host not in ("0.0.0.0", "::"):
        names.append(config.host)
    if config.public_url:
        names.append(_hostname(config.public_url))
    for name in names:
        shown = f"[{name}]" if ":" in name else name
        hosts += [shown, f"{shown}:*"]
        origins += [f"https://{shown}", f"https://{shown}:*", f"http://{shown}:*", f"http://{shown}"]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


# --- who calls ------------------------------------------------------------------------------------


class BearerVerifier:
    """The SDK's TokenVerifier: a bearer token from the store, or an OAuth access token we signed."""

    def __init__(self, store: TokenStore, oauth: OwnerOAuth | None):
        self.store, self.oauth = store, oauth

    async def verify_token(self, token: str):
        from mcp.server.auth.provider import AccessToken

        if self.oauth is not None and token.startswith("vio."):
            return await self.oauth.load_access_token(token)
        record = self.store.lookup(token)
        if record is None:
            return None
        return AccessToken(token=token, client_id=f"token:{record.id}", scopes=[], subject=f"token:{record.id}",
                           claims={"role": record.role, "token_id": record.id})


def http_caller_factory(vault, ctx):
    """For `build_server`: the request's role is its token's role; nothing else is trusted.

    A request that reached a tool passed the bearer middleware, so a token is there; a missing one
    (never expected) is the deny-all guest, not the owner.
    """
    from mcp.server.auth.middleware.auth_context import get_access_token

    from vault_index.services.write import Caller
    from vault_index.surfaces.callers import client_name

    token = get_access_token()
    claims = (token.claims or {}) if token is not None else {}
    # Trigger: no verified token (never expected behind the bearer middleware).
    # Why: role None means the built-in owner in a vault without a config file.
    # Outcome: a role name no config can define, so the caller is the deny-all guest everywhere.
    role = claims.get("role") or NO_ROLE
    who = f"remote {token.client_id}" if token is not None else "remote (no token)"
    return Caller(identity=f"{who} <{claims.get('token_id', 'none')}@vault-index>", role=role,
                  agent=client_name(ctx))


# --- era routing ----------------------------------------------------------------------------------


def request_era(body: object) -> str | None:
    """"modern", "legacy" or None (not JSON-RPC: the SDK answers it) from the request itself.

    Modern: a 2026+ protocol version declared in the request's `_meta`, or a method only the
    handshake-free era has. Never the MCP-Protocol-Version or Mcp-Method header alone: a dual-era
    client sends them with a legacy initialize too.
    """
    from mcp_types import PROTOCOL_VERSION_META_KEY

    if isinstance(body, list):  # JSON-RPC batches exist only in the handshake era (2025-03-26)
        return "legacy"
    if not isinstance(body, dict) or not isinstance(body.get("method"), str) and "result" not in body \
            and "error" not in body:
        return None
    if body.get("method") in MODERN_ONLY_METHODS:
        return "modern"
    params = body.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
    if isinstance(version, str) and version >= MODERN_MIN_VERSION:
        return "modern"
    return "legacy"


class EraRouter:
    """ASGI wrapper of the SDK's /mcp handler: reads the body once, decides the era, replays it."""

    def __init__(self, inner, era: Era, max_body: int):
        self.inner, self.era, self.max_body = inner, era, max_body

    async def __call__(self, scope, receive, send):
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

        if scope["method"] != "POST":
            # GET (the server-to-client stream) and DELETE (end a session) exist only with sessions
            if self.era == "modern":
                return await _plain(send, 405, "this server is pinned to the 2026-07-28 era: POST only")
            return await self.inner(scope, receive, send)
        body = await _read_body(receive, self.max_body)
        if body is None:
            return await _plain(send, 413, "request body too large")
        try:
            message = json.loads(body)
        except ValueError:
            message = None
        era = request_era(message)
        header = _header(scope, b"mcp-protocol-version")
        if era == "modern" and self.era == "legacy":
            return await _unsupported(send, message, list(HANDSHAKE_PROTOCOL_VERSIONS))
        if era == "legacy" and self.era == "modern":
            return await _unsupported(send, message, list(MODERN_PROTOCOL_VERSIONS))
        if era == "modern" and header not in MODERN_PROTOCOL_VERSIONS:
            # The SDK would take this modern body down its handshake path (it reads the header
            # only); the modern entry's own check answers it instead: header and body disagree.
            return await _modern_rejection(send, message, scope)
        if era == "legacy" and header is not None and header not in HANDSHAKE_PROTOCOL_VERSIONS:
            # Trigger: a handshake-era request whose MCP-Protocol-Version header names another era.
            # Why: the SDK routes on that header alone and would send it to the modern entry.
            # Outcome: the header goes; the body's era decides (the session carries the version).
            scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k != b"mcp-protocol-version"]}
        await self.inner(scope, _replay(body, receive), send)


async def _read_body(receive, limit: int) -> bytes | None:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive):
    """The body read once, then the real channel: a streamed answer watches it for the disconnect."""
    sent = False

    async def replayed():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _header(scope, name: bytes) -> str | None:
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == name), None)


async def _unsupported(send, message, supported: list[str]) -> None:
    """The fallback signal: -32022 with the versions this server speaks (a modern client falls back
    to initialize when they are handshake versions; a legacy client learns it must upgrade)."""
    from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS

    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    requested = (meta or {}).get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, dict) else None
    if requested is None and isinstance(params, dict):
        requested = params.get("protocolVersion")
    request_id = message.get("id") if isinstance(message, dict) else None
    error = {"code": UNSUPPORTED_PROTOCOL_VERSION, "message": "Unsupported protocol version",
             "data": {"supported": supported, "requested": str(requested or "")}}
    await _json(send, ERROR_CODE_HTTP_STATUS.get(UNSUPPORTED_PROTOCOL_VERSION, 400),
                {"jsonrpc": "2.0", "id": request_id, "error": error})


async def _modern_rejection(send, message, scope) -> None:
    from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS, classify_inbound_request

    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
    verdict = classify_inbound_request(message, headers=headers)
    code = getattr(verdict, "code", -32600)
    error = {"code": code, "message": getattr(verdict, "message", "invalid request")}
    if getattr(verdict, "data", None) is not None:
        error["data"] = verdict.data
    await _json(send, ERROR_CODE_HTTP_STATUS.get(code, 400),
                {"jsonrpc": "2.0", "id": message.get("id"), "error": error})


async def _json(send, status: int, data: dict) -> None:
    payload = json.dumps(data).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


async def _plain(send, status: int, text: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    data = text.encode()
    length = (b"content-length", str(len(data)).encode())
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), length, *headers]})
    await send({"type": "http.response.body", "body": data})


# --- limits and host checks for every route -----------------------------------------------------


class Guard:
    """Outermost ASGI layer: Host/Origin (every route, not only /mcp), body size, rate per credential.

    The rate limit is a token bucket keyed by a hash of the Authorization header (else the client
    address): on loopback or behind a proxy every client shares one address, so the address alone
    would make one busy agent throttle the others.
    """

    def __init__(self, inner, config: HttpConfig, clock=time.monotonic):
        from mcp.server.transport_security import TransportSecurityMiddleware

        self.inner, self.config, self.clock = inner, config, clock
        self.checker = TransportSecurityMiddleware(security_settings(config))
        self.buckets: dict[str, tuple[float, float]] = {}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.inner(scope, receive, send)
        from starlette.requests import Request

        refused = await self.checker.validate_request(Request(scope), is_post=False)
        if refused is not None:
            return await refused(scope, receive, send)
        declared = _header(scope, b"content-length")
        limit = self.config.max_body if scope["path"] == MCP_PATH else MAX_FORM_BYTES
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return await _plain(send, 413, "request body too large")
        wait = self._take(_rate_key(scope))
        if wait > 0:
            return await _plain(send, 429, "too many requests; slow down",
                                [(b"retry-after", str(max(1, round(wait))).encode())])
        # /mcp: EraRouter reads the whole body under the same limit and answers 413 itself
        await self.inner(scope, receive if scope["path"] == MCP_PATH else _limited(receive, limit), send)

    def _take(self, key: str) -> float:
        """0 when the request may go, else the seconds until the bucket holds a token again."""
        if self.config.rate_per_s <= 0:
            return 0.0
        now = self.clock()
        tokens, last = self.buckets.get(key, (float(self.config.burst), now))
        tokens = min(float(self.config.burst), tokens + (now - last) * self.config.rate_per_s)
        if tokens < 1:
            self.buckets[key] = (tokens, now)
            return (1 - tokens) / self.config.rate_per_s
        self.buckets[key] = (tokens - 1, now)
        if len(self.buckets) > 10_000:  # forget idle clients
            self.buckets = {k: v for k, v in self.buckets.items() if now - v[1] < 60}
        return 0.0


def _rate_key(scope) -> str:
    auth = _header(scope, b"authorization")
    if auth:
        return "a:" + hashlib.sha256(auth.encode()).hexdigest()[:32]
    client = scope.get("client") or ("?", 0)
    return f"c:{client[0]}"


def _limited(receive, limit: int):
    """A body that grows past the limit without a Content-Length ends as a disconnect."""
    seen = 0

    async def wrapped():
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                return {"type": "http.disconnect"}
        return message

    return wrapped


# --- the consent page -----------------------------------------------------------------------------

CONSENT_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>vault-index: approve access</title>
<meta name="viewport" content="width=device-width,initial-scale=1"></head>
<body style="font-family:sans-serif;max-width:32em;margin:3em auto">
<h1>Approve access to this vault</h1>
<p><b>{client}</b> asks to use this vault's tools. It will act with the role of the secret you enter.</p>
<p style="color:#b00">{problem}</p>
<form method="post" action="/oauth/consent">
<input type="hidden" name="request" value="{request}">
<label>Owner secret (a token from <code>vault-index token new</code>)<br>
<input type="password" name="secret" autocomplete="off" style="width:100%"></label>
<p><button type="submit">Approve</button></p></form></body></html>"""


NO_STORE = {"cache-control": "no-store", "x-frame-options": "DENY", "content-security-policy": "frame-ancestors 'none'"}


def consent_routes(oauth: OwnerOAuth):
    from starlette.responses import HTMLResponse, RedirectResponse
    from starlette.routing import Route

    async def show(request):
        request_id = request.query_params.get("request", "")
        found = oauth.pending(request_id)
        if found is None:
            return HTMLResponse("<p>This approval request is unknown or expired; connect again.</p>", status_code=400)
        client = await oauth.get_client(found.client_id)
        name = (client.client_name if client else None) or found.client_id
        return HTMLResponse(CONSENT_PAGE.format(client=html.escape(name), request=html.escape(request_id), problem=""),
                            headers=NO_STORE)

    async def submit(request):
        form = await request.form()
        request_id, secret = str(form.get("request", "")), str(form.get("secret", ""))
        target, problem = oauth.approve(request_id, secret)
        if target is None:
            body = CONSENT_PAGE.format(client="this client", request=html.escape(request_id),
                                       problem=html.escape(problem))
            status = 403 if problem == "wrong owner secret" else 400
            return HTMLResponse(body, status_code=status, headers=NO_STORE)
        return RedirectResponse(target, status_code=302, headers={"cache-control": "no-store"})

    return [Route("/oauth/consent", show, methods=["GET"]), Route("/oauth/consent", submit, methods=["POST"])]


# --- assembling the app ---------------------------------------------------------------------------


def build_http_app(app, config: HttpConfig, memory_file=None, vault_root=None, clock=None):
    """The ASGI app: /mcp (both eras, bearer or OAuth), OAuth endpoints, metadata, consent."""
    import contextlib

    from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
    from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
    from mcp.server.auth.routes import (
        build_resource_metadata_url,
        create_auth_routes,
        create_protected_resource_routes,
    )
    from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
    from pydantic import AnyHttpUrl
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.authentication import AuthenticationMiddleware
    from starlette.routing import Route

    from vault_index.surfaces.tools import build_server

    store = TokenStore(config.credentials)
    oauth = (OwnerOAuth(store, config.base_url, **({"clock": clock} if clock else {}))
             if config.oauth else None)
    server = build_server(app, memory_file, http_caller_factory, vault_root=vault_root)
    # The SDK builds its session manager (both eras) here; we take its handler, not its routes,
    # so our auth and era routing sit in front of it.
    server.streamable_http_app(streamable_http_path=MCP_PATH, transport_security=security_settings(config),
                               max_request_body_size=config.max_body, host=config.host)
    manager = server.session_manager
    resource = AnyHttpUrl(config.base_url + MCP_PATH)
    issuer = AnyHttpUrl(config.base_url)
    endpoint = RequireAuthMiddleware(EraRouter(manager.handle_request, config.era, config.max_body), [],
                                     build_resource_metadata_url(resource))
    routes = [Route(MCP_PATH, endpoint=endpoint, methods=["GET", "POST", "DELETE"])]
    routes += create_protected_resource_routes(resource_url=resource, authorization_servers=[issuer])
    if oauth is not None:
        routes += create_auth_routes(oauth, issuer, client_registration_options=ClientRegistrationOptions(enabled=True),
                                     revocation_options=RevocationOptions(enabled=True))
        routes += consent_routes(oauth)

    @contextlib.asynccontextmanager
    async def lifespan(_):
        async with manager.run():
            yield

    starlette = Starlette(routes=routes, lifespan=lifespan, middleware=[
        Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(BearerVerifier(store, oauth))),
        Middleware(AuthContextMiddleware)])
    return Guard(starlette, config)


def serve_http(config: HttpConfig, memory_file=None, vault_root=None) -> None:
    """Check the start-up rules, then serve with uvicorn until Ctrl-C."""
    import uvicorn

    from vault_index.services.app import App

    check_startup(config, TokenStore(config.credentials))
    app = App.open()
    try:
        asgi = build_http_app(app, config, memory_file, vault_root)
        uvicorn.run(asgi, host=config.host, port=config.port, log_level="warning", ssl_certfile=config.tls_cert,
                    ssl_keyfile=config.tls_key, proxy_headers=config.behind_tls_proxy, lifespan="on",
                    timeout_graceful_shutdown=5)
    finally:
        app.close()
