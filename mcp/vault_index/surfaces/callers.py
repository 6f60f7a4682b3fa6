"""Who is calling: the local person behind stdio and the CLI, as a write-service `Caller`.

A transport chooses how the caller is known; the tools never guess. Here, for the local transports:
- role: `--role`, else `VAULT_ROLE`, else the config's `local_role`, else (no config file at all)
  the built-in `owner`; with a config file and none of these, the caller is the deny-all guest;
- identity: `git config user.name` / `user.email` in the vault, else `$USER`;
- agent claim: the MCP client's name from its initialize request, else "mcp"; the CLI says "cli".
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from vault_index.errors import UsageError
from vault_index.services.writes import write_types
from vault_index.services.writes.write_types import Caller

MAX_AGENT_CHARS = 80


def local_role(vault, flag: str | None = None) -> str | None:
    """The role of the person at this machine (see the module docstring for the order).

    Trigger: `--role editr` (or VAULT_ROLE=editr) became the deny-all guest. Why: every answer
    was then "no such note" (exit 3), which hid the typo. Outcome: a role the vault does not
    define is a UsageError naming the roles it does (the config's own local_role is checked on load).
    """
    env_role = os.environ.get("VAULT_ROLE")
    chosen = flag or env_role or vault.local_role
    if chosen and (flag or env_role):
        problem = vault.role_problem(str(chosen))
        if problem:
            raise UsageError(f"{'--role' if flag else 'VAULT_ROLE'}: {problem}")
    return str(chosen) if chosen else None


@functools.lru_cache(maxsize=8)
def local_identity(root: str) -> str:
    """"Name <email>" of the person at this machine (git config, else the login), once per process."""
    return write_types.local_identity(Path(root))


def cli_caller(vault, role_flag: str | None = None) -> Caller:
    return Caller(identity=local_identity(str(Path(vault.root))), role=local_role(vault, role_flag), agent="cli")


def local_read_scope(app, role_flag: str | None = None):
    """(caller, scope) of the local person over the vault the stdio server serves from here.

    Trigger: the CLI's `search` ignored VAULT_ROLE while the MCP server filtered by it (a reader
    saw drafts at the terminal). Why: the terminal in a folder must see what the agent there sees.
    Outcome: the CLI takes its role and vault the way the stdio server does (content_root(), the
    server's default vault) and filters with the same access.granted_filters.
    """
    from vault_index.config import content_root
    from vault_index.services.access.access import scope_for

    root = app.workspace.root if app.workspace.kind == "vault" else content_root()  # as build_server
    vault = app.vault(root)
    caller = cli_caller(vault, role_flag)
    return caller, scope_for(vault, vault.grants(caller.role))


def client_name(ctx) -> str:
    """The MCP client's own name from the initialize request; "mcp" where the SDK has none."""
    try:
        params = ctx.session.client_params
        name = params.client_info.name if params is not None else ""
    except Exception:  # noqa: BLE001 - handshake-free protocol or no request context
        name = ""
    name = " ".join(str(name or "").split())[:MAX_AGENT_CHARS]
    return name or "mcp"


def stdio_caller_factory(role_flag: str | None = None):
    """For `build_server`: every request of the stdio server comes from the local person."""

    def factory(vault, ctx) -> Caller:
        return Caller(identity=local_identity(str(Path(vault.root))), role=local_role(vault, role_flag),
                      agent=client_name(ctx))

    # the role alone, for the instructions before the handshake: no `git config` runs for it
    factory.role_of = lambda vault: local_role(vault, role_flag)
    return factory
