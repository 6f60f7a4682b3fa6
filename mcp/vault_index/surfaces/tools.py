"""Every MCP tool, declared once for every transport (stdio today, HTTP later).

A transport calls `build_server(app, memory_file, caller_factory)` and only chooses the wire and
how the caller is known: `caller_factory(vault, ctx) -> Caller` turns a request into the
write service's Caller (stdio: the local person, surfaces/callers.py). The tools never guess who
calls. Grants come from the vault config (services/vault/vault.py) and are applied here the same way for
every tool (docs/adr/0007-tool-surface.md has the table):
- read tools show only what the caller's read grants cover; a search filters before its limit;
- a path the caller may not read gets exactly the answer a missing path gets;
- index_paths / remove_source need write on every collection they touch;
- note writes, lessons, ADRs, graph facts and the tension log go through the one write service.
Outcomes that are not bugs (denied, not_found, locked, stale, invalid) are structured values.

Start-up stays light: no model loads before the handshake; models load on the first search.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from vault_index import __version__
from vault_index.config import content_dir, content_root, project_dir
from vault_index.errors import NotFoundError, VaultIndexError
from vault_index.services import recall as recall_service
from vault_index.services.access.access import (
    Scope,
    granted_filters,
    graph_source,
    is_indexed,
    note_target,
    scope_for,
    visible_entities,
)
from vault_index.services.app import MAX_NOTE_LINES, App
from vault_index.services.curation import adr, curation, lessons
from vault_index.services.curation.recent import recent_activity
from vault_index.services.graph import graph as graph_service
from vault_index.services.graph import linkgraph
from vault_index.services.search.search import DEFAULT_MODE, MAX_LIMIT, Filters
from vault_index.services.workspace import other_vault, refuse_other_vault
from vault_index.surfaces import tool_errors
from vault_index.surfaces.notices import once_per_machine
from vault_index.surfaces.prompts import register_prompts
from vault_index.surfaces.resources import register_resources
from vault_index.surfaces.shapes import (
    AdrOut,
    GraphCreateOut,
    GraphOut,
    HitOut,
    IndexOut,
    LessonOut,
    NoteOut,
    OutcomeOut,
    RecallOut,
    RemoveOut,
    SearchOut,
    SourcesOut,
    denied_text,
    is_outcome,
    jsonable,
    outcome_out,
)

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
INDEXING = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
REMOVING = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
# graph_create only appends, and a repeated fact is skipped, so a retry is harmless
GRAPH_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                              open_world_hint=False)
WRITING = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
# note_write replaces a note's text (its history stays in git): destructive in MCP's sense
NOTE_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                             open_world_hint=False)

Mode = Literal["hybrid+rerank", "hybrid", "keyword", "vector", "grep"]
WriteOp = Literal["create", "replace", "append", "prepend", "replace_section", "find_replace", "move", "promote",
                  "deprecate"]
FailOn = Literal["never", "warning", "error"]
CallerFactory = Callable[[Any, Any], Any]  # (Vault, Context | None) -> Caller

# --- shared input shapes -------------------------------------------------------------------------

# Trigger: `min_length=1` made an empty query a raw pydantic error ("String should have at least
# 1 character [type=string_too_short ...]"). Why: the services already answer it in words that say
# what to do. Outcome: the schema still tells clients minLength 1; the service gives the message.
Query = Annotated[str, Field(max_length=2000, json_schema_extra={"minLength": 1})]
NotePath = Annotated[str, Field(min_length=1, max_length=1024, description="vault-relative path of a .md note")]
RequestId = Annotated[str | None, Field(max_length=100, description="retry with the same id: no second write")]
Name = Annotated[str, Field(min_length=1, max_length=graph_service.MAX_NAME_CHARS)]
Kind = Annotated[str, Field(min_length=1, max_length=graph_service.MAX_TYPE_CHARS)]
SourcePath = Annotated[str, Field(min_length=1, max_length=graph_service.MAX_SOURCE_CHARS,
                                  description="the fact's file: absolute or project-relative")]
LessonId = Annotated[str, Field(min_length=2, max_length=12, pattern=r"^[Ll]-?\d{1,6}$", description="e.g. L-0003")]
LessonText = Annotated[str, Field(min_length=1, max_length=lessons.MAX_LESSON_CHARS, description="one-line directive")]
Cause = Annotated[str, Field(min_length=1, max_length=lessons.MAX_FIELD_CHARS, description="what taught it")]
Detect = Annotated[str, Field(min_length=1, max_length=lessons.MAX_FIELD_CHARS, description="how to catch a repeat")]
Section = Annotated[str, Field(min_length=1, max_length=adr.MAX_SECTION_CHARS)]
AdrStatus = Literal["proposed", "accepted", "superseded", "deprecated", "rejected"]


class EntityIn(BaseModel):  # camelCase: the memory file's names, as the reference memory server spells them
    name: Name
    entityType: Kind
    source: SourcePath


class ObservationIn(BaseModel):
    entity: Name
    text: Annotated[str, Field(min_length=1, max_length=graph_service.MAX_TEXT_CHARS)]
    source: SourcePath


class RelationIn(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    from_: Name = Field(alias="from")
    to: Name
    relationType: Kind = Field(description="active voice: depends_on")
    source: SourcePath


# --- the server ----------------------------------------------------------------------------------


class _Vaults:
    """The vault config, re-read when its file changes (no restart after editing roles)."""

    def __init__(self, app: App, root: Path):
        self.app, self.root = app, root
        self._stamp: tuple | None = None
        self._vault = None

    def get(self):
        if not self.root.exists():
            content_root()  # the personal folder is made on first use, not at every server start
        config = self.root / ".vault-index" / "config.yaml"
        try:
            info = config.stat()
            stamp = (info.st_mtime_ns, info.st_size)
        except OSError:
            stamp = None
        if self._vault is None or stamp != self._stamp:
            self._vault = self.app.vault(self.root)  # raises ConfigError with the key path
            self._stamp = stamp
        return self._vault


def build_server(app: App, memory_file: str | Path | None = None, caller_factory: CallerFactory | None = None,
                 *, vault_root: str | Path | None = None, instructions_text: str | None = None) -> MCPServer:
    """The MCP server with every tool. `caller_factory(vault, ctx)` names who calls (default: the
    local person, as the stdio transport does)."""
    # Tools run in worker threads. Reads and writes share `app` (one SQLite connection) under
    # `lock`; indexing, which can embed for minutes, runs on its own connection under
    # `index_lock`, so searches keep answering meanwhile (WAL: the last committed state).
    lock, index_lock, graph_lock = threading.Lock(), threading.Lock(), threading.Lock()
    if memory_file:  # every tool, the write tools too, reads the graph path from app.settings
        app.settings = replace(app.settings, memory_file=Path(memory_file).expanduser())
    memory_file = app.settings.memory_file
    if caller_factory is None:
        from vault_index.surfaces.callers import stdio_caller_factory

        caller_factory = stdio_caller_factory()
    if vault_root:  # the server serves that vault (or project): its workspace decides what is seen
        app.serve_from(Path(vault_root).expanduser().resolve())
    home = app.workspace.root if app.workspace.kind == "vault" else content_dir()
    vaults = _Vaults(app, Path(vault_root).expanduser().resolve() if vault_root else home)
    indexer: list[App] = []  # opened on first use, sharing the loaded models
    adopted = threading.Event()  # the project's own folders indexed (ADR 0020), once per process
    text = instructions_text or instructions(app.status() if _reads_all(vaults, caller_factory) else None,
                                             memory_file, app.fact_visible())
    server = MCPServer("vault-index", version=__version__, instructions=text)

    def call(fn, *args, guard: threading.Lock = lock):
        with guard:
            try:
                return fn(*args)
            except VaultIndexError as exc:
                raise ToolError(str(exc)) from exc
            except Exception as exc:  # noqa: BLE001 - becomes a message that names tool, input, next step
                # Trigger: a failure that is not one of ours (the SDK would send only "Error
                # executing tool X"). Why: the agent must learn what failed and what to try.
                # Outcome: the calling tool's name and arguments in the message (every tool
                # calls `call` directly); the traceback on stderr only.
                tool, inputs = tool_errors.calling_tool()
                tool_errors.log_failure(tool, exc)
                raise ToolError(tool_errors.unexpected_failure(tool, inputs, exc)) from exc

    def adopt() -> None:
        """Index the project's docs/ and notes/ before the first answer (after the handshake, so
        start-up stays light): keywords now, their vectors on a thread, so a large docs folder
        never holds the first answer for minutes. A failure is logged; the index as it is answers."""
        if adopted.is_set():
            return
        with index_lock:
            if adopted.is_set():
                return
            try:
                if not indexer:
                    indexer.append(app.reopen())
                report = indexer[0].adopt_workspace(embed=False)
                if report is not None:
                    threading.Thread(target=embed_adopted, daemon=True, name="adopt-vectors").start()
            except Exception as exc:  # noqa: BLE001 - the index as it is still answers
                tool_errors.log_failure("adopt_workspace", exc)
            adopted.set()

    def embed_adopted() -> None:
        with index_lock:
            try:
                indexer[0].adopt_workspace()
            except Exception as exc:  # noqa: BLE001 - keyword search of those notes still works
                tool_errors.log_failure("adopt_workspace", exc)

    def who(ctx):
        """(vault, caller, scope) for this request; a broken config is a tool error that says where."""
        adopt()
        try:
            vault = vaults.get()
            caller = caller_factory(vault, ctx)  # a role the vault lacks (VAULT_ROLE=editr) is refused here
        except VaultIndexError as exc:
            raise ToolError(str(exc)) from exc
        return vault, caller, scope_for(vault, vault.grants(caller.role))

    elsewhere: dict[Path, _Vaults] = {}  # the person's own notes folders, written as plain vaults

    def who_at(ctx, path: str):
        """who(), for a note at `path`: an absolute path inside a visible source outside this
        vault (the person's own notes, from a project) is written in that folder, under the
        local person's default role there (ADR 0020); (vault, caller, scope, path in that vault)."""
        vault, caller, scope = who(ctx)
        given = Path(os.path.normpath(os.path.expanduser(path)))
        call(refuse_other_vault, vault.root, path)
        if not given.is_absolute() or app.workspace.kind == "vault" or given.is_relative_to(vault.root):
            return vault, caller, scope, path
        sees = call(app.sees_path)
        root = next((Path(r) for r in call(app.roots) if given.is_relative_to(r) and Path(r).is_dir()), None)
        if root is None or (sees is not None and not sees(str(given))):  # e.g. a vault in a personal folder
            return vault, caller, scope, path  # the write service refuses it as outside the vault
        try:
            other = elsewhere.setdefault(root, _Vaults(app, root)).get()
        except VaultIndexError as exc:
            raise ToolError(str(exc)) from exc
        call(refuse_other_vault, root, str(given))
        caller = caller_factory(other, ctx)
        return other, caller, scope_for(other, other.grants(caller.role)), str(given.relative_to(root))

    def need_read(scope: Scope, caller) -> None:
        if not scope.reads_any:
            raise ToolError(denied_text(caller, "read"))

    def graph_roots() -> list[Path]:
        """Where an agent's fact may name its source: the project folder and the registered sources."""
        if app.workspace.kind == "vault":  # a vault sees only itself (ADR 0020): its facts too
            return [app.workspace.root]
        homes = dict.fromkeys([project_dir(), content_dir()])  # the content folder is outside a vault-index clone
        return [*homes, *(Path(source["path"]) for source in call(app.sources))]

    def index(paths: list[str] | None, name: str | None = None):
        if not indexer:
            indexer.append(app.reopen())
        return indexer[0].index(paths, by_agent=True, name=name)  # what an agent may add: services/access/boundaries.py

    # --- search and read the index ---------------------------------------------------------------

    @server.tool(annotations=READ_ONLY, structured_output=True)
    def search_notes(
        query: Query,
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = 8,
        mode: Mode = DEFAULT_MODE,
        path_prefix: Annotated[str | None, Field(max_length=1000)] = None,
        tags: Annotated[list[str] | None, Field(max_length=20)] = None,
        status: Annotated[str | None, Field(max_length=40, description="draft, canonical, deprecated")] = None,
        collection: Annotated[str | None, Field(max_length=200)] = None,
        source: Annotated[str | None, Field(max_length=64, description="source name")] = None,
        per_note: Annotated[bool, Field(description="one hit per note (more: its other matches)")] = True,
    ) -> SearchOut:
        """Search the notes (hybrid keyword + vector, reranked); each hit has path, heading, lines,
        snippet and decay."""
        vault, caller, scope = who(ctx)
        need_read(scope, caller)
        filters = granted_filters(Filters(path_prefix, tuple(tags or ()), status, collection), scope)
        result = call(partial(app.search, source=source, per_note=per_note), query, mode, limit, filters)
        decays = hit_decays(vault, [h.path for h in result.hits])
        return SearchOut(query=result.query, mode=result.mode, vector_used=result.vector_used,
                         reranked=result.reranked, notices=once_per_machine(result.notices, app.settings.model_cache,
                                                                            "mcp"),
                         hits=[HitOut(**{k: getattr(h, k) for k in HitOut.model_fields if k != "decay"},
                                      decay=decays.get(h.path)) for h in result.hits])

    def hit_decays(vault, paths: list[str]) -> dict[str, dict | None]:
        """Decay per hit from the frontmatter the index holds (under `lock`: the shared connection)."""
        today, fraction = dt.date.today(), curation.aging_fraction(vault)
        return call(lambda: {p: curation.indexed_decay(app.store, p, today, fraction) for p in set(paths)})

    @server.tool(annotations=READ_ONLY, structured_output=True)
    def get_note(
        path: Annotated[str, Field(min_length=1, max_length=4096, description="absolute, or relative to a source")],
        ctx: Context,
        start_line: Annotated[int, Field(ge=1)] = 1,
        max_lines: Annotated[int, Field(ge=1, le=MAX_NOTE_LINES)] = 400,
    ) -> NoteOut:
        """Read a window of lines of a note inside a registered source."""
        vault, caller, scope = who(ctx)
        need_read(scope, caller)
        real = call(note_target, app, path)
        if not scope.can_read(real):  # the very answer a missing file gets
            raise ToolError(str(NotFoundError(f"{path} is not a file in the index sources")))
        return NoteOut(**call(app.get_note, str(real), start_line, max_lines))

    @server.tool(annotations=READ_ONLY, structured_output=True)
    def list_sources(ctx: Context) -> SourcesOut:
        """Registered source folders with file and chunk counts."""
        vault, caller, scope = who(ctx)
        if not scope.reads_all:  # whole-folder counts would tell about collections it cannot read
            raise ToolError(denied_text(caller, "read on every collection (\"*\")"))
        return SourcesOut(sources=call(app.sources))

    @server.tool(annotations=INDEXING, structured_output=True)
    def index_paths(
        ctx: Context,
        paths: Annotated[list[Annotated[str, Field(min_length=1, max_length=4096)]],
                         Field(max_length=50, description="folders or files; empty re-syncs every source")] = [],  # noqa: B006
        name: Annotated[str | None, Field(max_length=64, description="names a single path's source")] = None,
    ) -> IndexOut:
        """Add folders or files as sources and bring the index up to date (incremental)."""
        vault, caller, scope = who(ctx)
        refuse_unwritable(scope, caller, paths)
        report = call(index, paths or None, name, guard=index_lock)
        return IndexOut(indexed=report.indexed, unchanged=report.unchanged, removed=report.removed,
                        chunks_embedded=report.chunks_embedded, vector_used=report.vector_used,
                        problems=[f"{p}: {m}" for p, m in report.problems][:100], seconds=round(report.seconds, 2))

    @server.tool(annotations=REMOVING, structured_output=True)
    def remove_source(
        path: Annotated[str, Field(min_length=1, max_length=4096, description="path or name, as list_sources shows")],
        ctx: Context,
    ) -> RemoveOut:
        """Unregister a source and drop its files from the index (files untouched)."""
        vault, caller, scope = who(ctx)
        target = call(app.source_target, path)  # a name: the grant is checked on its folder
        refuse_unwritable(scope, caller, [target])
        return RemoveOut(removed_files=call(app.remove, target))

    # --- memory graph and recall -----------------------------------------------------------------

    @server.tool(annotations=GRAPH_WRITE, structured_output=True)
    def graph_create(
        ctx: Context,
        entities: Annotated[list[EntityIn], Field(max_length=100)] = [],  # noqa: B006
        observations: Annotated[list[ObservationIn], Field(max_length=500)] = [],  # noqa: B006
        relations: Annotated[list[RelationIn], Field(max_length=200)] = [],  # noqa: B006
    ) -> GraphCreateOut:
        """Add entities, observations and relations to the memory graph; each fact names its source
        file (in the project or a source). All or nothing; facts already there are skipped."""
        vault, caller, scope = who(ctx)
        facts = [*entities, *observations, *relations]
        base = graph_roots()[0]  # relative sources: the vault's root in a vault, else the project
        sources = {graph_source(f.source, base) for f in facts}
        if not all(scope.can_write(s) for s in sources):
            raise ToolError(denied_text(caller, "write on the collection of every fact's source"))
        result = call(partial(graph_service.create, base=base, roots=graph_roots()), memory_file,
                      [e.model_dump() for e in entities], [o.model_dump() for o in observations],
                      [r.model_dump(by_alias=True) for r in relations], guard=graph_lock)
        return GraphCreateOut(**result)

    @server.tool(annotations=READ_ONLY, structured_output=True)
    def graph_search(
        query: Query,
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=graph_service.MAX_SEARCH_LIMIT)] = 10,
    ) -> GraphOut:
        """Search the memory graph by keyword; entities come with observations, relations and sources."""
        vault, caller, scope = who(ctx)
        need_read(scope, caller)
        found = call(graph_service.search, memory_file, query, graph_service.MAX_SEARCH_LIMIT,
                     app.fact_visible(), guard=graph_lock)
        shown = visible_entities(found, scope)[:limit]
        for entity in shown:  # as recall gives it: a path to cite, never null
            entity["display"] = recall_service.display_path(entity["source"])
        return GraphOut(entities=shown)

    @server.tool(annotations=READ_ONLY, structured_output=True)
    def graph_open(
        names: Annotated[list[Name], Field(min_length=1, max_length=50, description="entity names, any case")],
        ctx: Context,
    ) -> GraphOut:
        """Read named memory-graph entities in full."""
        vault, caller, scope = who(ctx)
        need_read(scope, caller)
        opened = call(graph_service.open_entities, memory_file, names, app.fact_visible(), guard=graph_lock)
        shown = visible_entities(opened["entities"], scope)
        seen = {e["name"] for e in shown}
        hidden = [e["name"] for e in opened["entities"] if e["name"] not in seen]
        return GraphOut(entities=shown, missing=[*opened["missing"], *hidden])

    @server.tool(annotations=READ_ONLY, structured_output=True)
    def recall(
        query: Query,
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=recall_service.MAX_RECALL_LIMIT, description="per list")] = 5,
    ) -> RecallOut:
        """Search notes, lessons (lessons.md) and the memory graph at once; cite the paths."""
        vault, caller, scope = who(ctx)
        need_read(scope, caller)
        found = call(partial(recall_service.recall, filters=granted_filters(Filters(), scope),
                             graph_filter=lambda entities: visible_entities(entities, scope)),
                     app, memory_file, query, limit)
        hits = [*found["notes"], *found["lessons"]]
        decays = hit_decays(vault, [hit["path"] for hit in hits])
        for hit in hits:
            hit["decay"] = decays.get(hit["path"])
        found["notices"] = once_per_machine(found["notices"], app.settings.model_cache, "mcp")
        return RecallOut(**found)

    # --- lessons and decision records ------------------------------------------------------------
    # Thin callers of services/curation/lessons.py and services/curation/adr.py, which write through the write
    # service as this caller (grant check, lock, re-index and commit as stages). A record that was
    # written but whose re-index, graph link or commit failed is `written` with a notice: never
    # an error, or a retry would write it twice.

    def reindexed(outcome, path) -> bool:
        """False when the record was written outside every source, or its re-index failed."""
        return (outcome.status == "written" and bool(path) and call(is_indexed, app, path)
                and not any("index" in notice for notice in outcome.notices))

    def lesson_tool(fn, *args, status: str, superseded: str | None = None, ctx, request_id: str | None) -> LessonOut:
        vault, caller, scope = who(ctx)
        path = lessons_file(vault)
        outcome = call(partial(fn, writer=writer_for(vault), caller=caller, request_id=request_id), path, *args)
        require_written(outcome)
        return LessonOut(id=outcome.result["id"], status=status, path=str(path), superseded=superseded,
                         reindexed=reindexed(outcome, path), notices=list(outcome.notices))

    @server.tool(annotations=WRITING, structured_output=True)
    def lesson_add(
        lesson: LessonText, cause: Cause, detect: Detect, ctx: Context,
        tags: Annotated[list[Annotated[str, Field(min_length=1, max_length=40)]] | None, Field(max_length=10)] = None,
        request_id: RequestId = None,
    ) -> LessonOut:
        """Record a lesson in docs/lessons.md; returns its new id (L-NNNN)."""
        return lesson_tool(lessons.add_outcome, lesson, cause, detect, tags, status="active", ctx=ctx,
                           request_id=request_id)

    @server.tool(annotations=WRITING, structured_output=True)
    def lesson_supersede(old_id: LessonId, lesson: LessonText, cause: Cause, detect: Detect,
                         ctx: Context, request_id: RequestId = None) -> LessonOut:
        """Replace an active lesson; the old one stays, marked superseded."""
        return lesson_tool(lessons.supersede_outcome, old_id, lesson, cause, detect, status="active",
                           superseded=lessons.normalize_id(old_id), ctx=ctx, request_id=request_id)

    @server.tool(annotations=WRITING, structured_output=True)
    def lesson_retire(id: LessonId, reason: Cause, ctx: Context, request_id: RequestId = None) -> LessonOut:
        """Mark an active lesson retired with the reason; its text stays."""
        return lesson_tool(lessons.retire_outcome, id, reason, status="retired", ctx=ctx, request_id=request_id)

    @server.tool(annotations=WRITING, structured_output=True)
    def adr_create(
        title: Annotated[str, Field(min_length=1, max_length=adr.MAX_TITLE_CHARS)],
        context: Annotated[Section, Field(description="the problem and forces")],
        options: Annotated[Section, Field(description="options considered, with measurements")],
        decision: Annotated[Section, Field(description="what was chosen, when to revisit")],
        ctx: Context,
        status: AdrStatus = "accepted",
        relates_to: Annotated[list[Annotated[str, Field(min_length=1, max_length=200)]] | None,
                              Field(max_length=20, description="graph entities it decides")] = None,
        request_id: RequestId = None,
    ) -> AdrOut:
        """Write docs/adr/NNNN-slug.md (next number) and link it in the memory graph."""
        vault, caller, scope = who(ctx)
        outcome = call(partial(adr.record, writer=writer_for(vault), caller=caller, memory_file=memory_file,
                               relates_to=relates_to or [], roots=graph_roots(), request_id=request_id),
                       adr_folder(vault), title, context, options, decision, status, guard=lock)
        require_written(outcome)
        result = outcome.result or {}
        missing = list(result.get("missing", relates_to or []))
        notices = list(outcome.notices)
        if missing and "entity" in result:
            notices.append("not in the graph, so not linked: " + ", ".join(missing))
        return AdrOut(path=str(result.get("path", "")), entity=result.get("entity"),
                      related=list(result.get("related", [])), missing=missing,
                      reindexed=reindexed(outcome, result.get("path")),
                      notices=notices)

    # --- the curated vault -----------------------------------------------------------------------

    def writer_for(vault):
        return app.writer(vault)

    @server.tool(annotations=READ_ONLY, structured_output=True)
    def note_read(path: NotePath, ctx: Context, history: bool = False) -> OutcomeOut:
        """Read a vault note: body, frontmatter, validation problems, decay and version (pass it
        back as base_version). history=true adds its write history."""
        vault, caller, scope, path = who_at(ctx, path)
        view = call(writer_for(vault).read, caller, path)
        if is_outcome(view):
            return outcome_out(view)
        data = {"collection": view.collection, "frontmatter": view.frontmatter, "body": view.body,
                "problems": list(view.problems), "decay": view.decay}
        if history:
            found = call(writer_for(vault).history, caller, path)
            data["history"] = found if isinstance(found, list) else []
        return OutcomeOut(status="ok", message=f"read {view.path}", path=view.path, version=view.version,
                          data=jsonable(data))

    @server.tool(annotations=NOTE_WRITE, structured_output=True)
    def note_write(
        op: WriteOp,
        path: NotePath,
        ctx: Context,
        body: Annotated[str | None, Field(max_length=1_000_000,
                                          description="body, section or replacement; replace: omit to keep")] = None,
        frontmatter: Annotated[dict | None, Field(description="create/replace fields; never status canonical")] = None,
        base_version: Annotated[str | None, Field(max_length=200, description="version you read (not create)")] = None,
        reason: Annotated[str | None, Field(max_length=2000, description="why; required to deprecate")] = None,
        superseded_by: Annotated[str | None, Field(max_length=1024)] = None,
        request_id: RequestId = None,
        heading: Annotated[str, Field(max_length=500, description="text, ## text or A > B")] = "",
        find: Annotated[str, Field(max_length=100_000)] = "",
        count: Annotated[int, Field(ge=1, le=10_000, description="expected matches")] = 1,
        new_path: Annotated[str, Field(max_length=1024)] = "",
    ) -> OutcomeOut:
        """Change a note via the write service (lock, version, validation, commit): create, replace,
        append, prepend, replace_section, find_replace, move (links follow), promote, deprecate."""
        from vault_index.services.writes.edit_ops import write_op

        vault, caller, scope, path = who_at(ctx, path)
        if new_path:
            call(refuse_other_vault, vault.root, new_path)  # a move into a vault is a write there
        writer = writer_for(vault)
        return outcome_out(call(partial(write_op, body=body, frontmatter=frontmatter, base_version=base_version,
                                        reason=reason, superseded_by=superseded_by, request_id=request_id,
                                        heading=heading or None, find=find or None, count=count,
                                        new_path=new_path or None),
                                writer, caller, op, path), writer)

    @server.tool(annotations=WRITING, structured_output=True)
    def tension_log(
        a: NotePath, b: NotePath,
        description: Annotated[str, Field(min_length=1, max_length=curation.MAX_TENSION_CHARS,
                                          description="how the two notes contradict")],
        ctx: Context,
        request_id: RequestId = None,
    ) -> OutcomeOut:
        """Record a contradiction between two notes in tensions.md (committed; resolves nothing)."""
        vault, caller, scope = who(ctx)
        return outcome_out(call(partial(curation.log_tension, request_id=request_id),
                                writer_for(vault), vault, caller, a, b, description))

    @server.tool(annotations=READ_ONLY, structured_output=True)
    def vault_review(
        ctx: Context,
        lint: bool = True,
        fail_on: Annotated[FailOn, Field(description="status failed when a finding is this severe")] = "never",
        recent_days: Annotated[int, Field(ge=0, le=3650)] = 0,
    ) -> OutcomeOut:
        """Curation dashboard of the notes you can read (counts per collection and status, invalid
        frontmatter, decay, tensions, recent writes; data.recent: notes changed in recent_days) and lint."""
        vault, caller, scope = who(ctx)
        return outcome_out(call(partial(review, fail_on=fail_on, lint=lint, recent_days=recent_days), vault, caller,
                                scope))

    @server.tool(annotations=READ_ONLY, structured_output=True)
    def note_links(
        ctx: Context,
        direction: Literal["backlinks", "links", "neighbors", "related"],
        path: Annotated[str | None, Field(max_length=4096)] = None,
        query: Annotated[str | None, Field(max_length=2000, description="related only: instead of path")] = None,
        depth: Annotated[int, Field(ge=1, le=3)] = 1,
        types: Annotated[list[str] | None, Field(max_length=10, description="edge kinds, e.g. wikilink, "
                                                 "supersedes, related, provenance")] = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
    ) -> OutcomeOut:
        """The link graph of a note: backlinks, its links, neighbors to a depth, or related notes
        (near in meaning and in links; a query works too)."""
        vault, caller, scope = who(ctx)
        need_read(scope, caller)
        if path and not scope.can_read(call(note_target, app, path)):
            raise ToolError(str(NotFoundError(f"{path} is not a file in the index sources")))
        out = call(partial(linkgraph.note_links, query=query, depth=depth, types=types, limit=limit,
                           can_read=scope.can_read), app, direction, path)
        return OutcomeOut(status="ok", message=f"{len(out['results'])} {direction}", path=out["note"] or "",
                          data=out)

    def review(vault, caller, scope: Scope, *, fail_on: str, lint: bool, recent_days: int = 0):
        if not scope.reads_any:
            return denied_outcome(caller)
        out = curation.review(writer_for(vault), vault, caller, scope, fail_on=fail_on, lint=lint)
        if recent_days:  # recent activity (services/curation/recent.py): git where there is one, else mtimes
            readable = lambda p: scope.can_read(p) and other_vault(vault.root, p) is None  # noqa: E731
            out["data"]["recent"] = recent_activity(Path(vault.root), readable, days=recent_days)
        return out

    # prompts and resources for every host (surfaces/prompts.py, surfaces/resources.py); a note
    # resource is read by the get_note tool above, so it answers what get_note answers
    register_prompts(server)
    register_resources(server, app, read_note=get_note, scope_of=lambda ctx: who(ctx)[2], lock=lock)
    return server


# --- helpers shared by the tools and the CLI -----------------------------------------------------


def denied_outcome(caller) -> dict:
    """The answer of vault_review (and the CLI's lint and dashboard) to a caller who reads nothing."""
    return {"status": "denied", "message": denied_text(caller, "read"), "path": "", "version": None, "data": {}}


def lessons_file(vault) -> Path:
    return Path(vault.root) / "docs" / "lessons.md"


def adr_folder(vault) -> Path:
    return Path(vault.root) / "docs" / "adr"


def require_written(outcome) -> None:
    """The lesson and ADR tools answer with their record; any other outcome is a tool error that
    starts with its status (`denied: ...`, `locked: ...`) and says what to do."""
    if not outcome.ok:
        raise ToolError(f"{outcome.status}: {outcome.message}")


def refuse_unwritable(scope: Scope, caller, paths: list[str]) -> None:
    """index_paths / remove_source: write on every collection a path covers; no path means all."""
    targets = [Path(os.path.expanduser(p)).resolve() for p in paths] if paths else [scope.root]
    if not all(scope.can_write(t) for t in targets):
        raise ToolError(denied_text(caller, "write on every collection these paths cover"))


def graph_summary(memory_file: Path, visible=None) -> str:
    """One sentence on the memory graph for the instructions; never fails the start-up."""
    try:
        graph = graph_service.load(memory_file, visible)
    except VaultIndexError:
        return "The memory graph file has problems (`vault-index graph check` lists them). "
    return (
        f"The memory graph holds {len(graph.entities)} entities (people, projects, decisions) with "
        "observations and relations, each naming its source file: graph_search and graph_open read "
        "it, graph_create adds facts (every fact needs an existing source file in the project or a source). "
    )


def _reads_all(vaults, caller_factory) -> bool:
    """Whether the caller known at start-up (stdio: the local person; HTTP: nobody yet) reads every
    collection: only then do the instructions name the sources and count the notes (issue 22)."""
    try:
        vault = vaults.get()
        return scope_for(vault, vault.grants(caller_factory(vault, None).role)).reads_all
    except Exception:  # noqa: BLE001 - a broken config or no caller: the plain instructions
        return False


def instructions(status: dict | None, memory_file: Path | None = None, visible=None) -> str:
    """Built from the index state so the agent knows what it can find before it asks.

    `status` None (a caller that may not read everything): the same guidance without the sources'
    paths, the note count or the graph's size; list_sources answers within the caller's grant."""
    if status is None:
        return ("Long-term memory of markdown notes: search them with search_notes (or recall, which "
                "also searches lessons and the memory graph) before answering questions about past work, "
                "decisions, people or lessons, instead of guessing; cite the path and heading of each hit, "
                "and open a note with get_note when a snippet is not enough. list_sources shows what you "
                "may read. Curated vault notes: note_read, then note_write with the version you read.")
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
        + (graph_summary(memory_file, visible) if memory_file else "")
        + "recall searches notes, lessons and the graph at once: use it first for a broad topic. "
        "Curated vault notes: note_read, then note_write with the version you read (prepend, "
        "replace_section and find_replace edit in place; move keeps links working); vault_review "
        "and tension_log for curation."
    )
