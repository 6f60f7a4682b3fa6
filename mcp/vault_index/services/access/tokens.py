"""Bearer tokens for remote access: each names a role of the vault config; only a hash is kept.

`vault-index token new --role NAME` prints a token once (`vi_` + 43 URL-safe characters: 256 random
bits from `secrets`) and stores its SHA-256. A plain hash is enough here: the token is random and
long, so no dictionary or slow-hash defence adds anything (passwords need bcrypt; tokens do not).

Where: the credentials folder beside the index database (`<index>.remote/`, mode 0700, files 0600),
never in the vault. Why: a vault is a git repository people push and share; even hashes of
credentials should not travel with it, and the tokens belong to this machine's server.

The same folder holds the OAuth signing key and the registered OAuth clients (services/access/oauth.py).
Every OAuth token is signed with a key derived from the token that approved it, so revoking or
rotating that token invalidates every OAuth token it granted.

A token is bound to the vault it was made for (the real path of the folder `serve --http` serves):
one index, and so one credentials folder, serves several vaults, and a token of one must not open
another (issue 36). `lookup` finds a token only among its vault's; a token made before tokens named
their vault (no `vault`) opens nothing until it is rotated.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

from vault_index.engine.files.fileio import atomic_replace
from vault_index.errors import UsageError

TOKEN_PREFIX = "vi_"
TOKEN_BYTES = 32  # 256 bits; token_urlsafe gives 43 characters
MIN_TOKEN_CHARS = 32  # a presented secret shorter than this is never looked up
ID_CHARS = 12  # the public handle of a token (a prefix of its hash): listing and revoking
TOKENS_FILE = "tokens.json"
LOCK_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class TokenRecord:
    id: str
    role: str
    sha256: str
    created: str
    label: str = ""
    vault: str = ""  # the real path of the vault it opens; "" for a token made before binding: none


def vault_key(root: str | Path) -> str:
    """How a token names its vault: the real path of the vault's folder."""
    return os.path.realpath(os.path.expanduser(os.fspath(root)))


def credentials_dir(db_path: str | Path) -> Path:
    """`<index>.remote/` beside the index database: tokens, the OAuth key and clients."""
    db = Path(db_path).expanduser()
    return db.with_name(db.stem + ".remote")


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class TokenStore:
    """The token file of one credentials folder; re-read on every lookup (a revoke applies at once)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.path = self.folder / TOKENS_FILE

    # --- reading -------------------------------------------------------------------------------

    def records(self) -> list[TokenRecord]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        try:
            data = json.loads(raw)
            return [TokenRecord(**entry) for entry in data["tokens"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{self.path} is not a token file ({exc}); move it away and create tokens "
                             "again with `vault-index token new --role NAME`") from exc

    def lookup(self, token: str, vault: str | Path) -> TokenRecord | None:
        """The record of a presented token made for `vault` (its folder), or None.

        Every stored hash is compared with `hmac.compare_digest`, and the loop never stops early, so
        the time taken does not tell how much of a guess matched, nor which record it was. A token
        of another vault is None as an unknown one is: nothing says it exists.
        """
        if not isinstance(token, str) or len(token) < MIN_TOKEN_CHARS:
            return None
        presented, key = digest(token), vault_key(vault)
        found = None
        for record in self.records():
            if hmac.compare_digest(presented, record.sha256) and record.vault == key:
                found = record
        return found

    def get(self, token_id: str, vault: str | Path | None = None) -> TokenRecord | None:
        """The record of `token_id`; with `vault`, only when it was made for that vault."""
        key = None if vault is None else vault_key(vault)
        return next((r for r in self.records() if r.id == token_id and key in (None, r.vault)), None)

    def for_vault(self, vault: str | Path) -> list[TokenRecord]:
        key = vault_key(vault)
        return [r for r in self.records() if r.vault == key]

    # --- changing ------------------------------------------------------------------------------

    def new(self, role: str, label: str = "", *, vault: str | Path) -> tuple[str, TokenRecord]:
        """A fresh token for `role` in `vault` (its folder): (the token, shown once; its stored record)."""
        if not role or not role.strip():
            raise UsageError("a token needs a role: --role NAME (a role of the vault's .vault-index/config.yaml)")
        token = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
        hashed = digest(token)
        record = TokenRecord(id=hashed[:ID_CHARS], role=role.strip(), sha256=hashed,
                             created=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), label=label,
                             vault=vault_key(vault))
        with self._locked():
            self._save([*self.records(), record])
        return token, record

    def revoke(self, token_id: str) -> TokenRecord:
        with self._locked():
            records = self.records()
            gone = next((r for r in records if r.id == token_id), None)
            if gone is None:
                raise UsageError(f"no token with id {token_id}; `vault-index token list` shows the ids")
            self._save([r for r in records if r.id != token_id])
        return gone

    def rotate(self, token_id: str, vault: str | Path | None = None) -> tuple[str, TokenRecord]:
        """A new token with the old one's role, label and vault (`vault` for a token made before binding);
        the old one (and its OAuth grants) stop working."""
        old = self.get(token_id)
        if old is None:
            raise UsageError(f"no token with id {token_id}; `vault-index token list` shows the ids")
        if not (old.vault or vault):
            raise UsageError(f"token {token_id} names no vault (made before tokens were bound); rotate it in its "
                             "vault's folder, or give --vault DIR")
        token, record = self.new(old.role, old.label, vault=old.vault or vault)
        self.revoke(token_id)
        return token, record

    def _locked(self):
        from filelock import FileLock

        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return FileLock(str(self.path) + ".lock", timeout=LOCK_TIMEOUT_S)

    def _save(self, records: list[TokenRecord]) -> None:
        data = json.dumps({"tokens": [asdict(r) for r in records]}, indent=1).encode()
        write_private(self.folder, TOKENS_FILE, data)


def write_private(folder: Path, name: str, data: bytes) -> None:
    """Atomic replace of `folder/name`, readable by this user only (0600; the folder 0700)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        atomic_replace(fd, name, data, 0o600)
    finally:
        os.close(fd)
