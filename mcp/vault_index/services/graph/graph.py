"""The memory graph: entities, observations and relations in one JSONL file, each naming its source.

One self-describing fact per line, so the file reads well and diffs well in git:

    {"type":"entity","name":...,"entityType":...,"source":"/abs/file.md","created":"...Z"}
    {"type":"observation","entity":...,"text":...,"source":...,"created":...}
    {"type":"relation","from":...,"to":...,"relationType":...,"source":...,"created":...}

The file is not a note, so it has no frontmatter schema and often lies outside any vault, but it
is written with the same primitives as every curated write (`write.update_store`: a kernel lock,
a regular file opened without following, an atomic replace): a write reads the file under its
lock, checks every new fact, then appends them to the old bytes. Readers see the old file or the
new one, and a refused write changes nothing. Reading never writes. A missing file is an empty graph.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path

from vault_index.errors import UnsafePathError, WriteBusyError
from vault_index.services.graph.graph_rules import (  # noqa: F401 - callers use these as graph.X
    MAX_NAME_CHARS,
    MAX_SEARCH_LIMIT,
    MAX_SOURCE_CHARS,
    MAX_TEXT_CHARS,
    MAX_TYPE_CHARS,
    DanglingRelationError,
    GraphBusyError,
    GraphError,
    GraphFileError,
    GraphInputError,
    SourceMissingError,
    SourceOutsideError,
    build_fact,
    hidden_below_roots,
    name_problem,
)
from vault_index.services.search.query import query_terms
from vault_index.services.writes.write import update_store

LOCK_WAIT_S = 10.0  # a write holds the lock for milliseconds; ten seconds means a stuck writer

# Search weights per query term. A term in the name says most about what the entity is; an
# observation counts once per entity however many of its observations repeat the term, so a
# chatty entity does not outrank a well-named one.
NAME_WEIGHT = 3.0
TYPE_WEIGHT = 1.5
OBSERVATION_WEIGHT = 1.0
RELATION_WEIGHT = 0.5  # the relation's type or the name at its other end
EXACT_NAME_BONUS = 5.0  # the whole query is the entity's name
PREFIX_MIN_CHARS = 4  # "sensor" finds "sensors"; shorter terms must match whole words

FIELDS = {
    "entity": ("name", "entityType"),
    "observation": ("entity", "text"),
    "relation": ("from", "to", "relationType"),
}
_WORD = re.compile(r"[\w][\w'\-./:]*", re.UNICODE)


class Graph:
    """The parsed file: entities by case-folded name, and each entity's observations and relations."""

    def __init__(self) -> None:
        self.entities: dict[str, dict] = {}
        self.facts: list[dict] = []
        self._keys: set[tuple] = set()
        self._observations: dict[str, list[dict]] = {}
        self._relations: dict[str, list[dict]] = {}

    def entity(self, name: str) -> dict | None:
        return self.entities.get(name.strip().casefold())

    def has(self, fact: dict) -> bool:
        return _key(fact) in self._keys

    def add(self, fact: dict) -> None:
        self._keys.add(_key(fact))
        self.facts.append(fact)
        if fact["type"] == "entity":
            self.entities.setdefault(fact["name"].casefold(), fact)
        elif fact["type"] == "observation":
            self._observations.setdefault(fact["entity"].casefold(), []).append(fact)
        else:
            for end in {fact["from"].casefold(), fact["to"].casefold()}:
                self._relations.setdefault(end, []).append(fact)

    def view(self, entity: dict) -> dict:
        """An entity with its observations and the relations at either end, each with its source."""
        folded = entity["name"].casefold()
        return {
            "name": entity["name"], "entityType": entity["entityType"], "source": entity["source"],
            "observations": [{"text": o["text"], "source": o["source"]} for o in self._observations.get(folded, [])],
            "relations": [{k: r[k] for k in ("from", "to", "relationType", "source")}
                          for r in self._relations.get(folded, [])],
        }


def _key(fact: dict) -> tuple:
    """What makes two facts the same fact; source and time do not."""
    if fact["type"] == "entity":
        return ("entity", fact["name"].casefold())
    if fact["type"] == "observation":
        return ("observation", fact["entity"].casefold(), fact["text"])
    return ("relation", fact["from"].casefold(), fact["to"].casefold(), fact["relationType"].casefold())


# --- reading ----------------------------------------------------------------------------------


def _read(path: Path) -> str:
    if not path.exists():
        return ""
    if not path.is_file():
        raise GraphFileError(f"memory file {path} is not a regular file; point --memory-file at a .jsonl file")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GraphFileError(f"memory file {path} is not UTF-8 text (byte {exc.start}); restore it from git") from exc


def _lines(text: str) -> Iterable[tuple[int, str]]:
    # split("\n"), not splitlines(): U+2028 inside a JSON string is text, not a line break
    for number, raw in enumerate(text.split("\n"), start=1):
        if raw.strip():
            yield number, raw.rstrip("\r")


def _parse_line(raw: str) -> tuple[dict | None, str | None]:
    """(fact, None) or (None, what is wrong with the line)."""
    try:
        fact = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at column {exc.colno})"
    except RecursionError:
        # Trigger: a line of thousands of nested [ or {. Why: json recurses per level and the
        # RecursionError ended the server's start-up and `graph check` itself. Outcome: that
        # line is a problem like any other bad line.
        return None, "not readable: nested too deeply (a fact is one flat JSON object)"
    if not isinstance(fact, dict):
        return None, "not a JSON object"
    kind = fact.get("type")
    if kind not in FIELDS:
        return None, f"unknown type {kind!r} (expected entity, observation or relation)"
    for field in (*FIELDS[kind], "source"):
        if not isinstance(fact.get(field), str) or not fact[field].strip():
            return None, f"{kind} without a '{field}'"
    return fact, None


def _parse(text: str, path: Path) -> Graph:
    graph = Graph()
    for number, raw in _lines(text):
        fact, problem = _parse_line(raw)
        if problem:
            raise GraphFileError(
                f"{path}:{number}: {problem}; fix or delete that line (`vault-index graph check` lists every problem)"
            )
        graph.add(fact)
    return graph


def load(path: str | Path, visible: Callable[[str], bool] | None = None) -> Graph:
    """The graph in `path` (empty when the file does not exist). Never writes. `visible(source)`:
    keep only the facts whose source note the caller's workspace sees (ADR 0020)."""
    path = Path(path).expanduser()
    return _seen(_parse(_read(path), path), visible)


def _seen(graph: Graph, visible: Callable[[str], bool] | None) -> Graph:
    if visible is None:
        return graph
    kept = Graph()
    for fact in graph.facts:
        if visible(fact["source"]):
            kept.add(fact)
    return kept


# --- writing ----------------------------------------------------------------------------------


def _label(fact: dict) -> str:
    if fact["type"] == "entity":
        return fact["name"]
    if fact["type"] == "observation":
        return f"{fact['entity']}: {fact['text'][:80]}"
    return f"{fact['from']} -[{fact['relationType']}]-> {fact['to']}"


def _write(path: str | Path, items: list[tuple[str, str, dict]], base: str | Path | None,
           roots: Sequence[str | Path] | None = None, visible: Callable[[str], bool] | None = None,
           admit: Callable[[Path], Path] | None = None) -> dict:
    """Check every (where, kind, item), then append the new facts in one atomic replace.

    `visible(source)`: the facts the caller's workspace sees; names are looked up and duplicates
    found among those only, so an answer never tells what a hidden fact says (issue 36). `admit`:
    the one boundary, applied to each new fact's source (graph_rules.check_source)."""
    path = Path(path).expanduser()
    base = Path(base).expanduser() if base else Path.cwd()
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    added: list[dict] = []
    skipped: list[dict] = []

    def change(text: str) -> str:
        added.clear()
        skipped.clear()
        graph = _seen(_parse(text, path), visible)
        # entities first, so observations and relations in the same call can name them
        for where, kind, item in sorted(items, key=lambda entry: entry[1] != "entity"):
            fact = build_fact(graph, kind, item, where, base, roots, stamp, admit)
            if graph.has(fact):
                skipped.append({"kind": kind, "fact": _label(fact), "reason": "already in the graph"})
                continue
            graph.add(fact)
            added.append(fact)
        if not added:
            return text
        lines = "".join(json.dumps(f, ensure_ascii=False, separators=(",", ":")) + "\n" for f in added)
        return text + ("\n" if text and not text.endswith("\n") else "") + lines

    try:
        update_store(path, change, wait=LOCK_WAIT_S)
    except WriteBusyError as exc:
        raise GraphBusyError(f"memory file {path} is busy: {exc}") from exc
    except UnsafePathError as exc:
        raise GraphFileError(f"memory file {path}: {exc}; point --memory-file at a regular .jsonl file") from exc
    except UnicodeDecodeError as exc:
        raise GraphFileError(f"memory file {path} is not UTF-8 text (byte {exc.start}); restore it from git") from exc
    counts = {kind: sum(1 for f in added if f["type"] == kind) for kind in FIELDS}
    return {"memory_file": str(path), "added": counts, "skipped": skipped}


def create(path: str | Path, entities: Iterable[dict] = (), observations: Iterable[dict] = (),
           relations: Iterable[dict] = (), *, base: str | Path | None = None,
           roots: Sequence[str | Path] | None = None, visible: Callable[[str], bool] | None = None,
           admit: Callable[[Path], Path] | None = None) -> dict:
    """Add facts to the graph in `path`; all of them or, on any bad fact, none.

    Items use the file's field names: entities {name, entityType, source}, observations
    {entity, text, source}, relations {from, to, relationType, source}. A relative source is taken
    against `base` (default the working folder); with `roots` it must lie inside one of them, and
    in no hidden or secrets folder either way (graph_rules.check_source). Facts already present
    (same entity name, same observation text, same relation; case-insensitive names) are skipped.
    `visible` and `admit`: what the caller's workspace sees (see `_write`).
    Returns {"memory_file", "added": {"entity": n, "observation": n, "relation": n}, "skipped": [...]}.
    """
    items = [(f"entities[{i}]", "entity", e) for i, e in enumerate(entities)]
    items += [(f"observations[{i}]", "observation", o) for i, o in enumerate(observations)]
    items += [(f"relations[{i}]", "relation", r) for i, r in enumerate(relations)]
    return _write(path, items, base, roots, visible, admit)


def import_reference(path: str | Path, jsonl_path: str | Path, source: str | Path | None = None) -> dict:
    """Import the reference memory server's JSONL (entities with inline observations, relations).

    Every imported fact gets `source` (default: the imported file itself). A bad line stops the
    import before anything is written; the error names the file and line.
    """
    reference = Path(jsonl_path).expanduser().resolve()
    if not reference.is_file():
        raise SourceMissingError(f"{jsonl_path} is not a file; give the path of the memory server's .jsonl")
    try:
        text = reference.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise GraphFileError(f"{reference} is not UTF-8 text; is it really a memory .jsonl file?") from exc
    source = str(source or reference)
    items: list[tuple[str, str, dict]] = []
    for number, raw in _lines(text):
        where = f"{reference}:{number}"
        try:
            item = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise GraphFileError(f"{where}: not valid JSON ({exc.msg}); fix that line and import again") from exc
        except RecursionError:  # thousands of nested [ or { (as in _parse_line)
            raise GraphFileError(f"{where}: nested too deeply to read; an entity or relation is one flat "
                                 "JSON object") from None
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "entity":
            notes = item.get("observations", [])
            if not isinstance(notes, list):
                raise GraphFileError(f"{where}: 'observations' must be a list of strings")
            items.append((where, "entity", {**item, "source": source}))
            items += [(where, "observation", {"entity": item.get("name"), "text": t, "source": source})
                      for t in notes]
        elif kind == "relation":
            items.append((where, "relation", {**item, "source": source}))
        else:
            raise GraphFileError(f"{where}: expected an object with type 'entity' or 'relation'")
    return _write(path, items, None)


# --- searching --------------------------------------------------------------------------------


def _words(text: str) -> set[str]:
    words = set()
    for raw in _WORD.findall(text.lower()):
        words.add(raw.strip("'-./:"))
        words.update(re.findall(r"\w+", raw))
    words.discard("")
    return words


def _matches(term: str, words: set[str]) -> bool:
    return term in words or (len(term) >= PREFIX_MIN_CHARS and any(w.startswith(term) for w in words))


def score_entity(graph: Graph, entity: dict, terms: list[str], query: str) -> float:
    """Sum of field weights per matched term, times the share of terms matched (see the weights)."""
    view = graph.view(entity)
    fields = [
        (NAME_WEIGHT, [_words(entity["name"])]),
        (TYPE_WEIGHT, [_words(entity["entityType"])]),
        (OBSERVATION_WEIGHT, [_words(o["text"]) for o in view["observations"]]),
        (RELATION_WEIGHT, [_words(f"{r['relationType']} {r['from']} {r['to']}") for r in view["relations"]]),
    ]
    total, matched = 0.0, 0
    for term in terms:
        gained = sum(weight for weight, sets in fields if any(_matches(term, words) for words in sets))
        total += gained
        matched += gained > 0
    if not matched:
        return 0.0
    score = total * matched / len(terms)
    if query.strip().casefold() == entity["name"].casefold():
        score += EXACT_NAME_BONUS
    return round(score, 4)


def search(path: str | Path, query: str, limit: int = 10,
           visible: Callable[[str], bool] | None = None) -> list[dict]:
    """Entities ranked by keyword score, each with its observations, relations and sources."""
    if not query or not query.strip():
        raise GraphInputError("the query is empty; give a few words to look for")
    if not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise GraphInputError(f"limit must be from 1 to {MAX_SEARCH_LIMIT}")
    graph = load(path, visible)
    terms = query_terms(query)
    if not terms:
        return []
    scored = [(score_entity(graph, e, terms, query), e) for e in graph.entities.values()]
    scored = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]["name"].casefold()))
    return [{**graph.view(entity), "score": score} for score, entity in scored[:limit]]


def open_entities(path: str | Path, names: Iterable[str], visible: Callable[[str], bool] | None = None) -> dict:
    """The named entities (case-insensitive) in full; names the graph lacks come back in `missing`."""
    graph = load(path, visible)
    found, missing = [], []
    for name in names:
        entity = graph.entity(name) if isinstance(name, str) else None
        if entity is None:
            missing.append(name)
        elif all(entity["name"] != f["name"] for f in found):
            found.append(graph.view(entity))
    return {"entities": found, "missing": missing}


# --- checking ---------------------------------------------------------------------------------


MISSING_SOURCE = "is not an existing file"


def check_graph(path: str | Path, roots: Sequence[str | Path] = ()) -> list[str]:
    """Every problem in the memory file, one line each; empty when it is fine or does not exist.

    `roots` (the project folder, the registered sources): a source below one of them in a hidden
    or secrets folder is a problem; sources elsewhere are only checked to exist."""
    return inspect_graph(path, roots)[1]


def inspect_graph(path: str | Path, roots: Sequence[str | Path] = ()) -> tuple[int, list[str]]:
    """(facts read, problems) in one pass: check_graph, plus the count the invariants report.

    A problem about a vanished source contains MISSING_SOURCE, so callers can tell it apart."""
    path = Path(path).expanduser()
    try:
        text = _read(path)
    except GraphFileError as exc:
        return 0, [str(exc)]
    problems, facts, names = [], [], set()
    for number, raw in _lines(text):
        fact, problem = _parse_line(raw)
        where = f"{path}:{number}"
        if problem:
            problems.append(f"{where}: {problem}")
            continue
        source = fact["source"]
        if not Path(source).is_absolute() or not Path(source).is_file():
            problems.append(f"{where}: source {source} {MISSING_SOURCE}; fix the path or remove the fact")
        elif hidden_below_roots(Path(source), roots):
            problems.append(f"{where}: source {source} lies in a hidden or secrets folder; "
                            "point the fact at a note outside it or remove the fact")
        if "created" not in fact:
            problems.append(f"{where}: {fact['type']} without a 'created' time")
        if fact["type"] == "entity":
            if fact["name"].casefold() in names:
                problems.append(f"{where}: entity {fact['name']!r} appears twice (names are case-insensitive)")
            names.add(fact["name"].casefold())
        facts.append((where, fact))
    for where, fact in facts:
        ends = {"observation": ("entity",), "relation": ("from", "to")}.get(fact["type"], ())
        for end in ends:
            if fact[end].casefold() not in names:
                problems.append(f"{where}: {fact['type']} {_label(fact)!r} names an unknown entity {fact[end]!r}")
    return len(facts), problems
