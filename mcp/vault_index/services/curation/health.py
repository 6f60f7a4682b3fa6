"""What the web page's Health and Review pages show, over the notes one caller may read.

Health reuses what `vault-index dashboard`, `lint` and `status` compute (curation.readable_notes,
lint_notes, dashboard, read_tensions, recent_writes; services/index_state.status), read once per
page. Review lists the recent writes with their provenance trailers and diffs
(services/writes/provenance.history, services/writes/revert.diff), newest first.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from pathlib import Path

from vault_index.services.curation import curation
from vault_index.services.vault.safe_git import git_argv
from vault_index.services.writes import provenance, revert

REVIEW_COMMITS = 30  # writes the Review page lists
PEOPLE_AGENTS = frozenset({"cli", "web page"})  # the agent claims a person's own writes carry


def health(app, writer, vault, caller, scope) -> dict:
    """Lint findings, stale notes, open tensions, drafts, recent writes, and (for a caller who reads
    every collection, as list_sources) the index's state."""
    root = Path(vault.root)
    notes = curation.readable_notes(writer, caller, root)
    tensions = [t for t in curation.read_tensions(root)
                if scope.can_read(root / t["a"]) and scope.can_read(root / t["b"])]
    recent = curation.recent_writes(root, scope.can_read)
    board = curation.dashboard(notes, tensions, recent)
    issues = curation.lint_notes(notes, dt.date.today()) + curation.hook_issues(vault)
    index = app.status() if scope.reads_all else None
    return {
        "dashboard": board, "issues": issues, "curated": vault.config_path is not None,
        "stale": [{"path": n.path, "decay": n.decay} for n in notes if (n.decay or {}).get("state") == "stale"],
        "drafts": [{"path": n.path, "title": n.title} for n in notes if n.frontmatter.get("status") == "draft"],
        "tensions": [t for t in tensions if t["status"] == "open"],
        "index": index,
    }


def writes(vault, scope, limit: int = REVIEW_COMMITS, agents_only: bool = True) -> list[dict]:
    """The recent commits that touched notes the caller may read, each note with its provenance
    (author, agent, role, operation, why) and diff; `agents_only`: not the person's own writes."""
    root = Path(vault.root)
    if provenance.repo_root(root) is None:
        return []
    found = []
    for entry in curation.recent_writes(root, scope.can_read, limit=limit * 3):
        for rel in entry["paths"]:
            trail = _trailers(root, entry["commit"])
            if agents_only and (trail.get("agent") or "") in PEOPLE_AGENTS | {""}:
                continue
            found.append({**entry, **trail, "path": rel, "diff": revert.diff(root, rel, entry["commit"]),
                          "version": revert.current_version(root, rel)})
        if len(found) >= limit:
            break
    return found[:limit]


def _trailers(root: Path, commit: str) -> dict:
    """The vault trailers of one commit (provenance.TRAILERS), as provenance.history names them."""
    keys = {"Vault-Agent": "agent", "Vault-Role": "role", "Vault-Operation": "operation"}
    fmt = "%x00".join(f"%(trailers:key={k},valueonly,separator=%x20,unfold)" for k in keys)
    try:
        done = subprocess.run(git_argv(root, "show", "-s", f"--format={fmt}", commit), capture_output=True,
                              text=True, timeout=provenance.GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if done.returncode != 0:
        return {}
    values = [v.strip() or None for v in done.stdout.split("\0")]
    return dict(zip(keys.values(), values + [None] * (len(keys) - len(values)), strict=False))


def note_history(vault, rel: str) -> list[dict]:
    """provenance.history of a vault note, each write with its diff (newest first)."""
    return _history(Path(vault.root), rel)


def file_history(path: Path) -> list[dict]:
    """The same for a note of any source that lies in a git repository."""
    return _history(path.parent, path.name)


def _history(root: Path, rel: str) -> list[dict]:
    repo = provenance.repo_root(root)
    if repo is None:
        return []
    in_repo = (Path(os.path.realpath(root)) / rel).relative_to(os.path.realpath(repo)).as_posix()
    try:
        entries = provenance.history(repo, in_repo, limit=50)
    except provenance.ProvenanceError:
        return []
    return [{**e, "diff": revert.diff(root, rel, e["commit"])} for e in entries]
