"""What the MCP tools take: their annotations (read-only, destructive...) and input shapes.

The SDK derives each tool's JSON Schema from these types (STYLE.md: no hand-written schemas).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from vault_index.services.curation import adr, lessons
from vault_index.services.graph import graph as graph_service
from vault_index.services.search import subqueries

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
# The agent's sub-queries (services/search/subqueries.py): a few phrasings each, bounded there too.
# Lists and a string with empty defaults, not optional ones: no anyOf-null in the schema.
_Phrase = Annotated[str, Field(max_length=subqueries.MAX_SUBQUERY_CHARS)]
Keywords = Annotated[list[_Phrase], Field(max_length=subqueries.MAX_PER_KIND, description="terms the notes may use")]
Paraphrases = Annotated[list[_Phrase], Field(max_length=subqueries.MAX_PER_KIND, description="the question reworded")]
Hypothetical = Annotated[_Phrase, Field(description="a short passage as the answer might read")]
# Every tool takes every form (services/boundary.resolve; issue 39 item 4): the server's
# instructions say PATH_RULE once, each path input "any path form" (the tool list's token budget).
PATH_RULE = ("Every tool takes a path in any form (absolute, or relative to the project, vault or a source) "
             "and answers absolute paths. ")
ANY_FORM = "any path form"
NotePath = Annotated[str, Field(min_length=1, max_length=1024, description=f"a .md note, {ANY_FORM}")]
RequestId = Annotated[str | None, Field(max_length=100, description="retry with the same id: no second write")]
Name = Annotated[str, Field(min_length=1, max_length=graph_service.MAX_NAME_CHARS)]
Kind = Annotated[str, Field(min_length=1, max_length=graph_service.MAX_TYPE_CHARS)]
SourcePath = Annotated[str, Field(min_length=1, max_length=graph_service.MAX_SOURCE_CHARS,
                                  description=f"the fact's file, {ANY_FORM}")]
LessonId = Annotated[str, Field(min_length=2, max_length=12, pattern=r"^[Ll]-?\d{1,6}$", description="e.g. L-0003")]
LessonText = Annotated[str, Field(min_length=1, max_length=lessons.MAX_LESSON_CHARS, description="one-line directive")]
Cause = Annotated[str, Field(min_length=1, max_length=lessons.MAX_FIELD_CHARS, description="what taught it")]
Detect = Annotated[str, Field(min_length=1, max_length=lessons.MAX_FIELD_CHARS, description="how to catch a repeat")]
Section = Annotated[str, Field(min_length=1, max_length=adr.MAX_SECTION_CHARS)]
AdrStatus = Literal["proposed", "accepted", "superseded", "deprecated", "rejected"]


class EntityIn(BaseModel):  # camelCase: the memory file's names, as the reference memory server spells them
    # an unknown field is an error: `observations` inside an entity, as the reference server takes
    # them, were dropped with "skipped: []" (walkthrough L); here they are graph_create's own list
    model_config = ConfigDict(extra="forbid")
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
