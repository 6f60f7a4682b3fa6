"""Recall: one question answered from the notes, the lessons and the memory graph together.

The stages, in order: the notes search pipeline (App.search, so recall ranks exactly as
search_notes does), the split of its hits into lessons (files named lessons.md: one item per
lesson, a section each) and other notes (one item per note, with its other matched sections, as
search_notes gives them), and a keyword search of the memory graph. Every item carries the
absolute path of its source and a shorter display path, so an agent can cite it and a person can
click it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from vault_index.config import project_dir
from vault_index.services.graph import graph as memory
from vault_index.services.search.per_note import hits_per_note, section_dict
from vault_index.services.search.search import MAX_LIMIT, Filters
from vault_index.services.search.subqueries import SubQueries

LESSONS_FILE = "lessons.md"
MAX_RECALL_LIMIT = 20
# Trigger: lessons share the ranking with every note, a lessons.md chunk is short, and a long note
# matching in many sections folds into one item. Why: with only `limit` chunks fetched, a vault of
# long notes pushes every lesson out, and one note's sections would leave the notes list short.
# Outcome: fetch this deep (the pipeline reads every candidate's row anyway; only the snippets
# are extra), then fold the notes per note and cap each list at `limit`.
RECALL_DEPTH = MAX_LIMIT


def display_path(path: str, root: Path | None = None) -> str:
    """`path` relative to the project folder when it lies inside it, else unchanged."""
    root = root or project_dir()
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path


def recall(app, memory_file: str | Path, query: str, limit: int = 5, *, filters: Filters | None = None,
           graph_filter: Callable[[list[dict]], list[dict]] | None = None,
           subqueries: SubQueries | None = None) -> dict:
    """{"query", "confidence", "relevant", "notes", "lessons", "graph", "notices"}; each list holds at
    most `limit` items; `confidence` is the notes search's (services/search/confidence.py).

    A memory file that cannot be read costs the graph part only: the notes still answer and
    `notices` says what to fix. `filters` carries the caller's read grants into the search
    pipeline (applied before its limit); `graph_filter` drops the entities the caller may not read
    before the graph list is cut to `limit`. `subqueries` (the agent's extra phrasings) reach the
    notes search only; the graph is searched with the question.
    """
    if not 1 <= limit <= MAX_RECALL_LIMIT:
        raise memory.GraphInputError(f"limit must be from 1 to {MAX_RECALL_LIMIT}")
    root = project_dir()
    # chunks, so that each lesson is its own item; the other notes are folded per note below
    result = app.search(query, limit=RECALL_DEPTH, filters=filters, subqueries=subqueries, per_note=False)
    lesson_hits = [hit for hit in result.hits if Path(hit.path).name == LESSONS_FILE][:limit]
    note_hits = hits_per_note(hit for hit in result.hits if Path(hit.path).name != LESSONS_FILE)[:limit]
    lessons = [_item(hit, root) for hit in lesson_hits]
    notes = [{**_item(hit, root), "more": hit.more, "also": [section_dict(s) for s in hit.also]} for hit in note_hits]
    notices = list(result.notices)
    try:
        entities = memory.search(memory_file, query, memory.MAX_SEARCH_LIMIT if graph_filter else limit,
                                 app.fact_visible())
    except memory.GraphFileError as exc:
        entities = []
        notices.append(f"memory graph skipped: {exc}")
    if graph_filter is not None:
        entities = graph_filter(entities)[:limit]
    for entity in entities:
        entity["display"] = display_path(entity["source"], root)
    return {"query": result.query, "confidence": result.confidence, "relevant": result.relevant,
            "notes": notes, "lessons": lessons, "graph": entities, "notices": notices}


def _item(hit, root: Path) -> dict:
    return {"path": hit.path, "display": display_path(hit.path, root), "heading": hit.heading,
            "line_start": hit.line_start, "line_end": hit.line_end, "score": hit.score, "snippet": hit.snippet}
