"""What a caller may see and change, decided from the PATH of a file and the caller's grants.

The read tools (search, recall, get_note, the graph) and the index tools (index_paths,
remove_source) all ask here, so one rule holds everywhere:
- a file inside the vault belongs to the collection of its first folder (as `Vault.collection_of`
  says; frontmatter never decides it, so declaring another collection bypasses nothing); a file at
  the root belongs to the collection "" (only `"*"`, or `""` itself, grants it);
- a file outside the vault belongs to no collection: only a role granted `"*"` reaches it;
- a caller without the grant gets the answer a missing file gets (no existence oracle).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from vault_index.config import project_dir

WILDCARD = "*"


@dataclass(frozen=True)
class Scope:
    """A caller's reach over the index: the grants, resolved against one vault root."""

    root: Path                      # the vault's real path
    read: frozenset[str]
    write: frozenset[str]

    @property
    def reads_all(self) -> bool:
        return WILDCARD in self.read

    @property
    def writes_all(self) -> bool:
        return WILDCARD in self.write

    @property
    def reads_any(self) -> bool:
        return bool(self.read)

    def collection(self, path: str | Path) -> str | None:
        """The collection of an absolute path: "" for a file at the root, None outside the vault."""
        real = os.path.realpath(os.fspath(path))
        try:
            rel = Path(real).relative_to(self.root)
        except ValueError:
            return None
        return rel.parts[0] if len(rel.parts) > 1 else ""

    def can_read(self, path: str | Path) -> bool:
        if self.reads_all:
            return True
        name = self.collection(path)
        return name is not None and name in self.read

    def can_write(self, path: str | Path) -> bool:
        """Write over everything a path covers: a file, a collection folder, or a whole tree."""
        if self.writes_all:
            return True
        real = Path(os.path.realpath(os.fspath(path)))
        try:
            rel = real.relative_to(self.root)
        except ValueError:
            return False
        if len(rel.parts) == 0:          # the vault root holds every collection
            return False
        if len(rel.parts) == 1 and not real.is_dir():
            return "" in self.write      # a file at the root: the collection ""
        return rel.parts[0] in self.write

    def read_prefixes(self) -> tuple[str, ...] | None:
        """Folder prefixes a search may draw from; None when nothing needs filtering."""
        if self.reads_all:
            return None
        # A grant on "" (the root's files) cannot be a prefix: the whole root is, and the exact
        # per-path check (`can_read`) removes the rest before the limit.
        return tuple(str(self.root / name) if name else str(self.root) for name in sorted(self.read))


def granted_filters(filters, scope: Scope):
    """The caller's read grants pushed into the search pipeline (a services.search.Filters), so they
    apply before the limit: the MCP tools and the CLI's search and recall call this one function."""
    from dataclasses import replace

    prefixes = scope.read_prefixes()
    if prefixes is None:
        return filters
    return replace(filters, granted_prefixes=prefixes, path_allowed=scope.can_read)


def scope_for(vault, grants) -> Scope:
    """`vault` is a services.vault.Vault, `grants` its Grants for the caller's role."""
    return Scope(Path(os.path.realpath(vault.root)), frozenset(grants.read), frozenset(grants.write))


def is_indexed(app, path: str | Path) -> bool:
    """Whether the index holds `path` now (a written file under no registered source is not)."""
    return app.store.file_record(os.path.realpath(os.fspath(path))) is not None


def unindexed_notice(app, path: str | Path) -> str | None:
    """What a note write says when no source indexes the note it wrote (None when one does).
    Trigger: `note_write create x.md` landed at a project's root, unindexed, and nothing said so."""
    if is_indexed(app, path):
        return None
    own = ("docs/, notes/, README.md and the decision records of the project" if app.workspace.kind == "project"
           else "the sources")
    return (f"written, but not indexed: {path} lies outside the indexed folders ({own}), or their rules "
            "skip it (hidden, secrets/, .indexignore): search does not find it")


def visible_entities(entities: list[dict], scope: Scope) -> list[dict]:
    """Entities whose source the caller may read, without facts sourced from notes it may not."""
    if scope.reads_all:
        return entities
    shown = []
    for entity in entities:
        if not scope.can_read(entity["source"]):
            continue
        shown.append({**entity,
                      "observations": [o for o in entity["observations"] if scope.can_read(o["source"])],
                      "relations": [r for r in entity["relations"] if scope.can_read(r["source"])]})
    return shown


def graph_source(source: str, base: Path | None = None) -> Path:
    """A graph fact's source as a real path (relative: against `base`, default the project folder)."""
    path = Path(os.path.expanduser(source))
    return (path if path.is_absolute() else (base or project_dir()) / path).resolve()
