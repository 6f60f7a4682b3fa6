"""The note tools of a curated vault: note_read, note_write (every write operation), note_links.

Each is a top-level function; its first argument is the server's ToolContext (surfaces/tool_context.py),
so a test can call `note_write(tc, op, path, ctx, ...)` without a server.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from vault_index.services import boundary
from vault_index.services.access.access import unindexed_notice
from vault_index.services.graph import linkgraph
from vault_index.surfaces.outcomes import absolute, is_outcome, jsonable
from vault_index.surfaces.shapes import (
    OutcomeOut,
    outcome_out,
)
from vault_index.surfaces.tool_context import (
    ToolContext,
)
from vault_index.surfaces.tool_inputs import (
    NotePath,
    RequestId,
    WriteOp,
)


def note_read(tc: ToolContext, path: NotePath, ctx: Context, history: bool = False) -> OutcomeOut:
    """Read a vault note: body, frontmatter, validation problems, decay and version (pass it
        back as base_version). history=true adds its write history."""
    placed = tc.who_at(ctx, path)
    if is_outcome(placed):  # where it leads is not seen here: the answer a missing note gets
        return outcome_out(placed)
    vault, caller, scope, path = placed
    view = tc.call(tc.writer_for(vault).read, caller, path)
    if is_outcome(view):
        return outcome_out(view)
    data = {"collection": view.collection, "frontmatter": view.frontmatter, "body": view.body,
            "problems": list(view.problems), "decay": view.decay}
    if history:
        found = tc.call(tc.writer_for(vault).history, caller, path)
        data["history"] = found if isinstance(found, list) else []
    return OutcomeOut(status="ok", message=f"read {view.path}", path=absolute(vault.root, view.path),
                      version=view.version, data=jsonable(data))


def note_write(
    tc: ToolContext,
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

    placed = tc.who_at(ctx, path)
    if is_outcome(placed):  # where it leads is not seen here: the answer a missing note gets
        return outcome_out(placed)
    vault, caller, scope, path = placed
    if new_path:  # a move's new name: through the same boundary, inside the note's vault
        new_path = tc.within(vault.root, new_path)
        if is_outcome(new_path):
            return outcome_out(new_path)
    writer = tc.writer_for(vault)
    out = outcome_out(tc.call(partial(write_op, body=body, frontmatter=frontmatter, base_version=base_version,
                                   reason=reason, superseded_by=superseded_by, request_id=request_id,
                                   heading=heading or None, find=find or None, count=count,
                                   new_path=new_path or None),
                           writer, caller, op, path), writer)
    out = out.model_copy(update={"path": absolute(vault.root, out.path)})
    if out.status == "written" and (notice := tc.call(unindexed_notice, tc.app, out.path)):
        out.data["notices"] = [*out.data.get("notices", []), notice]
    return out


def note_links(
    tc: ToolContext,
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
    vault, caller, scope = tc.who(ctx)
    tc.need_read(scope, caller)
    if path and not scope.can_read(tc.call(partial(boundary.resolve, served=True), tc.app, path)):
        raise ToolError(boundary.unseen(path))
    out = tc.call(partial(linkgraph.note_links, query=query, depth=depth, types=types, limit=limit,
                       can_read=scope.can_read), tc.app, direction, path)
    return OutcomeOut(status="ok", message=f"{len(out['results'])} {direction}", path=out["note"] or "",
                      data=out)
