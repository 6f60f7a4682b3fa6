"""MCP server: the tool definitions (one module for every transport) and the stdio entry point.

Start-up must stay light: the handshake is answered before numpy, onnxruntime or fastembed load.
Models load on the first search that needs them.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Annotated, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from vault_index import __version__
from vault_index.config import project_dir
from vault_index.errors import VaultIndexError
from vault_index.services import graph as memory
from vault_index.services import recall as recollection
from vault_index.services.app import MAX_NOTE_LINES, App
from vault_index.services.search import DEFAULT_MODE, MAX_LIMIT, Filters

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
INDEXING = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
REMOVING = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
# graph_create only appends, and a repeated fact is skipped, so a retry is harmless
GRAPH_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                              open_world_hint=False)

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


Name = Annotated[str, Field(min_length=1, max_length=memory.MAX_NAME_CHARS)]
Kind = Annotated[str, Field(min_length=1, max_length=memory.MAX_TYPE_CHARS)]
SourcePath = Annotated[str, Field(min_length=1, max_length=memory.MAX_SOURCE_CHARS,
                                  description="the file this fact comes from: absolute, or relative to the project")]


# camelCase fields: the memory file's names, as the reference memory server spells them
class EntityIn(BaseModel):
    name: Name
    entityType: Kind = Field(description="person, project, decision, tool, ...")
    source: SourcePath


class ObservationIn(BaseModel):
    entity: Name = Field(description="an existing entity, or one created in the same call")
    text: Annotated[str, Field(min_length=1, max_length=memory.MAX_TEXT_CHARS, description="one fact")]
    source: SourcePath


class RelationIn(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    from_: Name = Field(alias="from")
    to: Name
    relationType: Kind = Field(description="active voice: decided_in, depends_on, part_of")
    source: SourcePath


class ObservationOut(BaseModel):
    text: str
    source: str


class RelationOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    from_: str = Field(alias="from")
    to: str
    relationType: str
    source: str


class EntityOut(BaseModel):
    name: str
    entityType: str
    source: str
    observations: list[ObservationOut]
    relations: list[RelationOut]
    score: float | None = Field(default=None, description="keyword score; only in search results")
    display: str | None = Field(default=None, description="source relative to the project; only in recall")


class SkippedOut(BaseModel):
    kind: str
    fact: str
    reason: str


class GraphCreateOut(BaseModel):
    memory_file: str
    added: dict[str, int] = Field(description="how many entity, observation and relation facts were written")
    skipped: list[SkippedOut]


class GraphSearchOut(BaseModel):
    query: str
    entities: list[EntityOut]


class GraphOpenOut(BaseModel):
    entities: list[EntityOut]
    missing: list[str] = Field(description="names the graph does not have")


class RecallHitOut(BaseModel):
    path: str
    display: str = Field(description="path relative to the project when inside it")
    heading: str
    line_start: int
    line_end: int
    score: float
    snippet: str


class RecallOut(BaseModel):
    query: str
    notes: list[RecallHitOut]
    lessons: list[RecallHitOut] = Field(description="hits in files named lessons.md")
    graph: list[EntityOut]
    notices: list[str]


def _entity_out(view: dict) -> EntityOut:
    return EntityOut(**{**view, "relations": [RelationOut(**r) for r in view["relations"]]})


def graph_summary(memory_file: Path) -> str:
    """One sentence on the memory graph for the instructions; never fails the start-up."""
    try:
        graph = memory.load(memory_file)
    except VaultIndexError:
        return "The memory graph file has problems (`vault-index graph check` lists them). "
    return (
        f"The memory graph holds {len(graph.entities)} entities (people, projects, decisions) with "
        "observations and relations, each naming its source file: graph_search and graph_open read "
        "it, graph_create adds facts (every fact needs an existing source file in the project or a source). "
    )


def instructions(status: dict, memory_file: Path | None = None) -> str:
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
        "index_paths adds a folder; list_sources shows what is indexed. "
        + (graph_summary(memory_file) if memory_file else "")
        + "recall searches notes, lessons and the graph at once: use it first for a broad topic."
    )


def build_server(app: App, memory_file: str | Path | None = None) -> MCPServer:
    # Tools run in worker threads. Reads share `app` (one SQLite connection) under `lock`;
    # indexing, which can embed for minutes, runs on its own connection under `index_lock`, so
    # searches keep answering meanwhile (WAL lets them read the last committed state).
    lock, index_lock, graph_lock = threading.Lock(), threading.Lock(), threading.Lock()
    if memory_file:  # every tool, the write tools too, reads the graph path from app.settings
        app.settings = replace(app.settings, memory_file=Path(memory_file).expanduser())
    memory_file = app.settings.memory_file
    indexer: list[App] = []  # opened on first use, sharing the loaded models

    def call(fn, *args, guard: threading.Lock = lock):
        with guard:
            try:
                return fn(*args)
            except VaultIndexError as exc:
                raise ToolError(str(exc)) from exc

    def graph_roots() -> list[Path]:
        """Where an agent's fact may name its source: the project folder and the registered sources."""
        return [project_dir(), *(Path(source["path"]) for source in call(app.sources))]

    def index(paths: list[str] | None):
        if not indexer:
            indexer.append(App.open(app.settings, models=app.models))
        return indexer[0].index(paths)

    server = MCPServer("vault-index", version=__version__, instructions=instructions(app.status(), memory_file))

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

    @server.tool(annotations=GRAPH_WRITE, structured_output=True)
    def graph_create(
        entities: Annotated[list[EntityIn], Field(max_length=100)] = [],  # noqa: B006
        observations: Annotated[list[ObservationIn], Field(max_length=500)] = [],  # noqa: B006
        relations: Annotated[list[RelationIn], Field(max_length=200)] = [],  # noqa: B006
    ) -> GraphCreateOut:
        """Add entities, observations and relations to the memory graph. Every fact names the
        file it comes from (`source`: an existing file in the project folder or a registered
        source, not in a hidden or secrets folder). All or nothing: one bad fact refuses the
        call. Facts already in the graph are skipped."""
        result = call(
            partial(memory.create, base=project_dir(), roots=graph_roots()), memory_file,
            [e.model_dump() for e in entities], [o.model_dump() for o in observations],
            [r.model_dump(by_alias=True) for r in relations], guard=graph_lock,
        )
        return GraphCreateOut(**result)

    @server.tool(annotations=READ_ONLY, structured_output=True)
    def graph_search(
        query: Annotated[str, Field(min_length=1, max_length=2000, description="words to look for")],
        limit: Annotated[int, Field(ge=1, le=memory.MAX_SEARCH_LIMIT)] = 10,
    ) -> GraphSearchOut:
        """Search the memory graph by keyword over entity names, types, observations and relations.
        Each entity comes with its observations, relations and their source files."""
        found = call(memory.search, memory_file, query, limit, guard=graph_lock)
        return GraphSearchOut(query=query, entities=[_entity_out(e) for e in found])

    @server.tool(annotations=READ_ONLY, structured_output=True)
    def graph_open(
        names: Annotated[list[Name], Field(min_length=1, max_length=50, description="entity names (any case)")],
    ) -> GraphOpenOut:
        """Read named entities of the memory graph in full (observations, relations, sources)."""
        opened = call(memory.open_entities, memory_file, names, guard=graph_lock)
        return GraphOpenOut(entities=[_entity_out(e) for e in opened["entities"]], missing=opened["missing"])

    @server.tool(annotations=READ_ONLY, structured_output=True)
    def recall(
        query: Annotated[str, Field(min_length=1, max_length=2000, description="the topic, in words")],
        limit: Annotated[int, Field(ge=1, le=recollection.MAX_RECALL_LIMIT, description="per list")] = 5,
    ) -> RecallOut:
        """Search notes, lessons (lessons.md) and the memory graph at once; every item has its
        source path. Answer with those paths as sources."""
        found = call(recollection.recall, app, memory_file, query, limit)
        return RecallOut(
            query=found["query"], notices=found["notices"],
            notes=[RecallHitOut(**h) for h in found["notes"]],
            lessons=[RecallHitOut(**h) for h in found["lessons"]],
            graph=[_entity_out(e) for e in found["graph"]],
        )

    _register_write_tools(server, app, call, graph_roots)
    return server


def _register_write_tools(server: MCPServer, app: App, call, graph_roots) -> None:
    """The lesson and decision-record tools (surfaces/tools_write.py) join the same server."""
    try:
        from vault_index.surfaces.tools_write import register_write_tools
    except ModuleNotFoundError as exc:  # only while that module is not written yet
        if exc.name != "vault_index.surfaces.tools_write":
            raise
        return

    register_write_tools(server, app, call, graph_roots)


def _exit_on_interrupt() -> None:
    """Ctrl-C (or a client's SIGINT) ends the server at once, as SIGTERM does.

    The SDK reads stdin on a worker thread that a KeyboardInterrupt cannot wake, so the default
    handler left the process running until its client gave up and sent SIGTERM. Every write
    (SQLite transactions, graph and note replacements) is atomic, so stopping here loses nothing.
    """
    import os
    import signal

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, lambda *_: os._exit(130))


def listen_for_edits(app: App):
    """Take edited notes from the edit hook over the index's socket (ADR 0010); None when
    another server already listens for this index or the socket cannot be made here."""
    from vault_index.services.edit_queue import EditListener

    listener = EditListener(app.settings.db_path, lambda: App.open(app.settings, models=app.models))
    return listener if listener.start() else None


def serve_stdio(memory_file: str | Path | None = None, watch: bool = False) -> None:
    _exit_on_interrupt()
    app = App.open()
    stop = edits = None
    try:
        server = build_server(app, memory_file)
        edits = listen_for_edits(app)
        if watch:  # its own connection on its own thread; shares the (lazily loaded) models
            from vault_index.services.watch import start_in_background

            _, stop, _ = start_in_background(lambda: App.open(app.settings, models=app.models))
        server.run("stdio")
    finally:
        if stop is not None:
            stop.set()
        if edits is not None:
            edits.stop()
        app.close()
