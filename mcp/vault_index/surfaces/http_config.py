"""`serve --http`'s settings and the rules that refuse to start, apart from the server.

surfaces/http.py imports the MCP SDK and the OAuth provider; a refused start (no token, no TLS off
loopback) needs neither, so the CLI checks here first and says why in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from vault_index.errors import UsageError
from vault_index.services.access.hosts import is_loopback
from vault_index.services.access.tokens import TokenStore
from vault_index.surfaces.http_asgi import Era

DEFAULT_PORT = 8765
MAX_BODY_BYTES = 4 * 1024 * 1024  # note_write takes a body of up to 1,000,000 characters
DEFAULT_RATE_PER_S = 20.0  # sustained requests per second per credential
DEFAULT_BURST = 200  # a client's start-up (tools/list, a few searches) fits in the burst
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
    header_timeout_s: float | None = None  # a connection's headers, or it is closed (None: http_server's default)
    oauth: bool = True
    credentials: Path = field(default_factory=Path)  # the token folder (services/access/tokens.credentials_dir)

    @property
    def base_url(self) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        scheme = "https" if self.tls_cert else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"


def check_startup(config: HttpConfig, store: TokenStore, role_hint: str = "ROLE", *, vault: Path) -> None:
    """Refuse to start where a vault would reach a network unprotected (a UsageError says what to do).

    `role_hint`: a role of the served vault for the "make a token" hint (cli_http.hint_role);
    `vault`: the folder served, whose tokens alone open it (services/access/tokens.py)."""
    if not store.for_vault(vault):
        others = len(store.records())
        why = (f" ({others} token(s) exist, but a token opens only the vault it was made for, and none was made "
               f"for {vault}; tokens made before this rule open nothing: `vault-index token rotate ID` in the "
               "vault binds one)") if others else ""
        raise UsageError(f"no token yet for this vault{why}: the HTTP server never starts unauthenticated. Create "
                         f"one with `vault-index token new --role {role_hint}` in the vault (printed once) and "
                         "start again")
    if not is_loopback(config.host) and not config.tls_cert and not config.behind_tls_proxy:
        raise UsageError(f"{config.host} is not a loopback address and there is no TLS: give --tls-cert and "
                         "--tls-key, or --behind-tls-proxy when a proxy (Caddy, a tunnel) terminates TLS")
    if bool(config.tls_cert) != bool(config.tls_key):
        raise UsageError("--tls-cert and --tls-key go together")
    if config.public_url and not (config.public_url.startswith("https://")
                                  or is_loopback(url_hostname(config.public_url))):
        raise UsageError("--public-url must be https:// (OAuth refuses plain http except on loopback)")


def url_hostname(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).hostname or ""
