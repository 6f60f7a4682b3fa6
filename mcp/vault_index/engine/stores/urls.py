"""Index URLs: which one names PostgreSQL, and how one is shown without its password.

Below both the store contract and the PostgreSQL store, which each need them.
"""

from __future__ import annotations

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and url.strip().lower().startswith(POSTGRES_SCHEMES)


def redact(url: str) -> str:
    """`url` with any password replaced by ***, for messages and status."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "(unparsable URL)"
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))
