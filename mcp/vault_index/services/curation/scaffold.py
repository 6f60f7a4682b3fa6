"""`vault-index init DIR`: a new curated vault, ready to search and write into.

What it lays down: three collections (research, decisions, drafts), `.vault-index/config.yaml`
with two roles (`editor` reads and writes everything and may promote; `reader` reads research and
decisions only) and `local_role: editor`, one example note per collection with the full
frontmatter, then `git init` (unless DIR is already a repository) and one commit of exactly these
files. The CLI indexes the folder afterwards.

It never overwrites: DIR may exist and hold other files, but if any file it would create is
already there (or any folder it needs is a symlink or a file), it refuses before writing anything.
Each file is created with O_EXCL|O_NOFOLLOW, so a file appearing meanwhile is not overwritten either.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from pathlib import Path

from vault_index.errors import UsageError, VaultIndexError
from vault_index.services.vault.safe_git import git_argv

COLLECTIONS = ("research", "decisions", "drafts")
GIT_TIMEOUT_S = 30
FALLBACK_AUTHOR = ("vault-index init", "vault-index@localhost")  # only when git has no user.name

CONFIG = """\
# vault-index vault configuration (docs/cli.md, "Curated vaults"). Unknown keys are an error.
version: 1
vault_name: {name}
collections: [research, decisions, drafts]
roles:
  editor:            # reads and writes every collection; may promote drafts to canonical
    read: ["*"]
    write: ["*"]
    promote: true
  reader:            # reads research and decisions; cannot write or see drafts
    read: [research, decisions]
    write: []
    promote: false
local_role: editor   # the person at this machine (stdio server, CLI) unless --role / VAULT_ROLE
git:
  commit: true       # every write is one commit, authored by the caller
decay:
  aging_after_fraction: 0.75
"""


def _note(fields: dict, body: str) -> str:
    from vault_index.services.vault import frontmatter

    return frontmatter.render(fields, body)


def example_notes(today: dt.date) -> dict[str, str]:
    """Vault-relative path -> text of the example notes (valid frontmatter, linked to each other)."""
    day = today.isoformat()
    common = {"created": day, "updated": day, "updated_by": "vault-index init"}
    return {
        "research/how-this-vault-works.md": _note(
            {"title": "How this vault works", "collection": "research", "status": "canonical",
             "confidence": "high", **common, "sources": ["vault-index init"], "superseded_by": None,
             "ttl_days": 365, "tags": ["vault", "howto"],
             "questions_answered": ["How do notes move from draft to canonical?"], "questions_raised": []},
            "# How this vault works\n\nEvery note starts as a draft in its collection. An editor promotes a "
            "complete draft to canonical; a note that stops being true is deprecated with a reason, "
            "never deleted. See [[0001-keep-notes-in-git]] for why every write is a commit, and "
            "[[open-questions]] for what is still undecided.\n",
        ),
        "decisions/0001-keep-notes-in-git.md": _note(
            {"title": "Keep the notes in git", "collection": "decisions", "status": "canonical",
             "confidence": "medium", **common, "sources": ["vault-index init"], "superseded_by": None,
             "ttl_days": 180, "tags": ["decision"],
             "questions_answered": ["Why is every write a commit?"], "questions_raised": []},
            "# Keep the notes in git\n\nEvery write through vault-index is one commit authored by the "
            "caller, so `git log` answers who changed what and why. Background: "
            "[[how-this-vault-works]].\n",
        ),
        "drafts/open-questions.md": _note(
            {"title": "Open questions", "collection": "drafts", "status": "draft", "confidence": "low",
             **common, "sources": [], "superseded_by": None, "ttl_days": 30, "tags": ["questions"],
             "questions_answered": [], "questions_raised": ["Which collections does this team need?"]},
            "# Open questions\n\nWhat this vault does not answer yet. Context: [[how-this-vault-works]].\n",
        ),
    }


def planned_files(root: Path, today: dt.date) -> dict[str, str]:
    from vault_index.engine.files.fileio import STATE_GITIGNORE

    return {".vault-index/config.yaml": CONFIG.format(name=_yaml_name(root.name)),
            ".vault-index/.gitignore": STATE_GITIGNORE, **example_notes(today)}


def _yaml_name(name: str) -> str:
    import json

    return json.dumps(name or "vault")  # a JSON string is a YAML string, whatever the folder's name


def conflicts(root: Path, files: dict[str, str]) -> list[str]:
    """Every planned file (or folder on its way) that already exists or would lead elsewhere."""
    found = []
    for rel in files:
        target = root / rel
        for parent in list(reversed(target.relative_to(root).parents))[1:]:
            folder = root / parent
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                found.append(parent.as_posix() + "/")
        if target.exists() or target.is_symlink():
            found.append(rel)
    return sorted(set(found))


def _create(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(git_argv(root, *args), capture_output=True, text=True,
                          timeout=GIT_TIMEOUT_S, check=False)


def _commit(root: Path, rels: list[str]) -> tuple[str | None, list[str]]:
    """git init when needed, then one commit of exactly `rels` (literal pathspecs)."""
    notices = []
    try:
        if _git(root, "rev-parse", "--is-inside-work-tree").returncode != 0:
            made = _git(root, "init", "-q")
            if made.returncode != 0:
                return None, [f"git init failed: {made.stderr.strip()}"]
        literal = [f":(literal){rel}" for rel in rels]
        added = _git(root, "add", "--", *literal)
        if added.returncode != 0:
            return None, [f"git add failed: {added.stderr.strip()}"]
        identity = [] if _git(root, "config", "--get", "user.name").stdout.strip() else [
            "-c", f"user.name={FALLBACK_AUTHOR[0]}", "-c", f"user.email={FALLBACK_AUTHOR[1]}"]
        done = _git(root, *identity, "commit", "-q", "-m", "New vault (vault-index init)", "--", *literal)
        if done.returncode != 0:
            return None, [f"git commit failed: {done.stderr.strip() or done.stdout.strip()}"]
        return _git(root, "rev-parse", "HEAD").stdout.strip() or None, notices
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, [f"git is not usable here ({exc}); the files are written, commit them yourself"]


def scaffold(root: Path, today: dt.date | None = None) -> dict:
    """Create the vault in `root`; {"root", "created", "commit", "notices"}. Raises UsageError on a
    conflict (nothing written) and VaultIndexError when the new config does not validate."""
    from vault_index.services.vault.vault import load_config_text

    root = Path(os.path.realpath(root.expanduser()))
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} is a file; give a folder for the new vault")
    files = planned_files(root, today or dt.date.today())
    clash = conflicts(root, files)
    if clash:
        raise UsageError(f"{root} already has {', '.join(clash)}; init never overwrites a file: "
                         "choose an empty folder or move these away")
    load_config_text(files[".vault-index/config.yaml"])  # our own config must pass our own schema
    created = []
    try:
        root.mkdir(parents=True, exist_ok=True)
        for rel, text in files.items():
            _create(root / rel, text)
            created.append(rel)
    except FileExistsError as exc:
        raise UsageError(f"{exc.filename} appeared while init ran; nothing else was overwritten") from exc
    except OSError as exc:
        raise VaultIndexError(f"could not create {exc.filename or root}: {exc.strerror or exc}; created so far: "
                              f"{', '.join(created) or 'nothing'}") from exc
    commit, notices = _commit(root, created)
    return {"root": str(root), "created": created, "commit": commit, "notices": notices}
