"""The memory-graph tools and recall: graph_create, graph_search, graph_open, recall.

Each is a top-level function; its first argument is the server's ToolContext (surfaces/tool_context.py).
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from vault_index.services import recall as recall_service
from vault_index.services.access.access import granted_filters, graph_source, visible_entities
from vault_index.services.graph import graph as graph_service
from vault_index.services.search.search import Filters
from vault_index.services.search.subqueries import sub_queries
from vault_index.surfaces.denied import denied_text
from vault_index.surfaces.notices import once_per_machine
from vault_index.surfaces.shapes import (
    GraphCreateOut,
    GraphOut,
    RecallOut,
)
from vault_index.surfaces.tool_context import (
    ToolContext,
)
from vault_index.surfaces.tool_inputs import (
    EntityIn,
    Hypothetical,
    Keywords,
    Name,
    ObservationIn,
    Paraphrases,
    Query,
    RelationIn,
)


def graph_create(
    tc: ToolContext,
    ctx: Context,
    entities: Annotated[list[EntityIn], Field(max_length=100)] = [],  # noqa: B006
    observations: Annotated[list[ObservationIn], Field(max_length=500)] = [],  # noqa: B006
    relations: Annotated[list[RelationIn], Field(max_length=200)] = [],  # noqa: B006
) -> GraphCreateOut:
    """Add entities, observations and relations to the memory graph; each fact names its source
        file (in the project or a source). All or nothing; facts already there are skipped."""
    vault, caller, scope = tc.who(ctx)
    facts = [*entities, *observations, *relations]
    base = tc.graph_roots()[0]  # relative sources: the vault's root in a vault, else the project
    sources = {graph_source(f.source, base) for f in facts}
    if not all(scope.can_write(s) for s in sources):
        raise ToolError(denied_text(caller, "write on the collection of every fact's source"))
    roots = tc.graph_roots()
    # Trigger: graph_create answered "already in the graph" for a hidden project's entity and the very
    # text of its observations, and took a hidden note as a fact's source. Why: it checked names and
    # duplicates against the whole file. Outcome: it sees the facts this workspace sees, and each
    # source goes through the one boundary (services/boundary.py); hidden reads as missing.
    with tc.lock:
        visible = tc.app.fact_visible()
    admit = partial(tc.locked, tc.app.resolve, base=roots, for_write=True)
    result = tc.call(partial(graph_service.create, base=base, roots=roots, visible=visible, admit=admit),
                     tc.memory_file, [e.model_dump() for e in entities], [o.model_dump() for o in observations],
                     [r.model_dump(by_alias=True) for r in relations], guard=tc.graph_lock)
    return GraphCreateOut(**result)


def graph_search(
    tc: ToolContext,
    query: Query,
    ctx: Context,
    limit: Annotated[int, Field(ge=1, le=graph_service.MAX_SEARCH_LIMIT)] = 10,
) -> GraphOut:
    """Search the memory graph by keyword; entities come with observations, relations and sources."""
    vault, caller, scope = tc.who(ctx)
    tc.need_read(scope, caller)
    found = tc.call(graph_service.search, tc.memory_file, query, graph_service.MAX_SEARCH_LIMIT,
                 tc.app.fact_visible(), guard=tc.graph_lock)
    shown = visible_entities(found, scope)[:limit]
    for entity in shown:  # as recall gives it: a path to cite, never null
        entity["display"] = recall_service.display_path(entity["source"])
    return GraphOut(entities=shown)


def graph_open(
    tc: ToolContext,
    names: Annotated[list[Name], Field(min_length=1, max_length=50, description="entity names, any case")],
    ctx: Context,
) -> GraphOut:
    """Read named memory-graph entities in full."""
    vault, caller, scope = tc.who(ctx)
    tc.need_read(scope, caller)
    opened = tc.call(graph_service.open_entities, tc.memory_file, names, tc.app.fact_visible(), guard=tc.graph_lock)
    shown = visible_entities(opened["entities"], scope)
    seen = {e["name"] for e in shown}
    hidden = [e["name"] for e in opened["entities"] if e["name"] not in seen]
    return GraphOut(entities=shown, missing=[*opened["missing"], *hidden])


def recall(
    tc: ToolContext,
    query: Query,
    ctx: Context,
    limit: Annotated[int, Field(ge=1, le=recall_service.MAX_RECALL_LIMIT, description="per list")] = 5,
    keywords: Keywords = [],  # noqa: B006 - never mutated
    paraphrases: Paraphrases = [],  # noqa: B006
    hypothetical: Hypothetical = "",
) -> RecallOut:
    """Search notes, lessons (lessons.md) and the memory graph at once; cite the paths. Pass keywords
        and a hypothetical answer too, as to search_notes."""
    vault, caller, scope = tc.who(ctx)
    tc.need_read(scope, caller)
    subs = tc.call(sub_queries, keywords, paraphrases, hypothetical)
    found = tc.call(partial(recall_service.recall, filters=granted_filters(Filters(), scope), subqueries=subs,
                         graph_filter=lambda entities: visible_entities(entities, scope)),
                 tc.app, tc.memory_file, query, limit)
    hits = [*found["notes"], *found["lessons"]]
    decays = tc.hit_decays(vault, [hit["path"] for hit in hits])
    for hit in hits:
        hit["decay"] = decays.get(hit["path"])
    found["notices"] = once_per_machine(found["notices"], tc.app.settings.model_cache, "mcp")
    return RecallOut(**found)
