"""Settings read from the environment, in one place, so the CLI, server, hooks and eval agree."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DB = Path.home() / ".mcp-memory" / "vault-index.db"
DEFAULT_MEMORY_FILE = Path.home() / ".mcp-memory" / "memory.jsonl"  # the memory graph (JSONL)
DEFAULT_EMBED_MODEL = "auto"  # bge-small when it can be had, else the shipped MiniLM
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
    rerank: bool
    model_cache: Path
    vector_backend: str  # "auto", "numpy" or "sqlite-vec"
    memory_file: Path = DEFAULT_MEMORY_FILE  # the CLI's and server's --memory-file overrides it

    @classmethod
    def from_env(cls) -> Settings:
        cache_root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return cls(
            db_path=Path(os.environ.get("VAULT_INDEX_DB") or DEFAULT_DB).expanduser(),
            embed_model=os.environ.get("VAULT_EMBED_MODEL") or DEFAULT_EMBED_MODEL,
            rerank_model=os.environ.get("VAULT_RERANK_MODEL") or DEFAULT_RERANK_MODEL,
            rerank=_flag("VAULT_RERANK", True),
            model_cache=Path(
                os.environ.get("VAULT_MODEL_CACHE") or cache_root / "vault-index" / "models"
            ).expanduser(),
            vector_backend=os.environ.get("VAULT_VECTOR_BACKEND") or "auto",
            memory_file=Path(os.environ.get("VAULT_MEMORY_FILE") or DEFAULT_MEMORY_FILE).expanduser(),
        )


def project_dir(fallback: str | Path | None = None) -> Path:
    """The project folder (docs/lessons.md, docs/adr/, .claude/ live there).

    CLAUDE_PROJECT_DIR when Claude Code set it, else `fallback` (a hook payload's cwd), else the
    working folder.
    """
    chosen = os.environ.get("CLAUDE_PROJECT_DIR") or fallback or os.getcwd()
    return Path(chosen).expanduser().resolve()
