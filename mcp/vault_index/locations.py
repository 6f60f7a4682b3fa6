"""Where the index lives, as plain strings, with the standard library's `os` alone.

`config.py` turns these into Paths and is what the rest of the package uses. They live here so
that the edit hook can find the running server's socket (`<db>.sock`) before it imports anything
else: the hook runs after every edit while Claude Code waits, and `config` pulls in dataclasses
(inspect, ast), pathlib and hashlib's OpenSSL binding, which cost it about 60 ms under load
(`python -X importtime scripts/reindex_hook.py`; docs/adr/0010, issue 13).

Path.expanduser().resolve() and os.path.realpath(os.path.expanduser()) are the same operation
(Path.resolve calls realpath since Python 3.10); tests/test_locations.py keeps the two equal.
"""

from __future__ import annotations

import os

HOME_FOLDER = ".mcp-memory"  # under the user's home, unless VAULT_INDEX_HOME moves it
DB_NAME = "vault-index.db"
PROJECTS_FOLDER = "projects"  # <home>/projects/<name>-<hash>/vault-index.db, one per project folder
PROJECT_HASH_CHARS = 8


def _sha256_hex(data: bytes) -> str:
    # Trigger: hashlib imports its OpenSSL binding (15 ms under load) for one short digest.
    # Outcome: CPython's built-in SHA-256 module when there is one (same digest, tested).
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # Python 3.10-3.11
        except ImportError:
            from hashlib import sha256
    return sha256(data).hexdigest()


def index_home() -> str:
    """VAULT_INDEX_HOME or ~/.mcp-memory."""
    return os.path.expanduser(os.environ.get("VAULT_INDEX_HOME") or os.path.join("~", HOME_FOLDER))


def known_project() -> str | None:
    """VAULT_PROJECT, else CLAUDE_PROJECT_DIR, resolved; None when neither is set."""
    raw = os.environ.get("VAULT_PROJECT") or os.environ.get("CLAUDE_PROJECT_DIR")
    return os.path.realpath(os.path.expanduser(raw)) if raw else None


def is_tool_checkout(folder: str) -> bool:
    """True when `folder` is a clone of vault-index itself."""
    return (os.path.isfile(os.path.join(folder, "mcp", "vault_index", "__init__.py"))
            and os.path.isfile(os.path.join(folder, "setup.py")))


def project_slug(project: str) -> str:
    """`<name>-<hash>`: readable, and two folders of the same name never share an index."""
    resolved = os.path.realpath(os.path.expanduser(project))
    name = _safe_name(os.path.basename(resolved)).strip("-.")[:40] or "root"
    return f"{name}-{_sha256_hex(resolved.encode('utf-8'))[:PROJECT_HASH_CHARS]}"


def _safe_name(name: str) -> str:
    """re.sub(r"[^A-Za-z0-9._-]+", "-", name) without importing re (the edit hook no longer
    imports json, which loaded it; tests/test_locations.py compares the two)."""
    out: list[str] = []
    in_run = False
    for ch in name:
        if ch.isascii() and (ch.isalnum() or ch in "._-"):
            out.append(ch)
            in_run = False
        elif not in_run:
            out.append("-")
            in_run = True
    return "".join(out)


def default_db_path() -> str:
    """VAULT_INDEX_DB, else the one index every workspace shares (ADR 0020: each source there names
    its workspace; before it, a named project had a file of its own under <home>/projects/)."""
    raw = os.environ.get("VAULT_INDEX_DB")
    if raw:
        return os.path.expanduser(raw)
    return os.path.join(index_home(), DB_NAME)
