"""The write path's shared types: requests, outcomes, the caller, and the stage timer.

They sit below the write service and every module it dispatches to (notes, edit_ops, move,
safe_text, request_ids, write_conflicts), so those import their answer types from here and the
service alone imports them: a write's data path reads write -> notes, never back.
"""

from __future__ import annotations

import getpass
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Literal

from vault_index.errors import UsageError
from vault_index.services.vault.safe_git import git_argv

if TYPE_CHECKING:
    from pathlib import Path

    from vault_index.services.vault.vault import Vault

EDITS = ("prepend", "replace_section", "find_replace")  # services/writes/edit_ops.py: they need an existing note
Op = Literal["create", "replace", "append", "promote", "deprecate"]
Status = Literal["written", "unchanged", "denied", "not_found", "locked", "stale", "invalid", "refused", "failed",
                 "conflict"]
NOTE_SUFFIX = ".md"
MAX_REQUEST_ID_CHARS = 200
# (target, old text, old version, alive) -> new text or an outcome; alive() refreshes the lock's lease
Compose = Callable[["Target", str | None, str | None, Callable[[], None]], "str | WriteOutcome"]


@dataclass(frozen=True)
class Caller:
    identity: str  # "Name <email>" (git author)
    role: str | None
    agent: str | None = None  # the agent's claim (MCP clientInfo name or "cli"); a trailer, not trusted

    @classmethod
    def local(cls, vault: Vault, role: str | None = None, agent: str | None = "cli") -> Caller:
        """The person at this machine: git's user.name/email, else $USER; role from VAULT_ROLE or the vault.

        A role given (or in VAULT_ROLE) that the vault does not define is a UsageError naming its
        roles, as in surfaces/callers.local_role: a typo must not quietly become the deny-all guest."""
        given = role or os.environ.get("VAULT_ROLE")
        if given and (problem := vault.role_problem(given)):
            raise UsageError(f"{'VAULT_ROLE' if not role else 'role'}: {problem}")
        return cls(local_identity(vault.root), given or vault.local_role, agent)


@dataclass(frozen=True)
class WriteRequest:
    op: Op
    path: str  # vault-relative (or absolute inside the vault)
    body: str | None = None  # create/replace: full body; append: the section to add
    frontmatter: dict | None = None  # create/replace: fields given by the caller (None deletes a field)
    base_version: str | None = None  # replace/promote/deprecate: required; append: optional
    reason: str | None = None  # deprecate (required), otherwise the commit message's why
    superseded_by: str | None = None
    request_id: str | None = None


@dataclass(frozen=True)
class WriteOutcome:
    status: Status
    path: str  # vault-relative
    message: str
    version: str | None = None  # after the write (or the current one, for stale)
    problems: tuple[dict, ...] = ()
    notices: tuple[str, ...] = ()
    commit: str | None = None
    result: dict | None = None  # what a thin caller computed under the lock (a lesson id, an ADR number)

    @property
    def ok(self) -> bool:
        return self.status in ("written", "unchanged")

    def as_dict(self) -> dict:
        return {**asdict(self), "problems": list(self.problems), "notices": list(self.notices)}

    @classmethod
    def from_dict(cls, data: dict) -> WriteOutcome:
        return cls(**{**data, "problems": tuple(data.get("problems", ())), "notices": tuple(data.get("notices", ()))})


@dataclass(frozen=True)
class NoteView:
    path: str
    collection: str
    frontmatter: dict
    body: str
    version: str
    problems: tuple[dict, ...]
    decay: dict | None


@dataclass(frozen=True)
class Target:
    rel: str  # posix, relative to the root
    parts: tuple[str, ...]
    collection: str


@dataclass
class StageTimes:
    """Seconds per stage of the last write (the bench reads it)."""

    stages: dict[str, float] = field(default_factory=dict)

    def mark(self, name: str, started: float) -> float:
        now = time.perf_counter()
        self.stages[name] = self.stages.get(name, 0.0) + now - started
        return now


@dataclass(frozen=True)
class MoveRequest:
    path: str
    new_path: str
    base_version: str | None = None  # optional: the note's text is not changed by a move, only its links
    reason: str | None = None
    request_id: str | None = None


def local_identity(root: Path | None = None) -> str:
    """'Name <email>' from git config (the repo's, else global), else the login name."""
    values = []
    for key in ("user.name", "user.email"):
        try:
            argv = git_argv(root, "config", key) if root else ["git", "config", key]
            done = subprocess.run(argv, capture_output=True, text=True, timeout=5, check=False)
            values.append(done.stdout.strip())
        except (OSError, subprocess.SubprocessError):
            values.append("")
    name, email = values
    if name and email:
        return f"{name} <{email}>"
    try:
        login = getpass.getuser()
    except (KeyError, OSError):
        login = "local"
    return f"{name or login} <{email or login + '@localhost'}>"
