"""Trust in a vault's own hooks: a record on this machine, outside every vault, keyed by content.

Trigger: a vault cloned from someone else ran its `.vault-index/hooks/*.py` on the first write (an
agent's note_write too) with the whole environment of the process (issue 22, Critical).
Why: hook code travels with the vault (git clone, a shared folder); only the person on this
machine may decide to run it, and a trusted hook that changes afterwards is new code again.
Outcome: a hook runs only when `$VAULT_INDEX_HOME/trusted-hooks.json` (0600, owned by this user)
records the vault's real path, the hook's path and the sha256 of the exact bytes about to run.
`vault-index trust VAULT` records the hooks the vault declares now (and shows them);
`--revoke` removes them. Untrusted hooks are reported, never run (docs/vault-hooks.md, ADR 0021).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from vault_index import locations
from vault_index.engine.files.fileio import open_folder, read_current
from vault_index.errors import UnsafePathError, UsageError

TRUST_FILE = "trusted-hooks.json"
MAX_TRUST_BYTES = 4_000_000
HOOK_OPS = ("create", "replace", "append")  # the operations that run hooks (services/writes/notes.py)


@dataclass(frozen=True)
class HookState:
    path: str  # as declared, relative to the vault root
    phases: tuple[str, ...]
    sha256: str | None  # None: the file is missing or unreadable
    trusted: bool
    size: int = 0
    problem: str | None = None  # why it cannot be read


def trust_file() -> Path:
    return Path(locations.index_home()) / TRUST_FILE


def digest(source: bytes) -> str:
    return hashlib.sha256(source).hexdigest()


def _records() -> list[dict]:
    """The trust records; [] when the file is missing, malformed, not ours or writable by others.

    Fails closed: a record another local user could have written grants nothing.
    """
    path = trust_file()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return []
    try:
        info = os.fstat(fd)
        if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022
                or info.st_size > MAX_TRUST_BYTES):
            return []
        data = json.loads(os.read(fd, MAX_TRUST_BYTES + 1) or b"{}")
    except (OSError, ValueError):
        return []
    finally:
        os.close(fd)
    hooks = data.get("hooks") if isinstance(data, dict) else None
    return [r for r in hooks if isinstance(r, dict)] if isinstance(hooks, list) else []


def is_trusted(root: Path, rel: str, sha256: str) -> bool:
    key = str(root)
    return any(r.get("vault") == key and r.get("path") == rel and r.get("sha256") == sha256 for r in _records())


def read_hook(root: Path, rel: str) -> tuple[bytes | None, str | None]:
    """(the hook file's bytes, None) or (None, why it cannot be read): walked without following links."""
    parts = Path(rel).parts
    try:
        folder = open_folder(root, parts[:-1])
    except (UnsafePathError, OSError) as exc:
        return None, f"cannot open its folder ({exc})"
    try:
        source, _ = read_current(folder, parts[-1], rel)
    except (UnsafePathError, OSError) as exc:
        return None, str(exc)
    finally:
        os.close(folder)
    return (source, None) if source is not None else (None, "the file does not exist")


def declared(vault) -> list[HookState]:
    """Every hook the vault's config declares (once per path), with its hash and whether it is trusted."""
    phases: dict[str, list[str]] = {}
    for phase in ("pre_write_transform", "pre_write"):
        for hook in vault.config["hooks"].get(phase, []):
            phases.setdefault(hook["path"], []).append(phase)
    records = _records()
    found = []
    for rel, where in phases.items():
        source, problem = read_hook(vault.root, rel)
        sha = digest(source) if source is not None else None
        trusted = sha is not None and any(r.get("vault") == str(vault.root) and r.get("path") == rel
                                          and r.get("sha256") == sha for r in records)
        found.append(HookState(rel, tuple(where), sha, trusted, len(source or b""), problem))
    return found


def untrusted_notices(vault) -> list[str]:
    """One notice per declared hook that will not run here (untrusted, changed since trusted, unreadable)."""
    notices = []
    for state in declared(vault):
        if state.trusted:
            continue
        why = state.problem or "its content is not trusted on this machine (new, or changed since trusted)"
        notices.append(f"vault hook {state.path} is not run: {why}; read it, then run "
                       f"`vault-index trust {vault.root}` to let it run")
    return notices


def grant(vault) -> list[HookState]:
    """Trust every declared hook as it is now; earlier records of the same vault and path are replaced."""
    states = declared(vault)
    unreadable = [s for s in states if s.sha256 is None]
    if unreadable:
        raise UsageError("; ".join(f"{s.path}: {s.problem}" for s in unreadable) + " - nothing was trusted")
    record(vault.root, {s.path: s.sha256 for s in states})
    return [HookState(s.path, s.phases, s.sha256, True, s.size) for s in states]


def record(root: Path, hashes: dict[str, str]) -> None:
    """Trust these {hook path: sha256} of the vault at `root` (its real path); older records of a path go."""
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    kept = [r for r in _records() if not (r.get("vault") == str(root) and r.get("path") in hashes)]
    kept += [{"vault": str(root), "path": rel, "sha256": sha, "trusted_at": now} for rel, sha in hashes.items()]
    _save(kept)


def revoke(vault) -> int:
    """Remove every trust record of this vault; returns how many were removed."""
    records = _records()
    kept = [r for r in records if r.get("vault") != str(vault.root)]
    if len(kept) != len(records):
        _save(kept)
    return len(records) - len(kept)


def _save(records: list[dict]) -> None:
    """Write the record atomically, 0600, in a 0700 folder (a temp file renamed over the old one)."""
    path = trust_file()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temp = path.with_name(f".{TRUST_FILE}.{os.getpid()}.tmp")
    data = json.dumps({"version": 1, "hooks": records}, indent=1).encode()
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(temp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def hook_environment() -> dict[str, str]:
    """The environment a trusted hook runs with: PATH, HOME and LANG only (its inputs come on stdin)."""
    env = {"PATH": os.environ.get("PATH") or os.defpath, "HOME": os.environ.get("HOME") or str(Path.home())}
    env["LANG"] = os.environ.get("LANG") or "C.UTF-8"
    return env
