"""`vault-index upgrade`: bring what earlier versions kept elsewhere into the one index (ADR 0020).

Before ADR 0020 a project Claude Code named had an index file of its own,
`<home>/projects/<name>-<hash>/vault-index.db`, and `init` put a vault into the personal index
as a personal source. Nothing is reset: each old project index's sources are registered again
in the one index under that project's workspace, with its vectors copied (no re-embedding), and
each source inside an init vault is given the vault's workspace. The old files stay where they
are (they are derived; a person may delete them); a second run finds nothing left to do.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from urllib.parse import quote

from vault_index import config
from vault_index.engine import indexer
from vault_index.services import workspace as workspaces

MERGED_KEY = "merged_project_indexes"  # meta: the old index files already brought in


def old_project_indexes() -> list[Path]:
    folder = config.index_home() / config.PROJECTS_FOLDER
    return sorted(folder.glob(f"*/{config.DB_NAME}")) if folder.is_dir() else []


def _project_of(slug: str, paths: list[str]) -> Path | None:
    """The folder whose `<name>-<hash>` is `slug`: an ancestor of the sources it held."""
    for raw in paths:
        for folder in (Path(raw), *Path(raw).parents):
            if config.project_slug(folder) == slug:
                return folder
    return None


def _read_old(db_path: Path) -> tuple[list[str], list[tuple[str, str, bytes]]]:
    """(source paths, (hash, model, vector) rows) of an old index, opened read-only."""
    db = sqlite3.connect(f"file:{quote(str(db_path))}?mode=ro", uri=True, timeout=5)
    try:
        sources = [p for (p,) in db.execute("SELECT path FROM sources")]
        vectors = list(db.execute("SELECT hash, model, vector FROM embeddings"))
    finally:
        db.close()
    return sources, vectors


def upgrade(app, progress=None) -> list[str]:
    """Do the moves; one line per thing moved (or left, and why)."""
    said: list[str] = []
    merged = set(json.loads(app.store.get_meta(MERGED_KEY) or "[]"))
    for db_path in old_project_indexes():
        if str(db_path) in merged:
            continue
        try:
            sources, vectors = _read_old(db_path)
        except sqlite3.Error as exc:
            said.append(f"left {db_path}: it cannot be read ({exc})")
            continue
        project = _project_of(db_path.parent.name, sources)
        if sources and project is None:
            said.append(f"left {db_path}: none of its {len(sources)} sources lies in the project it was made for")
            continue
        by_model: dict[str, list[tuple[str, bytes]]] = {}
        for digest, model, vector in vectors:
            by_model.setdefault(model, []).append((digest, vector))
        for model, items in by_model.items():
            app.store.put_vectors(model, items)
        here = [s for s in sources if Path(s).exists()]
        if here:
            indexer.sync(app.store, app.models, here, progress, scope_of=lambda p, key=str(project): key)
        said.append(f"moved {len(here)} sources of {project or db_path.parent.name} from {db_path} "
                    f"into {app.store.location} ({sum(map(len, by_model.values()))} vectors kept)")
        merged.add(str(db_path))
        with app.store.transaction() as db:
            app.store.set_meta(db, MERGED_KEY, json.dumps(sorted(merged)))
    for path, scope in app.store.source_scopes().items():
        vault = workspaces.vault_root(Path(path))
        if vault is not None and scope != str(vault):
            app.store.set_source_scope(path, str(vault))
            said.append(f"{path} is now seen only in its vault {vault}")
    return said
