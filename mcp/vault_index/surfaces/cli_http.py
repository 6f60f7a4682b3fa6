"""`vault-index serve --http` and `vault-index token new|list|revoke|rotate`: remote access (docs/remote.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from vault_index.errors import UsageError


def add_serve_options(p: argparse.ArgumentParser) -> None:
    """The HTTP options of `serve` (without --http, serve speaks stdio as before)."""
    p.add_argument("--http", metavar="[HOST:]PORT", help="serve Streamable HTTP instead of stdio (host 127.0.0.1)")
    p.add_argument("--era", choices=("auto", "legacy", "modern"), default="auto",
                   help="protocol era: auto (each request's own), legacy (handshake revisions), modern (2026-07-28)")
    p.add_argument("--public-url", metavar="URL", help="the https URL clients use (a proxy or tunnel in front)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="another Host name clients may use (repeatable); loopback names are always allowed")
    p.add_argument("--behind-tls-proxy", action="store_true",
                   help="allow a non-loopback bind without --tls-cert: a proxy in front terminates TLS")
    p.add_argument("--tls-cert", metavar="PEM")
    p.add_argument("--tls-key", metavar="PEM")
    p.add_argument("--rate", type=float, default=None, help="requests per second per credential (0: no limit)")
    p.add_argument("--burst", type=int, default=None, help="requests a credential may send at once")
    p.add_argument("--header-timeout", type=float, default=None, metavar="S",
                   help="close a connection whose request headers take over S seconds, or whose body "
                        "pauses that long (default 10; a whole body: 60 s)")
    p.add_argument("--no-oauth", action="store_true", help="bearer tokens only (no OAuth endpoints)")


def add_bench_options(p: argparse.ArgumentParser) -> None:
    """`bench --http`: load on loopback through the HTTP server, beside stdio (docs/remote.md)."""
    from vault_index.tooling.bench_http import DEFAULT_CLIENTS, DEFAULT_SEARCHES, DEFAULT_WRITES

    p.add_argument("--http", action="store_true", help="instead: concurrent clients through `serve --http`")
    p.add_argument("--clients", type=int, default=DEFAULT_CLIENTS, help=f"with --http (default {DEFAULT_CLIENTS})")
    p.add_argument("--searches", type=int, default=DEFAULT_SEARCHES, help=f"with --http (default {DEFAULT_SEARCHES})")
    p.add_argument("--http-writes", type=int, default=DEFAULT_WRITES, help=f"with --http (default {DEFAULT_WRITES})")
    p.add_argument("--search-mode", default="keyword", help="with --http: search_notes mode (default keyword)")


def parse_bind(text: str) -> tuple[str, int]:
    """"8765", "0.0.0.0:8765", "[::1]:8765" -> (host, port); loopback when no host is given."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--http {text}: give [HOST:]PORT with a port from 1 to 65535")
    return host, int(port)


def http_config(args):
    from vault_index.config import Settings
    from vault_index.services.access.tokens import credentials_dir
    from vault_index.surfaces.http_config import DEFAULT_BURST, DEFAULT_RATE_PER_S, HttpConfig

    host, port = parse_bind(args.http)
    if args.header_timeout is not None and not 0 < args.header_timeout < float("inf"):
        raise UsageError(f"--header-timeout {args.header_timeout}: give a number of seconds above 0")
    return HttpConfig(host=host, port=port, era=args.era, public_url=args.public_url,
                      allowed_hosts=tuple(args.allowed_host), behind_tls_proxy=args.behind_tls_proxy,
                      tls_cert=args.tls_cert, tls_key=args.tls_key,
                      rate_per_s=DEFAULT_RATE_PER_S if args.rate is None else args.rate,
                      burst=DEFAULT_BURST if args.burst is None else args.burst, oauth=not args.no_oauth,
                      header_timeout_s=args.header_timeout, credentials=credentials_dir(Settings.from_env().db_path))


def cmd_serve_http(args) -> int:
    from vault_index.services.access.tokens import TokenStore
    from vault_index.surfaces.http_config import check_startup

    if getattr(args, "role", None):
        raise UsageError("--role is for stdio: over HTTP each request's role is its token's "
                         "(`vault-index token new --role NAME`)")
    config = http_config(args)
    check_startup(config, TokenStore(config.credentials), role_hint=hint_role(getattr(args, "vault", None)),
                  vault=served(getattr(args, "vault", None)))
    from vault_index.surfaces.http import serve_http  # the MCP SDK and OAuth: only once the checks pass

    print(f"vault-index: serving {config.base_url}/mcp (era {config.era}); Ctrl-C stops", file=sys.stderr, flush=True)
    serve_http(config, memory_file=args.memory_file, vault_root=getattr(args, "vault", None),
               watch=getattr(args, "watch", False))
    return 0


# --- tokens ---------------------------------------------------------------------------------------


def _store():
    from vault_index.config import Settings
    from vault_index.services.access.tokens import TokenStore, credentials_dir

    return TokenStore(credentials_dir(Settings.from_env().db_path))


def cmd_token(app, args) -> int:
    store = _store()
    if args.token_command == "new":
        _check_role(args)
        token, record = store.new(args.role, args.label or "", vault=served(getattr(args, "vault", None)))
        return _show(args, token, record)
    if args.token_command == "rotate":
        token, record = store.rotate(args.id, served(getattr(args, "vault", None)))
        print(f"token {args.id} revoked with every OAuth grant it approved", file=sys.stderr)
        return _show(args, token, record)
    if args.token_command == "revoke":
        gone = store.revoke(args.id)
        print(f"revoked {gone.id} (role {gone.role}) and every OAuth grant it approved", file=sys.stderr)
        return 0
    rows = [{"id": r.id, "role": r.role, "created": r.created, "label": r.label, "vault": r.vault or None}
            for r in store.records()]
    if args.json:
        print(json.dumps(rows))
    else:
        for row in rows:
            vault = row["vault"] or "(no vault: made before tokens were bound; `token rotate` it in its vault)"
            print(f"{row['id']}  {row['role']:<12} {row['created']}  {vault}  {row['label']}")
        if not rows:
            print(f"no tokens; `vault-index token new --role {hint_role(None)}` makes one", file=sys.stderr)
    return 0


def _show(args, token: str, record) -> int:
    if args.json:
        print(json.dumps({"token": token, "id": record.id, "role": record.role}))
    else:
        print(token)
        print(f"id {record.id}, role {record.role}: shown once, only its hash is kept", file=sys.stderr)
    return 0


def served(folder: str | None) -> Path:
    """The folder `serve --http` would serve from here (`--vault`, else the project's vault or
    folder): the vault a new token is bound to, and the one whose tokens a server accepts."""
    from vault_index.services import workspace

    start = Path(folder).expanduser().resolve() if folder else None
    return workspace.served_root(workspace.find(start=start), folder)


def _vault(folder: str | None):
    from vault_index.services.vault.vault import Vault

    return Vault.open(served(folder))


def _check_role(args) -> None:
    """Trigger: `token new --role editr` made a token that could do nothing. Why: the typo showed
    only later, as "no such note" on every request. Outcome: a role the vault (--vault, else the
    project folder) does not define is refused, naming the roles it does."""
    role = (args.role or "").strip()
    if not role:
        return  # the token store says a role is needed
    problem = _vault(getattr(args, "vault", None)).role_problem(role)
    if problem:
        raise UsageError(f"--role: {problem}")


def hint_role(folder: str | None) -> str:
    """The role a "make a token" hint names: one the vault has (ROLE when it can't be read or has none)."""
    try:
        return _vault(folder).suggested_role() or "ROLE"
    except Exception:  # noqa: BLE001 - a hint only; a broken config is reported where it is used
        return "ROLE"


def add_parsers(sub, common) -> None:
    p = sub.add_parser("token", parents=[common], help="bearer tokens for `serve --http` (docs/remote.md)")
    tsub = p.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    new = tsub.add_parser("new", parents=[common], help="make a token for a role; printed once, stored hashed")
    new.add_argument("--role", required=True, help="a role of the vault's .vault-index/config.yaml (owner by default)")
    new.add_argument("--label", help="a note to recognise it by (e.g. laptop, claude.ai)")
    new.add_argument("--vault", metavar="DIR", help="the vault it opens and whose roles it names (default: the "
                     "project's vault or folder, as `serve --http` there serves it)")
    tsub.add_parser("list", parents=[common], help="ids, roles and labels (never the tokens)")
    revoke = tsub.add_parser("revoke", parents=[common], help="stop a token and every OAuth grant it approved")
    revoke.add_argument("id")
    rotate = tsub.add_parser("rotate", parents=[common], help="a new token with the same role; the old one stops")
    rotate.add_argument("id")
    rotate.add_argument("--vault", metavar="DIR", help="for a token made before tokens named their vault: the vault "
                        "the new one opens (default: as for `new`)")
    p.set_defaults(run=cmd_token)
