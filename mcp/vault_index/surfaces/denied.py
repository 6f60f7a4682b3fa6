"""What a caller who lacks a grant is told, for the MCP tools and the CLI alike.

Apart from surfaces/shapes.py (pydantic and every output model) so that a CLI search, which only
needs this sentence, does not load them: about 180 ms of each `vault-index search`.
"""

from __future__ import annotations


def denied_text(caller, what: str) -> str:
    who = f"role {caller.role}" if caller.role else "the guest (no role)"
    return (f"denied: {who} lacks {what}. Roles live in .vault-index/config.yaml; start with --role "
            "NAME or set VAULT_ROLE.")


def denied_outcome(caller) -> dict:
    """The answer of vault_review (and the CLI's lint, dashboard and recent) to a caller who reads nothing."""
    return {"status": "denied", "message": denied_text(caller, "read"), "path": "", "version": None, "data": {}}
