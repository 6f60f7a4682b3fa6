"""The curated-vault tools: lessons, decision records, the tension log and the review.

Thin callers of services/curation/lessons.py and services/curation/adr.py, which write through the
write service as this caller (grant check, lock, re-index and commit as stages). A record that was
written but whose re-index, graph link or commit failed is `written` with a notice: never an
error, or a retry would write it twice. Each tool's first argument is the server's ToolContext.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from vault_index.services.access.access import unindexed_notice
from vault_index.services.curation import adr, curation, lessons
from vault_index.surfaces.outcomes import absolute, is_outcome
from vault_index.surfaces.shapes import (
    AdrOut,
    LessonOut,
    OutcomeOut,
    outcome_out,
)
from vault_index.surfaces.tool_context import (
    ToolContext,
    adr_folder,
    lessons_file,
    require_written,
)
from vault_index.surfaces.tool_inputs import (
    AdrStatus,
    Cause,
    Detect,
    FailOn,
    LessonId,
    LessonText,
    NotePath,
    RequestId,
    Section,
)


def lesson_tool(tc: ToolContext, fn, *args, status: str, superseded: str | None = None, ctx,
                request_id: str | None) -> LessonOut:
    vault, caller, scope = tc.who(ctx)
    path = lessons_file(vault)
    outcome = tc.call(partial(fn, writer=tc.writer_for(vault), caller=caller, request_id=request_id), path, *args)
    require_written(outcome)
    return LessonOut(id=outcome.result["id"], status=status, path=str(path), superseded=superseded,
                     reindexed=tc.reindexed(outcome, path), notices=list(outcome.notices))


def lesson_add(
    tc: ToolContext,
    lesson: LessonText, cause: Cause, detect: Detect, ctx: Context,
    tags: Annotated[list[Annotated[str, Field(min_length=1, max_length=40)]] | None, Field(max_length=10)] = None,
    request_id: RequestId = None,
) -> LessonOut:
    """Record a lesson in docs/lessons.md; returns its new id (L-NNNN)."""
    return lesson_tool(tc, lessons.add_outcome, lesson, cause, detect, tags, status="active", ctx=ctx,
                       request_id=request_id)


def lesson_supersede(tc: ToolContext, old_id: LessonId, lesson: LessonText, cause: Cause, detect: Detect,
                     ctx: Context, request_id: RequestId = None) -> LessonOut:
    """Replace an active lesson; the old one stays, marked superseded."""
    return lesson_tool(tc, lessons.supersede_outcome, old_id, lesson, cause, detect, status="active",
                       superseded=lessons.normalize_id(old_id), ctx=ctx, request_id=request_id)


def lesson_retire(tc: ToolContext, id: LessonId, reason: Cause, ctx: Context,
                  request_id: RequestId = None) -> LessonOut:
    """Mark an active lesson retired with the reason; its text stays."""
    return lesson_tool(tc, lessons.retire_outcome, id, reason, status="retired", ctx=ctx, request_id=request_id)


def adr_create(
    tc: ToolContext,
    title: Annotated[str, Field(min_length=1, max_length=adr.MAX_TITLE_CHARS)],
    context: Annotated[Section, Field(description="the problem and forces")],
    options: Annotated[Section, Field(description="options considered, with measurements")],
    decision: Annotated[Section, Field(description="what was chosen, when to revisit")],
    ctx: Context,
    consequences: Annotated[str, Field(max_length=adr.MAX_SECTION_CHARS,
                                       description="what gets easier or harder")] = "",
    status: AdrStatus = "accepted",
    relates_to: Annotated[list[Annotated[str, Field(min_length=1, max_length=200)]] | None,
                          Field(max_length=20, description="graph entities it decides")] = None,
    request_id: RequestId = None,
) -> AdrOut:
    """Write the next decision record (docs/adr/NNNN-slug.md, or the project's own series) and link it in the graph."""
    vault, caller, scope = tc.who(ctx)
    outcome = tc.call(partial(adr.record, writer=tc.writer_for(vault), caller=caller, memory_file=tc.memory_file,
                           relates_to=relates_to or [], roots=tc.graph_roots(), request_id=request_id,
                           consequences=consequences),
                   adr_folder(vault), title, context, options, decision, status, guard=tc.lock)
    require_written(outcome)
    result = outcome.result or {}
    missing = list(result.get("missing", relates_to or []))
    notices = list(outcome.notices)
    if missing and "entity" in result:
        notices.append("not in the graph, so not linked: " + ", ".join(missing))
    # a series in doc/adr or adr/ of a project lies outside what it indexes: said, as note_write says it
    if result.get("path") and (unindexed := tc.call(unindexed_notice, tc.app, result["path"])):
        notices.append(unindexed)
    return AdrOut(path=str(result.get("path", "")), entity=result.get("entity"),
                  related=list(result.get("related", [])), missing=missing,
                  reindexed=tc.reindexed(outcome, result.get("path")),
                  notices=notices)


def tension_log(
    tc: ToolContext,
    a: NotePath, b: NotePath,
    description: Annotated[str, Field(min_length=1, max_length=curation.MAX_TENSION_CHARS,
                                      description="how the two notes contradict")],
    ctx: Context,
    request_id: RequestId = None,
) -> OutcomeOut:
    """Record a contradiction between two notes in tensions.md (committed; resolves nothing)."""
    vault, caller, scope = tc.who(ctx)
    named = [tc.within(vault.root, path) for path in (a, b)]  # the one boundary: hidden reads as missing
    if hidden := next((n for n in named if is_outcome(n)), None):
        return outcome_out(hidden)
    out = outcome_out(tc.call(partial(curation.log_tension, request_id=request_id),
                           tc.writer_for(vault), vault, caller, *named, description))
    # absolute, as every tool answers a path: get_note("tensions.md") did not find the relative one
    return out.model_copy(update={"path": absolute(vault.root, out.path)})


def vault_review(
    tc: ToolContext,
    ctx: Context,
    lint: bool = True,
    fail_on: Annotated[FailOn, Field(description="status failed when a finding is this severe")] = "never",
    recent_days: Annotated[int, Field(ge=0, le=3650)] = 0,
) -> OutcomeOut:
    """Curation dashboard of the notes you can read (counts per collection and status, invalid
        frontmatter, decay, tensions, recent writes; data.recent: notes changed in recent_days) and lint."""
    vault, caller, scope = tc.who(ctx)
    return outcome_out(tc.call(partial(tc.review, fail_on=fail_on, lint=lint, recent_days=recent_days), vault, caller,
                            scope))
