"""The composition point: one App per process wires settings, store, models and the searcher.

Every surface (CLI, MCP server, eval, bench) goes through these methods; none of them composes
engine pieces on its own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from vault_index.config import Settings, project_dir
from vault_index.engine import indexer
from vault_index.engine.models import Models
from vault_index.engine.sources import BINARY_SNIFF_BYTES, looks_binary, resolve_inside
from vault_index.engine.store import Store
from vault_index.errors import NotFoundError, UsageError
from vault_index.services.search import DEFAULT_MODE, Filters, Searcher
from vault_index.services.vault import Vault
from vault_index.services.write import WriteService
from vault_index.types import SearchResult, SyncReport

MAX_NOTE_LINES = 2000  # get_note returns at most this many lines per call
MAX_NOTE_CHARS = 100_000


@dataclass
class App:
    settings: Settings
    store: Store
    models: Models
    searcher: Searcher

    @classmethod
    def open(cls, settings: Settings | None = None, models: Models | None = None) -> App:
        settings = settings or Settings.from_env()
        store = Store(settings.db_path)
        models = models or Models(
            settings.embed_model, settings.rerank_model, settings.model_cache, settings.rerank
        )
        return cls(settings, store, models, Searcher(store, models, settings.vector_backend))

    def close(self) -> None:
        self.store.close()

    # --- writes to the index ----------------------------------------------------------------

    def index(self, paths: list[str] | None = None, progress=None) -> SyncReport:
        report = indexer.sync(self.store, self.models, paths, progress)
        embedder = self.models.embedder()
        with self.store.transaction() as db:
            self.store.set_meta(db, "embed_model", embedder.fingerprint if embedder else "")
        return report

    def reindex_file(self, path: str) -> SyncReport | None:
        return indexer.reindex_file(self.store, self.models, path)

    def remove(self, path: str) -> int:
        resolved = str(Path(path).expanduser().resolve()) if path else path
        known = {p for _, p in self.store.sources()}
        return self.store.remove_source(resolved if resolved in known else path)

    # --- the curated write path -------------------------------------------------------------

    def vault(self, root: Path | None = None) -> Vault:
        """The vault at `root` (default: the project folder); raises ConfigError on a bad config."""
        return Vault.open(root or project_dir())

    def writer(self, vault: Vault) -> WriteService:
        """The write service for `vault`, re-indexing each written file through this App."""
        return WriteService(vault, reindex=lambda path: self.reindex_file(str(path)))

    # --- reads ------------------------------------------------------------------------------

    def search(self, query: str, mode: str = DEFAULT_MODE, limit: int = 10,
               filters: Filters | None = None, explain: bool = False) -> SearchResult:
        return self.searcher.search(query, mode, limit, filters, explain)

    def sources(self) -> list[dict]:
        return self.store.source_stats()

    def get_note(self, path: str, start_line: int = 1, max_lines: int = MAX_NOTE_LINES) -> dict:
        """A note's text (a window of lines), only for files inside a registered source."""
        if start_line < 1 or not 1 <= max_lines <= MAX_NOTE_LINES:
            raise UsageError(f"start_line must be >= 1 and max_lines from 1 to {MAX_NOTE_LINES}")
        roots = [p for _, p in self.store.sources()]
        if not roots:
            raise NotFoundError("no sources are registered; index a folder first")
        real = resolve_inside(path, roots)
        if not real.is_file():
            raise NotFoundError(f"{path} is not a file in the index sources")
        with real.open("rb") as handle:  # streamed: a huge file is windowed, never read whole
            if looks_binary(handle.read(BINARY_SNIFF_BYTES)):
                raise UsageError(f"{path} is a binary file, not a note")
            handle.seek(0)
            window, total, size = [], 0, 0
            for total, raw_line in enumerate(handle, start=1):
                if start_line <= total < start_line + max_lines and size <= MAX_NOTE_CHARS:
                    line = raw_line.decode("utf-8", errors="replace").rstrip("\r\n")
                    window.append(line)
                    size += len(line) + 1
        content = "\n".join(window)
        truncated = start_line - 1 + len(window) < total or len(content) > MAX_NOTE_CHARS
        content = content[:MAX_NOTE_CHARS]
        record = self.store.file_record(str(real)) or {}
        return {
            "path": str(real), "title": record.get("title"), "indexed": bool(record),
            "frontmatter": record.get("frontmatter", {}), "line_start": start_line,
            "line_end": start_line + len(window) - 1, "total_lines": total,
            "truncated": truncated, "content": content,
        }

    def status(self) -> dict:
        """Index state without loading any model (the server builds its instructions from it)."""
        from vault_index.engine.vectors import sqlite_vec_connection

        model = self.store.get_meta("embed_model")
        vectors = self.store.vector_count(model) if model else 0
        counts = self.store.counts()
        backend = "numpy"
        if self.settings.vector_backend == "sqlite-vec":
            backend = "sqlite-vec" if sqlite_vec_connection(self.store.path) else "numpy (sqlite-vec cannot load here)"
        return {
            "db": str(self.store.path), "db_bytes": _size(self.store.path), **counts,
            "sources": self.store.source_stats(), "embed_model": model or None,
            "embed_setting": self.settings.embed_model, "vectors": vectors,
            "vectors_live": bool(vectors), "vector_backend": backend,
            "rerank": self.settings.rerank, "rerank_model": self.settings.rerank_model,
            "problems": [{"path": p, "message": m} for p, m in self.store.problems()],
            "recovered_from": str(self.store.recovered_from) if self.store.recovered_from else None,
        }


def _size(path: Path) -> int:
    return sum(os.path.getsize(p) for p in (str(path), str(path) + "-wal") if os.path.exists(p))
