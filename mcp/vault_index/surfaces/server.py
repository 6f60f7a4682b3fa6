"""MCP server: the tool definitions (one module for every transport) and the stdio entry point.

Start-up must stay light: the handshake is answered before numpy, onnxruntime or fastembed load.
Models load on the first search that needs them.
"""

from __future__ import annotations

import threading
from typing import Annotated, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from vault_index import __version__
from vault_index.errors import VaultIndexError
from vault_index.services.app import MAX_NOTE_LINES, App
from vault_index.services.search import DEFAULT_MODE, MAX_LIMIT, Filters

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
INDEXING = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
REMOVING = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)

Mode = Literal["hybrid+rerank", "hybrid", "keyword", "vector", "grep"]


class HitOut(BaseModel):
    path: str
    heading: str
    line_start: int
    line_end: int
    score: float
    snippet: str
    status: str = ""


class SearchOut(BaseModel):
    query: str
    mode: str
    vector_used: bool = Field(description="false: no embedding model, keyword results only")
    reranked: bool = Field(description="false: fusion order, no cross-encoder")
    notices: list[str]
    hits: list[HitOut]


class NoteOut(BaseModel):
    path: str
    title: str | None
    indexed: bool
    frontmatter: dict
    line_start: int
    line_end: int
    total_lines: int
    truncated: bool = Field(description="true: more lines follow; call again with start_line")
    content: str


class SourceOut(BaseModel):
    path: str
    files: int
    chunks: int


class SourcesOut(BaseModel):
    sources: list[SourceOut]


class IndexOut(BaseModel):
    indexed: int
    unchanged: int
    removed: int
    chunks_embedded: int
    vector_used: bool
    problems: list[str]
    seconds: float


class RemoveOut(BaseModel):
    removed_files: int


def instructions(status: dict) -> str:
    """Built from the index state so the agent knows what it can find before it asks."""
    sources = ", ".join(s["path"] for s in status["sources"][:5]) or "none yet"
    vectors = (
        "hybrid keyword + vector search is live"
        if status["vectors_live"]
        else "only keyword search is live (no vectors yet)"
    )
    return (
        f"Long-term memory: {status['files']} markdown notes in {len(status['sources'])} sources "
        f"({sources}); {vectors}. Search these notes with search_notes before answering questions "
        "about past work, decisions, people or lessons, instead of guessing; cite the path and "
        "heading of each hit, and open a note with get_note when a snippet is not enough. "
        "index_paths adds a folder; list_sources shows what is indexed."
    )


def build_server(app: App) -> MCPServer:
    # Tools run in worker threads. Reads share `app` (one SQLite connection) under `lock`;
    # indexing, which can embed for minutes, runs on its own connection under `index_lock`, so
    # searches keep answering meanwhile (WAL lets them read the last committed state).
    lock, index_lock = threading.Lock(), threading.Lock()
    indexer: list[App] = []  # opened on first use, sharing the loaded models

    def call(fn, *args, guard: threading.Lock = lock):
        with guard:
            try:
                return fn(*args)
            except VaultIndexError as exc:
                raise ToolError(str(exc)) from exc

    def index(paths: list[str] | None):
        if not indexer:
            indexer.append(App.open(app.settings, models=app.models))
        return indexer[0].index(paths)

    server = MCPServer("vault-index", version=__version__, instructions=instructions(app.status()))

    @server.tool(annotations=READ_ONLY, structured_output=True)
    def search_notes(
        query: Annotated[str, Field(min_length=1, max_length=2000, description="what to look for, in words")],
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = 8,
        mode: Mode = DEFAULT_MODE,
        path_prefix: Annotated[str | None, Field(max_length=1000, description="only files under this path")] = None,
        tags: Annotated[list[str] | None, Field(max_length=20)] = None,
        status: Annotated[str | None, Field(max_length=40, description="draft, canonical or deprecated")] = None,
        collection: Annotated[str | None, Field(max_length=200, description="frontmatter collection")] = None,
    ) -> SearchOut:
        """Search the notes (hybrid keyword + vector, reranked). Each hit has a file path, heading
        path, line range and snippet."""
        filters = Filters(path_prefix, tuple(tags or ()), status, collection)
        result = call(app.search, query, mode, limit, filters)
        return SearchOut(
            query=result.query, mode=result.mode, vector_used=result.vector_used,
            reranked=result.reranked, notices=list(result.notices),
            hits=[HitOut(**{k: getattr(h, k) for k in HitOut.model_fields}) for h in result.hits],
        )

    @server.tool(annotations=READ_ONLY, structured_output=True)
    def get_note(
        path: Annotated[str, Field(min_length=1, max_length=4096, description="absolute, or relative to a source")],
        start_line: Annotated[int, Field(ge=1)] = 1,
        max_lines: Annotated[int, Field(ge=1, le=MAX_NOTE_LINES)] = 400,
    ) -> NoteOut:
        """Read a note (a window of lines) from inside a registered source."""
        return NoteOut(**call(app.get_note, path, start_line, max_lines))

    @server.tool(annotations=READ_ONLY, structured_output=True)
    def list_sources() -> SourcesOut:
        """The registered source folders with their file and chunk counts."""
        return SourcesOut(sources=[SourceOut(**s) for s in call(app.sources)])

    @server.tool(annotations=INDEXING, structured_output=True)
    def index_paths(
        paths: Annotated[list[Annotated[str, Field(min_length=1, max_length=4096)]], Field(min_length=0, max_length=50,
                         description="folders or files to add; empty re-syncs every source")] = [],  # noqa: B006
    ) -> IndexOut:
        """Add folders or files as sources and bring the index up to date (incremental)."""
        report = call(index, paths or None, guard=index_lock)
        return IndexOut(
            indexed=report.indexed, unchanged=report.unchanged, removed=report.removed,
            chunks_embedded=report.chunks_embedded, vector_used=report.vector_used,
            problems=[f"{p}: {m}" for p, m in report.problems][:100], seconds=round(report.seconds, 2),
        )

    @server.tool(annotations=REMOVING, structured_output=True)
    def remove_source(
        path: Annotated[str, Field(min_length=1, max_length=4096, description="a path from list_sources")],
    ) -> RemoveOut:
        """Unregister a source and drop its files from the index (the files are not touched)."""
        return RemoveOut(removed_files=call(app.remove, path))

    return server


def serve_stdio() -> None:
    app = App.open()
    try:
        build_server(app).run("stdio")
    finally:
        app.close()
