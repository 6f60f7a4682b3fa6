"""The search and index tools: search_notes, get_note, list_sources, index_paths, remove_source.

Each is a top-level function; its first argument is the server's ToolContext (surfaces/tool_context.py),
the rest is what the agent sends (the SDK derives the schema from them, surfaces/tools.py registers them).
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from vault_index.services import boundary
from vault_index.services.access.access import granted_filters
from vault_index.services.app import MAX_NOTE_LINES
from vault_index.services.search.per_note import PER_NOTE_DEFAULT, section_dict
from vault_index.services.search.search import MAX_LIMIT, Filters
from vault_index.services.search.subqueries import sub_queries
from vault_index.surfaces.denied import denied_text
from vault_index.surfaces.notices import once_per_machine
from vault_index.surfaces.shapes import (
    HitOut,
    IndexOut,
    NoteOut,
    RemoveOut,
    SearchOut,
    SourcesOut,
)
from vault_index.surfaces.tool_context import (
    ToolContext,
    refuse_unwritable,
)
from vault_index.surfaces.tool_inputs import (
    ANY_FORM,
    Hypothetical,
    Keywords,
    Mode,
    Paraphrases,
    Query,
)


def search_notes(
    tc: ToolContext,
    query: Query,
    ctx: Context,
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = 8,
    mode: Annotated[Mode | None, Field(description="default hybrid (hybrid+rerank if VAULT_RERANK=1)")] = None,
    path_prefix: Annotated[str | None, Field(max_length=1000, description=f"a folder, {ANY_FORM}")] = None,
    tags: Annotated[list[str] | None, Field(max_length=20)] = None,
    status: Annotated[str | None, Field(max_length=40, description="draft, canonical, deprecated")] = None,
    collection: Annotated[str | None, Field(max_length=200)] = None,
    source: Annotated[str | None, Field(max_length=64, description="source name")] = None,
    per_note: Annotated[bool, Field(description="false: chunks")] = PER_NOTE_DEFAULT,
    keywords: Keywords = [],  # noqa: B006 - never mutated
    paraphrases: Paraphrases = [],  # noqa: B006
    hypothetical: Hypothetical = "",
    explain: Annotated[bool, Field(description="each hit's keyword and vector rank and score")] = False,
    why: Annotated[str | None, Field(max_length=4096, description="a note path: why it ranks where it does")] = None,
) -> SearchOut:
    """Search the notes (hybrid keyword + vector): one hit per note (path, heading, lines, snippet,
        decay, other matched sections). For any question about past work, also pass keywords and a
        hypothetical answer."""
    vault, caller, scope = tc.who(ctx)
    tc.need_read(scope, caller)
    filters = granted_filters(Filters(path_prefix, tuple(tags or ()), status, collection), scope)
    subs = tc.call(sub_queries, keywords, paraphrases, hypothetical)
    result = tc.call(partial(tc.app.search, source=source, per_note=per_note, subqueries=subs, explain=explain),
                     query, mode, limit, filters)
    why_out = tc.call(partial(tc.app.why, mode=mode, limit=limit, filters=filters, source=source,
                              per_note=per_note), query, why) if why else None
    decays = tc.hit_decays(vault, [h.path for h in result.hits])
    return SearchOut(query=result.query, mode=result.mode, vector_used=result.vector_used,
                     reranked=result.reranked, confidence=result.confidence, relevant=result.relevant,
                     notices=once_per_machine(result.notices, tc.app.settings.model_cache, "mcp"),
                     hits=[HitOut(**{k: getattr(h, k) for k in HitOut.model_fields
                                     if k not in ("decay", "also", "explain")},
                                  decay=decays.get(h.path), also=[section_dict(s) for s in h.also],
                                  explain=h.explain if explain else None)
                           for h in result.hits], why=why_out)


def get_note(
    tc: ToolContext,
    path: Annotated[str, Field(min_length=1, max_length=4096, description=ANY_FORM)],
    ctx: Context,
    start_line: Annotated[int, Field(ge=1)] = 1,
    max_lines: Annotated[int, Field(ge=1, le=MAX_NOTE_LINES)] = 400,
) -> NoteOut:
    """Read a window of lines of a note inside a registered source."""
    vault, caller, scope = tc.who(ctx)
    tc.need_read(scope, caller)
    real = tc.call(partial(boundary.resolve, served=True), tc.app, path)  # missing and hidden: one answer
    if not scope.can_read(real):  # the very answer a missing file gets
        raise ToolError(boundary.unseen(path))
    return NoteOut(**tc.call(tc.app.get_note, str(real), start_line, max_lines))


def list_sources(tc: ToolContext, ctx: Context) -> SourcesOut:
    """Registered source folders with file and chunk counts."""
    vault, caller, scope = tc.who(ctx)
    if not scope.reads_all:  # whole-folder counts would tell about collections it cannot read
        raise ToolError(denied_text(caller, "read on every collection (\"*\")"))
    return SourcesOut(sources=tc.call(tc.app.sources))


def index_paths(
    tc: ToolContext,
    ctx: Context,
    paths: Annotated[list[Annotated[str, Field(min_length=1, max_length=4096)]],
                     Field(max_length=50, description="folders or files; empty re-syncs every source")] = [],  # noqa: B006
    name: Annotated[str | None, Field(max_length=64, description="names a single path's source")] = None,
) -> IndexOut:
    """Add folders or files as sources and bring the index up to date (incremental)."""
    vault, caller, scope = tc.who(ctx)
    refuse_unwritable(scope, caller, paths)
    report = tc.call(tc.index, paths or None, name, guard=tc.index_lock)
    return IndexOut(indexed=report.indexed, unchanged=report.unchanged, removed=report.removed,
                    chunks_embedded=report.chunks_embedded, vector_used=report.vector_used,
                    problems=[f"{p}: {m}" for p, m in report.problems][:100], seconds=round(report.seconds, 2),
                    notices=report.notices[:100])


def remove_source(
    tc: ToolContext,
    path: Annotated[str, Field(min_length=1, max_length=4096, description="path or name, as list_sources shows")],
    ctx: Context,
) -> RemoveOut:
    """Unregister a source and drop its files from the index (files untouched)."""
    vault, caller, scope = tc.who(ctx)
    target = tc.call(tc.app.source_target, path)  # a name: the grant is checked on its folder
    refuse_unwritable(scope, caller, [target])
    return RemoveOut(removed_files=tc.call(tc.app.remove, target))
