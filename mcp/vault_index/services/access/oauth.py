"""A single-owner OAuth 2.1 authorization server, so claude.ai (which needs OAuth) can connect.

The MCP SDK's auth module does the protocol: RFC 8414 metadata, RFC 7591 registration, the
authorize and token endpoints (PKCE S256 only: `plain` fails its request model; the verifier is
checked there; expired codes and a changed redirect_uri are refused there), revocation, and the
RFC 9728 resource metadata. This module is the provider those endpoints call, plus the state only
we can decide:
- redirect allowlist: https on claude.ai / claude.com (and their subdomains), or a loopback host
  (http allowed there); anything else is refused at registration and again at /authorize;
- the consent step: a page asks for the owner secret, a bearer token from `vault-index token new`
  (compared in constant time, services/access/tokens.py) made for the vault this server serves; the
  approving token's role becomes the grant's role, so an OAuth client never gets more than the
  secret it was approved with, and a grant works only while that token exists, on its vault's server;
- codes: 256 random bits, single use (popped), 5 minutes;
- access tokens: 15 minutes; refresh tokens: 30 days, single use (a refresh returns a new pair);
  both are bound to this server's resource (RFC 8707), and a rotated refresh token presented again
  revokes every token of its approval (OAuth 2.1 reuse detection);
- registration: at most REGISTRATIONS_PER_WINDOW a minute and MAX_CLIENTS in all; an approved
  client is never evicted to make room.

Tokens are self-contained and signed (HMAC-SHA256) with a key derived from this server's key and
the approving token's stored hash: they survive a restart, and revoking or rotating that token
(`vault-index token rotate ID`) invalidates every OAuth token it granted, with no list to clean.
Codes and pending consents live in memory: a restart drops them, which only asks the owner to
approve again. Used refresh tokens and revoked tokens are written to oauth-used.json beside the
key: a restart must not make a rotated refresh token (30 days) or a revoked one work again.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from vault_index.services.access.hosts import is_loopback
from vault_index.services.access.tokens import TokenRecord, TokenStore, write_private

CODE_TTL_S = 300  # the brief and OAuth 2.1: short-lived, single-use codes
ACCESS_TTL_S = 900  # short-lived; claude.ai refreshes on its own
REFRESH_TTL_S = 30 * 24 * 3600
CONSENT_TTL_S = 600  # the owner has ten minutes to type the secret
MAX_CONSENT_ATTEMPTS = 5  # wrong secrets before a pending consent is dropped
MAX_PENDING = 256  # pending consents and codes kept; the oldest go first
MAX_USED = 10_000  # used refresh / revoked access ids kept before the expired ones are dropped
MAX_CLIENTS = 200  # dynamic registration is open to anyone who reaches the server: bounded
# Trigger: 205 registrations in 8.5 s evicted an approved client, whose refresh then failed (issue 22).
# Outcome: at most REGISTRATIONS_PER_WINDOW in REGISTRATION_WINDOW_S, server-wide; when full, the
# oldest client never approved goes; approved clients are never evicted (a full book refuses instead).
REGISTRATIONS_PER_WINDOW = 30
REGISTRATION_WINDOW_S = 60.0
RESOURCE_PATH = "/mcp"  # = surfaces/http_asgi.MCP_PATH: the one resource tokens are bound to (RFC 8707)
KEY_FILE = "oauth.key"
CLIENTS_FILE = "oauth-clients.json"
USED_FILE = "oauth-used.json"  # jti -> expiry of used refresh and revoked tokens
TOKEN_MARK = "vio"  # "vio.<kind>.<payload>.<signature>": tells OAuth tokens from bearer tokens
ALLOWED_HOSTS = ("claude.ai", "claude.com")
# One DNS label: letters, digits and inner hyphens. A literal `*.claude.ai` is no host (issue 22).
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")


def redirect_allowed(uri: str) -> bool:
    """https on claude.ai / claude.com (or a subdomain), or a loopback host (any scheme of http/https)."""
    try:
        parts = urlsplit(str(uri))
        host = (parts.hostname or "").lower()
    except ValueError:
        return False
    if parts.username or parts.password or parts.fragment:
        return False
    if is_loopback(host):
        return parts.scheme in ("http", "https")
    if not all(_LABEL.fullmatch(label) for label in host.split(".")):
        return False
    return parts.scheme == "https" and any(host == h or host.endswith("." + h) for h in ALLOWED_HOSTS)


class AnyScopeClient(OAuthClientInformationFull):
    """A registered client whose requested scopes are accepted as given.

    Scopes grant nothing here (the approving token's role decides every right), and clients differ
    in what they ask for: claude.ai may register without a scope and then ask for one. The SDK's
    default check refuses any scope not named at registration, which would only break such clients.
    """

    def validate_scope(self, requested_scope: str | None) -> list[str] | None:
        return requested_scope.split() if requested_scope else None


class OwnerCode(AuthorizationCode):
    role: str
    token_id: str


@dataclass(frozen=True)
class Pending:
    client_id: str
    params: AuthorizationParams
    created: float
    attempts: int = 0


@dataclass(frozen=True)
class Claims:
    kind: str  # "access" or "refresh"
    client_id: str
    role: str
    token_id: str
    expires: int
    jti: str
    scopes: tuple[str, ...]
    resource: str | None
    family: str = ""  # one per approval, kept through refreshes: a replayed refresh token revokes it all


class OwnerOAuth:
    """The provider the SDK's auth routes call (OAuthAuthorizationServerProvider), plus consent."""

    def __init__(self, store: TokenStore, issuer_url: str, clock=time.time, resource: str | None = None, *,
                 vault: str | Path):
        self.store, self.issuer = store, issuer_url.rstrip("/")
        self.vault = vault  # the served vault's folder: only its tokens approve, only their grants work
        self.resource = (resource or self.issuer + RESOURCE_PATH).rstrip("/")
        self.clock = clock
        self._registered: deque[float] = deque()  # registration times within the window
        self._lock = threading.Lock()
        self._pending: dict[str, Pending] = {}
        self._codes: dict[str, OwnerCode] = {}
        self._key = self._load_key()
        self._clients, self._approved = self._load_clients()
        self._used: dict[str, float] = self._load_used()  # refresh jti -> expiry, and revoked access jti

    # --- keys and clients (persisted beside the tokens) ------------------------------------------

    def _load_key(self) -> bytes:
        path = self.store.folder / KEY_FILE
        try:
            key = path.read_bytes()
            if len(key) >= 32:
                return key
        except FileNotFoundError:
            pass
        key = secrets.token_bytes(32)
        write_private(self.store.folder, KEY_FILE, key)
        return key

    def _load_clients(self) -> tuple[dict[str, OAuthClientInformationFull], set[str]]:
        """(clients, ids of the approved ones). The older file (a bare list) did not say which were
        approved: all of them count as approved, so none is ever evicted for a newcomer."""
        try:
            data = json.loads((self.store.folder / CLIENTS_FILE).read_text())
            listed = data if isinstance(data, list) else data["clients"]
            clients = {c["client_id"]: OAuthClientInformationFull.model_validate(c) for c in listed}
            approved = set(clients) if isinstance(data, list) else {str(a) for a in data.get("approved", [])}
            return clients, approved & set(clients)
        except (FileNotFoundError, ValueError, KeyError, TypeError, AttributeError):
            return {}, set()

    def _load_used(self) -> dict[str, float]:
        try:
            data = json.loads((self.store.folder / USED_FILE).read_text())
            now = self.clock()
            return {str(jti): float(until) for jti, until in data.items() if float(until) >= now}
        except (FileNotFoundError, ValueError, TypeError, AttributeError):
            return {}

    def _mark_used(self, jti: str, until: float) -> None:
        """Record a used or revoked token id, on disk before the caller answers (under self._lock)."""
        if len(self._used) > MAX_USED:  # an expired token fails on its expiry anyway
            now = self.clock()
            self._used = {j: u for j, u in self._used.items() if u >= now}
        self._used[jti] = until
        write_private(self.store.folder, USED_FILE, json.dumps(self._used, separators=(",", ":")).encode())

    def _save_clients(self) -> None:
        data = {"clients": [c.model_dump(mode="json", exclude_none=True) for c in self._clients.values()],
                "approved": sorted(self._approved)}
        write_private(self.store.folder, CLIENTS_FILE, json.dumps(data, indent=1).encode())

    # --- registration (RFC 7591) -----------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        found = self._clients.get(client_id)
        return AnyScopeClient.model_validate(found.model_dump()) if found is not None else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        bad = [str(u) for u in client_info.redirect_uris or [] if not redirect_allowed(str(u))]
        if bad:
            raise RegistrationError("invalid_redirect_uri",
                                    f"redirect URIs must be https on claude.ai or claude.com, or a loopback "
                                    f"address; refused: {', '.join(bad)}")
        with self._lock:
            now = self.clock()
            while self._registered and now - self._registered[0] > REGISTRATION_WINDOW_S:
                self._registered.popleft()
            if len(self._registered) >= REGISTRATIONS_PER_WINDOW:
                wait = REGISTRATION_WINDOW_S - (now - self._registered[0])
                raise RegistrationError("invalid_client_metadata", f"too many client registrations; try again in "
                                        f"{max(1, round(wait))} s")
            if len(self._clients) >= MAX_CLIENTS:  # drop the oldest registration never approved
                spare = next((cid for cid in self._clients if cid not in self._approved), None)
                if spare is None:
                    raise RegistrationError("invalid_client_metadata", f"{MAX_CLIENTS} approved clients are "
                                            "registered already; no more can be")
                self._clients.pop(spare)
            self._registered.append(now)
            self._clients[client_info.client_id] = client_info
            self._save_clients()

    # --- authorize and consent -------------------------------------------------------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if not redirect_allowed(str(params.redirect_uri)):
            raise AuthorizeError("invalid_request", "redirect_uri is not on the allowlist")
        if params.resource and not self.is_ours(params.resource):
            raise AuthorizeError("invalid_target", f"this server grants tokens for {self.resource} only")
        request_id = secrets.token_urlsafe(24)
        with self._lock:
            self._trim(self._pending)
            self._pending[request_id] = Pending(client.client_id, params, self.clock())
        return f"{self.issuer}/oauth/consent?request={request_id}"

    def pending(self, request_id: str) -> Pending | None:
        with self._lock:
            found = self._pending.get(request_id)
            if found and self.clock() - found.created > CONSENT_TTL_S:
                self._pending.pop(request_id, None)
                return None
            return found

    def approve(self, request_id: str, secret: str) -> tuple[str | None, str]:
        """(redirect URL with a fresh code, "") when the secret is a live token; else (None, why).

        A wrong secret counts an attempt; after MAX_CONSENT_ATTEMPTS the request is dropped and the
        client must start over, so the page cannot be used to guess secrets online.
        """
        found = self.pending(request_id)
        if found is None:
            return None, "this approval request is unknown or expired; start the connection again"
        record = self.store.lookup(secret, self.vault)  # another vault's token is a wrong secret here
        with self._lock:
            if record is None:
                if found.attempts + 1 >= MAX_CONSENT_ATTEMPTS:
                    self._pending.pop(request_id, None)
                else:
                    self._pending[request_id] = Pending(found.client_id, found.params, found.created,
                                                        found.attempts + 1)
                return None, "wrong owner secret"
            if self._pending.pop(request_id, None) is None:  # approved twice at once: one wins
                return None, "this approval request was already used"
            if found.client_id in self._clients and found.client_id not in self._approved:
                self._approved.add(found.client_id)  # from now on never evicted for a newcomer
                self._save_clients()
            code = secrets.token_urlsafe(32)
            params = found.params
            self._trim(self._codes)
            self._codes[code] = OwnerCode(
                code=code, scopes=params.scopes or [], expires_at=self.clock() + CODE_TTL_S,
                client_id=found.client_id, code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
                redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource,
                subject=f"token:{record.id}", role=record.role, token_id=record.id)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state), ""

    def _trim(self, table: dict) -> None:
        while len(table) >= MAX_PENDING:
            table.pop(next(iter(table)))

    # --- codes and tokens ------------------------------------------------------------------------

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> OwnerCode | None:
        with self._lock:
            return self._codes.get(code)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, code: OwnerCode) -> OAuthToken:
        with self._lock:  # single use: whoever pops it first gets the tokens
            if self._codes.pop(code.code, None) is None:
                raise TokenError("invalid_grant", "authorization code already used")
        record = self._live(code.token_id)
        if record is None:
            raise TokenError("invalid_grant", "the secret that approved this code was revoked")
        return self._pair(client.client_id, record, tuple(code.scopes), secrets.token_urlsafe(12))

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        claims = self.verify(refresh_token, "refresh", replayed_ok=True)
        if claims is None or claims.client_id != client.client_id:
            return None
        with self._lock:
            if claims.jti in self._used:  # a rotated refresh token, replayed: revoke what it led to
                if claims.family:
                    self._mark_used(_family_key(claims.family), self.clock() + REFRESH_TTL_S)
                return None
        return RefreshToken(token=refresh_token, client_id=claims.client_id, scopes=list(claims.scopes),
                            expires_at=claims.expires, resource=claims.resource, subject=f"token:{claims.token_id}")

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        claims = self.verify(refresh_token.token, "refresh")
        if claims is None:
            raise TokenError("invalid_grant", "refresh token invalid or expired")
        with self._lock:  # rotation: a refresh token works once
            if claims.jti in self._used:
                raise TokenError("invalid_grant", "refresh token already used")
            self._mark_used(claims.jti, claims.expires)
        record = self._live(claims.token_id)
        if record is None:
            raise TokenError("invalid_grant", "the secret that approved this client was revoked")
        return self._pair(client.client_id, record, tuple(scopes or claims.scopes),
                          claims.family or secrets.token_urlsafe(12))

    async def load_access_token(self, token: str) -> AccessToken | None:
        claims = self.verify(token, "access")
        if claims is None or not self.is_ours(claims.resource or ""):  # issued for another resource, or unbound
            return None
        return AccessToken(token=token, client_id=claims.client_id, scopes=list(claims.scopes),
                           expires_at=claims.expires, resource=claims.resource, subject=f"token:{claims.token_id}",
                           claims={"role": claims.role, "token_id": claims.token_id})

    async def revoke_token(self, token) -> None:
        claims = self.verify(token.token, "access") or self.verify(token.token, "refresh")
        if claims is not None:
            with self._lock:
                self._mark_used(claims.jti, claims.expires)

    # --- signing ---------------------------------------------------------------------------------

    def _live(self, token_id: str) -> TokenRecord | None:
        """The approving token, while it exists and was made for this server's vault."""
        return self.store.get(token_id, self.vault)

    def _signing_key(self, record: TokenRecord) -> bytes:
        return hmac.new(self._key, record.sha256.encode(), hashlib.sha256).digest()

    def is_ours(self, resource: str) -> bool:
        return str(resource).rstrip("/") == self.resource

    def _pair(self, client_id: str, record: TokenRecord, scopes: tuple[str, ...], family: str) -> OAuthToken:
        """An access and a refresh token, both bound to this server's resource (RFC 8707)."""
        now = int(self.clock())
        access = self._sign(Claims("access", client_id, record.role, record.id, now + ACCESS_TTL_S,
                                   secrets.token_urlsafe(12), scopes, self.resource, family), record)
        refresh = self._sign(Claims("refresh", client_id, record.role, record.id, now + REFRESH_TTL_S,
                                    secrets.token_urlsafe(12), scopes, self.resource, family), record)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=ACCESS_TTL_S,
                          scope=" ".join(scopes) or None, refresh_token=refresh)

    def _sign(self, claims: Claims, record: TokenRecord) -> str:
        payload = _b64(json.dumps({"c": claims.client_id, "r": claims.role, "t": claims.token_id,
                                   "e": claims.expires, "j": claims.jti, "s": list(claims.scopes),
                                   "res": claims.resource, "f": claims.family}, separators=(",", ":")).encode())
        head = f"{TOKEN_MARK}.{claims.kind}.{payload}"
        return f"{head}.{_b64(hmac.new(self._signing_key(record), head.encode(), hashlib.sha256).digest())}"

    def verify(self, token: str, kind: str, replayed_ok: bool = False) -> Claims | None:
        """The claims of a token we signed, of this kind, unexpired, unrevoked, whose approving
        token still exists (and still has the role it had); None for anything else.

        `replayed_ok`: a used (rotated) token still verifies, so the caller can see it replayed."""
        try:
            mark, got_kind, payload, signature = str(token).split(".")
            if mark != TOKEN_MARK or got_kind != kind:
                return None
            data = json.loads(_unb64(payload))
            claims = Claims(kind, str(data["c"]), str(data["r"]), str(data["t"]), int(data["e"]), str(data["j"]),
                            tuple(data.get("s") or ()), data.get("res"), str(data.get("f") or ""))
        except (ValueError, KeyError, TypeError):
            return None
        record = self._live(claims.token_id)
        if record is None or record.role != claims.role:
            return None
        expected = hmac.new(self._signing_key(record), f"{mark}.{got_kind}.{payload}".encode(), hashlib.sha256).digest()
        try:
            if not hmac.compare_digest(expected, _unb64(signature)):
                return None
        except ValueError:
            return None
        if claims.expires < self.clock():
            return None
        with self._lock:
            if claims.family and _family_key(claims.family) in self._used:  # its family was revoked
                return None
            if claims.jti in self._used and not replayed_ok:  # a revoked token, or a rotated refresh token
                return None
        return claims


def _family_key(family: str) -> str:
    return f"family:{family}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

