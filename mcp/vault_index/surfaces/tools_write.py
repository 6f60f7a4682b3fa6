"""MCP tools that write the project's curated files: lessons (docs/lessons.md) and decision records.

The tools are thin: each validates its typed input, calls the same service the command-line
scripts call (scripts/learn.py, scripts/adr.py), then re-indexes the written file when it sits
under a registered source. Paths come from the project folder (`config.project_dir()`), never
from the caller, so an agent cannot aim a write elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Annotated, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from vault_index.config import project_dir
from vault_index.services import adr, lessons
from vault_index.services.app import App

WRITING = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)

LessonId = Annotated[str, Field(min_length=2, max_length=12, pattern=r"^[Ll]-?\d{1,6}$", description="e.g. L-0003")]
LessonText = Annotated[str, Field(min_length=1, max_length=lessons.MAX_LESSON_CHARS,
                                  description="the lesson as a directive, one line")]
Cause = Annotated[str, Field(min_length=1, max_length=lessons.MAX_FIELD_CHARS,
                             description="what happened that taught it")]
Detect = Annotated[str, Field(min_length=1, max_length=lessons.MAX_FIELD_CHARS,
                              description="a check or test that would catch a repeat")]
Section = Annotated[str, Field(min_length=1, max_length=adr.MAX_SECTION_CHARS)]
AdrStatus = Literal["proposed", "accepted", "superseded", "deprecated", "rejected"]


class LessonOut(BaseModel):
    id: str
    status: str
    path: str
    superseded: str | None = Field(default=None, description="the lesson this one replaced")
    reindexed: bool = Field(description="false: the file is not under a registered source, or indexing failed")
    notices: list[str]


class AdrOut(BaseModel):
    path: str
    entity: str | None = Field(description="the record's name in the memory graph; null if not linked")
    related: list[str] = Field(description="graph entities the record now 'decides'")
    missing: list[str] = Field(description="names in relates_to that the graph does not have (not linked)")
    reindexed: bool
    notices: list[str]


def lessons_file() -> Path:
    return project_dir() / "docs" / "lessons.md"


def adr_folder() -> Path:
    return project_dir() / "docs" / "adr"


def register_write_tools(server: MCPServer, app: App, call, graph_roots: Callable[[], list[Path]]) -> None:
    """Add lesson_add, lesson_supersede, lesson_retire and adr_create to `server`.

    `call(fn, *args)` is build_server's guard: it serialises with the other tools and turns a
    VaultIndexError into a tool error with its message. `graph_roots()` lists the folders a
    graph fact's source may lie in (the project folder and the registered sources).
    """

    def reindex(path: Path, notices: list[str]) -> bool:
        # The write has happened by now: a failed re-index is a notice, not an error, or the
        # agent would retry and write the lesson twice.
        try:
            return call(app.reindex_file, str(path)) is not None
        except ToolError as exc:
            notices.append(f"written, but not re-indexed: {exc}")
            return False

    def lesson_result(lesson_id: str, status: str, superseded: str | None = None) -> LessonOut:
        path, notices = lessons_file(), []
        reindexed = reindex(path, notices)
        return LessonOut(id=lesson_id, status=status, path=str(path), superseded=superseded,
                         reindexed=reindexed, notices=notices)

    @server.tool(annotations=WRITING, structured_output=True)
    def lesson_add(
        lesson: LessonText,
        cause: Cause,
        detect: Detect,
        tags: Annotated[list[Annotated[str, Field(min_length=1, max_length=40)]] | None, Field(max_length=10)] = None,
    ) -> LessonOut:
        """Record a lesson in docs/lessons.md: a one-line directive, what taught it and how to detect a
        repeat. Returns the new id (L-NNNN)."""
        return lesson_result(call(lessons.add, lessons_file(), lesson, cause, detect, tags), "active")

    @server.tool(annotations=WRITING, structured_output=True)
    def lesson_supersede(old_id: LessonId, lesson: LessonText, cause: Cause, detect: Detect) -> LessonOut:
        """Replace an active lesson with a new one; the old one stays, marked superseded and pointing to
        the new id. Lessons are never deleted."""
        new_id = call(lessons.supersede, lessons_file(), old_id, lesson, cause, detect)
        return lesson_result(new_id, "active", superseded=lessons.normalize_id(old_id))

    @server.tool(annotations=WRITING, structured_output=True)
    def lesson_retire(
        id: LessonId,
        reason: Annotated[str, Field(min_length=1, max_length=lessons.MAX_FIELD_CHARS,
                                     description="why the lesson no longer holds")],
    ) -> LessonOut:
        """Mark an active lesson retired with the reason it no longer holds; its text stays."""
        return lesson_result(call(lessons.retire, lessons_file(), id, reason), "retired")

    @server.tool(annotations=WRITING, structured_output=True)
    def adr_create(
        title: Annotated[str, Field(min_length=1, max_length=adr.MAX_TITLE_CHARS,
                                    description="the decision, one line")],
        context: Annotated[Section, Field(description="the problem and the forces at play")],
        options: Annotated[Section, Field(description="the options considered, with what was measured")],
        decision: Annotated[Section, Field(description="what was chosen and when to revisit it")],
        status: AdrStatus = "accepted",
        relates_to: Annotated[list[Annotated[str, Field(min_length=1, max_length=200)]] | None,
                              Field(max_length=20, description="existing graph entities this decides")] = None,
    ) -> AdrOut:
        """Write a decision record to docs/adr/NNNN-slug.md (next number, never overwrites) and add it to
        the memory graph as 'ADR NNNN: Title', related to the entities it decides."""
        path = call(adr.create, adr_folder(), title, context, options, decision, status)
        notices: list[str] = []
        linked = {"entity": None, "related": [], "missing": list(relates_to or [])}
        try:
            linked = call(partial(adr.link_adr, roots=graph_roots()), app.settings.memory_file, path,
                          relates_to or [])
        except ToolError as exc:
            notices.append(f"written, but not linked in the memory graph: {exc}")
        if linked["missing"]:
            notices.append("not in the graph, so not linked: " + ", ".join(linked["missing"]))
        reindexed = reindex(path, notices)
        return AdrOut(path=str(path), entity=linked["entity"], related=linked["related"],
                      missing=linked["missing"], reindexed=reindexed, notices=notices)
