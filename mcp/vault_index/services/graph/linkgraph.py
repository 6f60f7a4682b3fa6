"""Queries over the notes' link graph: backlinks, outgoing links, neighbours and related notes.

One function, `note_links`, answers the CLI commands (`backlinks`, `links`, `neighbors`,
`related`) and the MCP tool `note_links` alike. The graph lives in the index (engine/parsing/link_index.py),
so a note must be inside a registered source; `related` also runs a search, through the same
pipeline as `search_notes`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from vault_index.engine.parsing.links import EDGE_KINDS
from vault_index.errors import NotFoundError, UsageError

DIRECTIONS = ("backlinks", "links", "neighbors", "related")
MAX_RESULTS = 100
# related: a note's meaning neighbours and its link neighbours, fused by reciprocal rank. RELATED_K
# is the usual RRF constant; GRAPH_WEIGHT 1.0 gives a linked note as much say as a similar one.
RELATED_K = 60
GRAPH_WEIGHT = 1.0
RELATED_SEARCH_LIMIT = 30


def _kinds(types: Iterable[str] | None) -> list[str]:
    kinds = [t for t in (types or ()) if t]
    unknown = sorted(set(kinds) - set(EDGE_KINDS))
    if unknown:
        raise UsageError(f"unknown link type {', '.join(unknown)}; use any of: {', '.join(EDGE_KINDS)}")
    return kinds


def note_links(app, direction: str, path: str | None = None, *, query: str | None = None, depth: int = 1,
               types: Iterable[str] | None = None, limit: int = 20,
               can_read: Callable[[Path], bool] = lambda _p: True) -> dict:
    """{direction, note, results}: what links to, from or near a note (`related`: or a query).

    `can_read` drops paths the caller may not read (the MCP surface passes its scope's check).
    """
    if direction not in DIRECTIONS:
        raise UsageError(f"direction must be one of {', '.join(DIRECTIONS)}")
    limit = max(1, min(int(limit), MAX_RESULTS))
    kinds = _kinds(types)
    sees = app.sees_path()  # links resolve inside a source, so a nested hidden source's notes can be linked
    if sees is not None:
        granted = can_read

        def can_read(path: Path) -> bool:
            return granted(path) and sees(str(path))
    try:  # the one boundary (services/boundary.py): a hidden note is answered as a missing one
        note = str(app.resolve(path, served=True)) if path else None
    except NotFoundError:
        raise NotFoundError(f"{path} is not a note in the index (check the path; a new note: "
                            "`vault-index index`)") from None
    if note is None and (direction != "related" or not query):
        raise UsageError("name a note (path); `related` also takes a query instead")
    store = app.store
    if note is not None and store.file_record(note) is None:
        # Trigger: a typo or a note never indexed. Why: an empty list and exit 0 read as "no
        # links". Outcome: the not-found error (CLI exit 3, an MCP tool error) that names the path.
        raise NotFoundError(f"{path} is not a note in the index (check the path; a new note: `vault-index index`)")
    if direction == "backlinks":
        rows = store.links("backlinks", note, kinds=kinds)
        results = [r for r in rows if can_read(Path(r["path"]))]
    elif direction == "links":
        rows = store.links("outgoing", note, keep=lambda p: can_read(Path(p)))  # hidden reads as missing
        results = [r for r in rows if not kinds or r["kind"] in kinds]
    elif direction == "neighbors":
        results = store.links("neighbors", note, depth=depth, kinds=kinds, keep=lambda p: can_read(Path(p)))
    else:
        results = related(app, note, query, kinds, limit, can_read)
    return {"direction": direction, "note": note, "query": query, "results": results[:limit]}


def related(app, note: str | None, query: str | None, kinds: list[str], limit: int,
            can_read: Callable[[Path], bool]) -> list[dict]:
    """Notes near `note` (or `query`) in meaning and in the link graph, best first.

    Meaning: a search for the note's title (or the query). Graph: the note's neighbours up to
    depth 2 (for a query: the neighbours of its best hits). Each list gives 1/(RELATED_K + rank),
    the graph's scaled by GRAPH_WEIGHT; `why` says which lists a note came from.
    """
    text = query
    if note and not text:
        record = app.store.file_record(note) or {}
        text = record.get("title") or Path(note).stem.replace("-", " ")
    hits = app.search(text, limit=RELATED_SEARCH_LIMIT).hits
    meaning: list[str] = [p for p in dict.fromkeys(h.path for h in hits) if p != note and can_read(Path(p))]
    seeds = [note] if note else meaning[:3]
    graph: list[str] = []
    for seed in seeds:
        for row in app.store.links("neighbors", seed, depth=2, kinds=kinds, keep=lambda p: can_read(Path(p))):
            if row["path"] != note and row["path"] not in graph:
                graph.append(row["path"])
    scores: dict[str, float] = {}
    why: dict[str, list[str]] = {}
    for rank, path in enumerate(meaning, start=1):
        scores[path] = scores.get(path, 0.0) + 1 / (RELATED_K + rank)
        why.setdefault(path, []).append(f"meaning #{rank}")
    for rank, path in enumerate(graph, start=1):
        scores[path] = scores.get(path, 0.0) + GRAPH_WEIGHT / (RELATED_K + rank)
        why.setdefault(path, []).append(f"links #{rank}")
    ordered = sorted(scores, key=lambda p: (-scores[p], p))
    return [{"path": p, "score": round(scores[p], 5), "why": why[p]} for p in ordered if can_read(Path(p))][:limit]
