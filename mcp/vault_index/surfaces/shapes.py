"""What the MCP tools answer: the output models and the one outcome shape, shared with the CLI.

The curated-vault tools and the CLI's `--json` print the same object, `{status, message, path,
version, data}` (`OutcomeOut`), so a script and an agent read one format (docs/mcp.md, docs/cli.md).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from vault_index.surfaces.outcomes import outcome_dict


class HitOut(BaseModel):
    path: str
    heading: str
    line_start: int
    line_end: int
    score: float
    snippet: str
    status: str = ""
    decay: dict | None = None
    more: int = 0
    also: list[dict] = []  # heading, line_start, line_end of the first few of those `more`
    explain: dict | None = None  # with explain: each side's rank and score, the fusion (search.Searcher._hit)


class SearchOut(BaseModel):
    query: str
    mode: str
    vector_used: bool
    reranked: bool
    confidence: float | None = None  # P(first hit relevant), calibrated; "nothing relevant" below the threshold
    relevant: bool = False
    notices: list[str]
    hits: list[HitOut]
    why: dict | None = None  # with `why`: where that note stands and why (services/why.py)


class NoteOut(BaseModel):
    path: str
    title: str | None
    indexed: bool
    frontmatter: dict
    line_start: int
    line_end: int
    total_lines: int
    truncated: bool = Field(description="more lines follow: call again with start_line")
    content: str


class SourcesOut(BaseModel):
    sources: list[dict] = Field(description="name, path, files, chunks (and checkouts: path, here, for a "
                                            "source with several)")


class IndexOut(BaseModel):
    indexed: int
    unchanged: int
    removed: int
    chunks_embedded: int
    vector_used: bool
    problems: list[str]
    seconds: float
    notices: list[str] = []


class RemoveOut(BaseModel):
    removed_files: int


class GraphCreateOut(BaseModel):
    memory_file: str
    added: dict[str, int]
    skipped: list[dict] = Field(description="kind, fact, reason")


class GraphOut(BaseModel):
    entities: list[dict] = Field(description="name, entityType, source, observations, relations")
    missing: list[str] = []


class RecallOut(BaseModel):
    query: str
    confidence: float | None = None
    relevant: bool = False
    notes: list[dict]
    lessons: list[dict]
    graph: list[dict]
    notices: list[str]


class LessonOut(BaseModel):
    id: str
    status: str
    path: str
    superseded: str | None = None
    reindexed: bool
    notices: list[str]


class AdrOut(BaseModel):
    path: str
    entity: str | None
    related: list[str]
    missing: list[str]
    reindexed: bool
    notices: list[str]


class OutcomeOut(BaseModel):
    """Status first, then the details (every curated vault tool answers so)."""

    status: str = Field(description="ok, written, unchanged, denied, not_found, locked, stale, invalid, refused, "
                        "conflict")
    message: str
    path: str = ""
    version: str | None = None
    data: dict = Field(default_factory=dict)  # the operation's result (docs/mcp.md); no description: 5 tools repeat it


# --- converters ----------------------------------------------------------------------------------


def outcome_out(outcome, writer=None) -> OutcomeOut:
    """A write service outcome (or a curation result dict) as the one tool output shape; with the
    `writer` that wrote, its per-stage times in milliseconds (`data.timings`, for the bench)."""
    return OutcomeOut(**outcome_dict(outcome, writer))
