"""The Streamable HTTP transport: the tools of surfaces/tools.py behind bearer tokens and OAuth.

What the MCP SDK does here (we only assemble it): both protocol eras from one session manager
(the handshake revisions through its stateful transport, 2026-07-28 through its single-exchange
entry), Host/Origin checks (TransportSecuritySettings), the body limit, the bearer middleware, the
RFC 9728 resource metadata and every OAuth endpoint (services/access/oauth.py is the provider).

What we add, because the SDK lacks it:
- era routing keyed on the request body (`EraRouter`): the SDK picks the era from the
  MCP-Protocol-Version header alone; the spec asks us to look at the request itself;
- a pinned era (`--era legacy|modern`) answering the other era with the fallback signal:
  JSON-RPC error -32022 (unsupported protocol version) naming the versions this server speaks;
- a per-credential rate limit and one Host/Origin check in front of every route (`Guard`);
  both layers live in surfaces/http_asgi.py;
- the caller: a token's role (services/access/tokens.py) becomes the write service's Caller.
"""

from __future__ import annotations

import html
import logging

from vault_index.errors import UsageError, VaultIndexError
from vault_index.services.access.hosts import is_loopback
from vault_index.services.access.oauth import OwnerOAuth
from vault_index.services.access.tokens import TokenStore
from vault_index.surfaces.http_asgi import MCP_PATH, EraRouter, Guard
from vault_index.surfaces.http_config import NO_ROLE, HttpConfig, check_startup, url_hostname


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
        names.append(url_hostname(config.public_url))
    for name in names:
        shown = f"[{name}]" if ":" in name else name
        hosts += [shown, f"{shown}:*"]
        origins += [f"https://{shown}", f"https://{shown}:*", f"http://{shown}:*", f"http://{shown}"]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


# --- who calls ------------------------------------------------------------------------------------


class BearerVerifier:
    """The SDK's TokenVerifier: a bearer token from the store, or an OAuth access token we signed."""

    def __init__(self, store: TokenStore, oauth: OwnerOAuth | None, resource: str | None = None, *, vault):
        self.store, self.oauth = store, oauth
        self.resource = resource  # this server's own tokens are for this server (RFC 8707 check below)
        self.vault = vault  # and only tokens made for the vault it serves (one index serves several)

    async def verify_token(self, token: str):
        from mcp.server.auth.provider import AccessToken

        if self.oauth is not None and token.startswith("vio."):
            return await self.oauth.load_access_token(token)
        try:
            record = self.store.lookup(token, self.vault)
        except VaultIndexError as exc:  # a damaged token file: refuse everyone, say why in the log
            logging.getLogger(__name__).error("token store unreadable, every request is refused: %s", exc)
            return None
        if record is None:
            return None
        return AccessToken(token=token, client_id=f"token:{record.id}", scopes=[], subject=f"token:{record.id}",
                           resource=self.resource, claims={"role": record.role, "token_id": record.id})


def http_caller_factory(vault, ctx):
    """For `build_server`: the request's role is its token's role; nothing else is trusted.

    A request that reached a tool passed the bearer middleware, so a token is there; a missing one
    (never expected) is the deny-all guest, not the owner.
    """
    from mcp.server.auth.middleware.auth_context import get_access_token

    from vault_index.surfaces.callers import client_name

    return token_caller(vault, get_access_token(), client_name(ctx))


def token_caller(vault, token, agent: str):
    """The write service's Caller of a verified access token (None: the deny-all guest); the MCP
    tools and the web page (web_principal) both take it from here."""
    from vault_index.services.writes.write import Caller

    claims = (token.claims or {}) if token is not None else {}
    # Trigger: no verified token (never expected behind the bearer middleware).
    # Why: role None means the built-in owner in a vault without a config file.
    # Outcome: a role name no config can define, so the caller is the deny-all guest everywhere.
    role = claims.get("role") or NO_ROLE
    if role != NO_ROLE and vault.role_problem(role):
        # A token made for a role the config no longer has: say so (without listing the roles)
        # instead of the deny-all guest's "no such note" on every request.
        raise UsageError(f"this token's role {role!r} is not a role of the vault's config (renamed or removed); "
                         "its owner can make a new token with `vault-index token new --role NAME`")
    who = f"remote {token.client_id}" if token is not None else "remote (no token)"
    return Caller(identity=f"{who} <{claims.get('token_id', 'none')}@vault-index>", role=role, agent=agent)


async def web_principal(verifier: BearerVerifier, vault, token: str):
    """The web page's sign-in under serve --http: the bearer token (or an OAuth access token) the
    MCP endpoint takes, verified the same way, acting with its role over the served vault."""
    from vault_index.services.access.access import scope_for
    from vault_index.surfaces.web import Principal

    access = await verifier.verify_token(token)
    if access is None:
        return None
    try:
        caller = token_caller(vault, access, "web page")
    except UsageError:  # a token of a role the config no longer has
        return None
    return Principal(caller, scope_for(vault, vault.grants(caller.role)), vault)


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

METADATA_PATH = "/.well-known/oauth-authorization-server"
PUBLIC_CLIENT_METHOD = "none"  # RFC 7591: a public client (PKCE, no secret), as claude.ai and Claude Code register


def with_public_clients(routes: list, issuer, registration, revocation) -> list:
    """The SDK's OAuth routes, with RFC 8414 metadata that also lists `none` as a client auth method.

    Trigger: the SDK's metadata says only client_secret_post/basic. Why: its token endpoint accepts
    public clients (we register them, with PKCE), and a client that trusts the metadata would think
    it must hold a secret. Outcome: the same metadata with `none` added for the token endpoint. Not
    for revocation: the SDK's revocation request requires a client_secret field.
    """
    from mcp.server.auth.handlers.metadata import MetadataHandler
    from mcp.server.auth.routes import build_metadata, cors_middleware
    from starlette.routing import Route

    metadata = build_metadata(issuer, None, registration, revocation)
    methods = list(metadata.token_endpoint_auth_methods_supported or [])
    if PUBLIC_CLIENT_METHOD not in methods:
        metadata.token_endpoint_auth_methods_supported = [*methods, PUBLIC_CLIENT_METHOD]
    ours = Route(METADATA_PATH, endpoint=cors_middleware(MetadataHandler(metadata).handle, ["GET", "OPTIONS"]),
                 methods=["GET", "OPTIONS"])
    return [ours if getattr(route, "path", None) == METADATA_PATH else route for route in routes]


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

    from vault_index.services.workspace import served_root
    from vault_index.surfaces.tools import build_server

    store = TokenStore(config.credentials)
    server = build_server(app, memory_file, http_caller_factory, vault_root=vault_root)
    vault = served_root(app.workspace, vault_root)  # as build_server chose it: the vault tokens must name
    oauth = (OwnerOAuth(store, config.base_url, resource=config.base_url + MCP_PATH, vault=vault,
                        **({"clock": clock} if clock else {}))
             if config.oauth else None)
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
        registration, revocation = ClientRegistrationOptions(enabled=True), RevocationOptions(enabled=True)
        routes += with_public_clients(create_auth_routes(oauth, issuer, client_registration_options=registration,
                                                         revocation_options=revocation),
                                      issuer, registration, revocation)
        routes += consent_routes(oauth)
    # the web page (surfaces/web.py) on its own connection: a page never waits on a tool's lock
    verifier = BearerVerifier(store, oauth, str(resource), vault=vault)
    from functools import partial

    from vault_index.surfaces.web import build_routes

    routes += build_routes(app.reopen(), partial(web_principal, verifier, app.vault(vault)),
                           secure=config.base_url.startswith("https://"), token_in_link=False)

    @contextlib.asynccontextmanager
    async def lifespan(_):
        async with manager.run():
            yield

    starlette = Starlette(routes=routes, lifespan=lifespan, middleware=[
        Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier, resource_server_url=resource)),
        Middleware(AuthContextMiddleware)])
    return Guard(starlette, config, security_settings(config))


def serve_http(config: HttpConfig, memory_file=None, vault_root=None, watch: bool = False) -> None:
    """Check the start-up rules, then serve with uvicorn until Ctrl-C (`watch`: re-index changed files)."""
    import uvicorn

    from vault_index.services.app import App
    from vault_index.services.workspace import served_root
    from vault_index.surfaces.http_server import uvicorn_options
    from vault_index.surfaces.shutdown import leave_if_still_embedding, stop_watcher

    app = App.open(start=vault_root)
    check_startup(config, TokenStore(config.credentials), vault=served_root(app.workspace, vault_root))
    stop = watcher = None
    try:
        asgi = build_http_app(app, config, memory_file, vault_root)
        if watch:  # as serve_stdio: its own connection on its own thread, sharing the models
            from vault_index.services.watch import start_in_background

            watcher, stop, _ = start_in_background(lambda: app.reopen())
        uvicorn.run(asgi, host=config.host, port=config.port, log_level="warning", ssl_certfile=config.tls_cert,
                    ssl_keyfile=config.tls_key, proxy_headers=config.behind_tls_proxy, lifespan="on",
                    timeout_graceful_shutdown=5, **uvicorn_options(config.header_timeout_s))
    finally:
        stop_watcher(watcher, stop)
        app.close()
    leave_if_still_embedding()  # never finalize under a thread inside onnxruntime (surfaces/shutdown.py)
