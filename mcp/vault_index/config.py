"""Settings read from the environment, in one place, so the CLI, server, hooks and eval agree."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from vault_index import locations

DEFAULT_HOME = Path.home() / locations.HOME_FOLDER  # VAULT_INDEX_HOME moves the whole folder
DEFAULT_DB = DEFAULT_HOME / "vault-index.db"  # the personal index (the only one before projects existed)
DB_NAME = locations.DB_NAME
PROJECTS_FOLDER = locations.PROJECTS_FOLDER  # <home>/projects/<name>-<hash>/vault-index.db
PERSONAL_FOLDER = "personal"  # user content written from the tool's own checkout (docs/lessons.md, ...)
DEMO_FOLDER = "demo"  # the example vault's own index (`vault-index demo`, `setup.py --demo`)
PROJECT_HASH_CHARS = locations.PROJECT_HASH_CHARS
DEFAULT_MEMORY_FILE = Path.home() / ".mcp-memory" / "memory.jsonl"  # the memory graph (JSONL)
DEFAULT_EMBED_MODEL = "shipped:minilm"  # fp32 all-MiniLM-L6-v2, the model the eval measures (ADR 0026)
DEFAULT_RERANK_MODEL = "Xenova/ms-marco-MiniLM-L-6-v2"
MAX_FILE_BYTES = 2_000_000  # larger files are skipped and reported


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() not in {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Settings:
    db_path: Path
    embed_model: str  # fastembed name, "shipped:minilm", a local ONNX folder, or "none"
    rerank_model: str  # fastembed cross-encoder name, a local ONNX folder, or "none"
    rerank: bool  # may the rerank stage run when a search asks for it (VAULT_RERANK=0: never)
    model_cache: Path
    vector_backend: str  # "auto", "numpy" or "sqlite-vec"
    memory_file: Path = DEFAULT_MEMORY_FILE  # the CLI's and server's --memory-file overrides it
    # VAULT_INDEX_URL=postgresql://...: the index lives in PostgreSQL (engine/stores/pg_store.py, ADR 0017);
    # db_path still anchors the local state beside it (edit hand-off socket, HTTP credentials).
    index_url: str | None = None
    rerank_default: bool = False  # VAULT_RERANK=1: searches rerank unless they ask for another mode

    @classmethod
    def from_env(cls) -> Settings:
        cache_root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return cls(
            db_path=default_db_path(),
            embed_model=os.environ.get("VAULT_EMBED_MODEL") or DEFAULT_EMBED_MODEL,
            rerank_model=os.environ.get("VAULT_RERANK_MODEL") or DEFAULT_RERANK_MODEL,
            rerank=_flag("VAULT_RERANK", True),
            model_cache=Path(
                os.environ.get("VAULT_MODEL_CACHE") or cache_root / "vault-index" / "models"
            ).expanduser(),
            vector_backend=os.environ.get("VAULT_VECTOR_BACKEND") or "auto",
            memory_file=Path(os.environ.get("VAULT_MEMORY_FILE") or DEFAULT_MEMORY_FILE).expanduser(),
            index_url=os.environ.get("VAULT_INDEX_URL") or None,
            rerank_default=_flag("VAULT_RERANK", False),
        )


def project_dir(fallback: str | Path | None = None) -> Path:
    """The project folder (docs/lessons.md, docs/adr/, .claude/ live there).

    CLAUDE_PROJECT_DIR when Claude Code set it, else `fallback` (a hook payload's cwd), else the
    working folder.
    """
    chosen = os.environ.get("CLAUDE_PROJECT_DIR") or fallback or os.getcwd()
    return Path(chosen).expanduser().resolve()


def index_home() -> Path:
    """The folder of derived state (indexes, graph, personal content): VAULT_INDEX_HOME or ~/.mcp-memory."""
    return Path(locations.index_home())


def known_project() -> Path | None:
    """The project this process works for, when one is named: VAULT_PROJECT, else CLAUDE_PROJECT_DIR.

    Trigger: the terminal, uvx and `claude mcp add` without a project all ran on one shared index.
    Why: a question in one project answered from another project's (or the demo's) notes.
    Outcome: only a named project gets its own index; with none named the personal index answers.
    """
    found = locations.known_project()
    return Path(found) if found is not None else None


def is_tool_checkout(folder: Path) -> bool:
    """True when `folder` is a clone of vault-index: its content is the tool's, not the user's."""
    return locations.is_tool_checkout(str(folder))


def project_slug(project: Path) -> str:
    """`<name>-<hash>`: readable, and two folders of the same name never share an index."""
    return locations.project_slug(str(project))


def project_home(project: Path) -> Path:
    """Where a project's own index lived before ADR 0020 (services/migrate_projects.py reads it)."""
    return index_home() / PROJECTS_FOLDER / project_slug(project)


def demo_db_path() -> Path:
    return index_home() / DEMO_FOLDER / DB_NAME


def default_db_path() -> Path:
    """VAULT_INDEX_DB, else the one shared index (locations.default_db_path, which the edit hook
    calls before importing this module)."""
    return Path(locations.default_db_path())


def content_dir(project: Path | None = None) -> Path:
    """Where /learn, /adr, /handoff and the pre-compact snapshot write (docs/... under it).

    VAULT_CONTENT_DIR when set; the project folder itself for a user's project; and for a clone of
    vault-index the personal folder `<home>/personal`, so the tool's tracked files never collect
    the user's lessons, records or handoffs (a `git pull` of the tool cannot conflict with them).
    """
    raw = os.environ.get("VAULT_CONTENT_DIR")
    if raw:
        return Path(raw).expanduser().resolve()
    project = Path(project).resolve() if project is not None else project_dir()
    return index_home() / PERSONAL_FOLDER if is_tool_checkout(project) else project


def content_root(project: Path | None = None) -> Path:
    """content_dir(), made when it is the personal folder (a user's project folder already exists)."""
    folder = content_dir(project)
    if not folder.exists() and folder == index_home() / PERSONAL_FOLDER:
        folder.mkdir(parents=True, mode=0o700, exist_ok=True)
    return folder
