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

from vault_index.services import write
from vault_index.services.write import Caller

MAX_AGENT_CHARS = 80


def local_role(vault, flag: str | None = None) -> str | None:
    """The role of the person at this machine (see the module docstring for the order)."""
    chosen = flag or os.environ.get("VAULT_ROLE") or vault.local_role
    return str(chosen) if chosen else None


@functools.lru_cache(maxsize=8)
def local_identity(root: str) -> str:
    """"Name <email>" of the person at this machine (git config, else the login), once per process."""
    return write.local_identity(Path(root))


def cli_caller(vault, role_flag: str | None = None) -> Caller:
    return Caller(identity=local_identity(str(Path(vault.root))), role=local_role(vault, role_flag), agent="cli")


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

    return factory
