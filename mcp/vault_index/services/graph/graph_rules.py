"""What the memory graph accepts: its errors, the limits of each field, and where a source may lie.

Every fact is built and checked here (`build_fact`) before services/graph/graph.py writes it, and decision records
check their title here before they are written, so a record is never on disk with a name the
graph would refuse.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from vault_index.engine.files.sources import is_skipped_part  # no pathspec at import: fine on a bare python3
from vault_index.errors import AmbiguousPathError, VaultIndexError
from vault_index.services.vault.text import unsafe_char

MAX_NAME_CHARS = 200  # entity names; also the ends of a relation
MAX_TYPE_CHARS = 100  # entityType and relationType
MAX_TEXT_CHARS = 2000  # one observation: a fact, not a document
MAX_SOURCE_CHARS = 4096
MAX_SEARCH_LIMIT = 50  # graph search results a call may ask for
# An observation may span lines; stored as JSON, its "\n" and U+2028 cannot break the file's line.
TEXT_KEEPS = "\n\t\u2028\u2029"


class GraphError(VaultIndexError):
    """A memory graph operation failed; the message says what to change."""


class GraphInputError(GraphError):
    """A fact handed to the graph is malformed (empty, too long, unknown entity)."""

    exit_code = 2


class SourceMissingError(GraphInputError):
    """A fact's source is not an existing regular file."""

    exit_code = 3


class SourceOutsideError(GraphInputError):
    """A fact's source lies outside the allowed folders, or in a hidden or secrets folder."""

    exit_code = 4


class DanglingRelationError(GraphInputError):
    """A relation names an entity the graph does not have."""


class GraphFileError(GraphError):
    """The memory file (or a file to import) cannot be read as the graph format."""


class GraphBusyError(GraphError):
    """Another writer held the memory file's lock for too long."""

    exit_code = 6


def text_problem(value: str, limit: int, multiline: bool = False) -> str | None:
    """What is wrong with a stripped field value, or None; the caller names the field."""
    if not value:
        return "is missing or empty"
    if len(value) > limit:
        return f"has {len(value)} characters; the limit is {limit}, shorten it"
    if bad := unsafe_char(value, TEXT_KEEPS if multiline else ""):
        return f"contains a {'' if multiline else 'line break or '}control character ({bad}); remove it"
    return None


def check_text(item: dict, field: str, limit: int, where: str, multiline: bool = False) -> str:
    value = item.get(field)
    value = value.strip() if isinstance(value, str) else ""
    if problem := text_problem(value, limit, multiline):
        raise GraphInputError(f"{where}: '{field}' {problem}")
    return value


def build_fact(graph, kind: str, item: dict, where: str, base: Path, roots: Sequence[str | Path] | None,
               stamp: str, admit: Callable[[Path], Path] | None = None) -> dict:
    """One checked fact of `kind` from a caller's item; `graph` (a graph.Graph) resolves the names."""
    if not isinstance(item, dict):
        raise GraphInputError(f"{where}: expected an object")
    if kind == "entity":
        fact = {"type": "entity", "name": check_text(item, "name", MAX_NAME_CHARS, where),
                "entityType": check_text(item, "entityType", MAX_TYPE_CHARS, where)}
    elif kind == "observation":
        fact = {"type": "observation",
                "entity": _entity(graph, check_text(item, "entity", MAX_NAME_CHARS, where), where, "entity"),
                "text": check_text(item, "text", MAX_TEXT_CHARS, where, multiline=True)}
    else:
        fact = {"type": "relation",
                "from": _entity(graph, check_text(item, "from", MAX_NAME_CHARS, where), where, "from"),
                "to": _entity(graph, check_text(item, "to", MAX_NAME_CHARS, where), where, "to"),
                "relationType": check_text(item, "relationType", MAX_TYPE_CHARS, where)}
    fact["source"] = check_source(item, where, base, roots, admit)
    fact["created"] = stamp
    return fact


def _entity(graph, name: str, where: str, role: str) -> str:
    """The stored spelling of an existing entity's name."""
    found = graph.entity(name)
    if found is None:
        error = DanglingRelationError if role != "entity" else GraphInputError
        raise error(f"{where}: no entity named {name!r} (the '{role}'); create that entity first (or in the same call)")
    return found["name"]


def name_problem(name: str) -> str | None:
    """Why the graph would refuse `name` as an entity name, or None."""
    return text_problem(name.strip(), MAX_NAME_CHARS)


def hidden_part(path: Path, root: Path | None = None) -> bool:
    """True when `path`, below `root` (or anywhere, without one), passes a hidden or secrets folder."""
    parts = path.relative_to(root).parts if root else path.parts[1:]
    return any(is_skipped_part(part) for part in parts)


def fact_roots(app, sources: list[dict]) -> list[Path]:
    """Where a fact may name its source, for graph_create and `graph check` alike: the project folder,
    the content folder and the registered sources `sources` (App.sources), never another agent's
    memory (.serena/memories: taken, then failed by `graph check` as hidden; walkthroughs J and K);
    a vault sees only itself (ADR 0020)."""
    from vault_index.config import content_dir, project_dir

    if app.workspace.kind == "vault":
        return [app.workspace.root]
    homes = dict.fromkeys([project_dir(), content_dir()])  # the content folder is outside a vault-index clone
    return [*homes, *(Path(source["path"]) for source in sources if not source.get("kind"))]


def check_source(item: dict, where: str, base: Path, roots: Sequence[str | Path] | None,
                 admit: Callable[[Path], Path] | None = None) -> str:
    """The real path of a fact's source, which must be an existing file in an allowed place.

    With `roots`, the file must lie inside one of them (the agent's tools pass the project
    folder and the registered sources) and no folder below that root may be hidden or named
    secrets; without, anywhere (a person at a terminal), with the same rule below `base` when the
    file lies there. Only folders below a root count: a project that itself sits in a dot folder
    (a worktree under .claude/, ~/.local/src) is fine.
    """
    raw = check_text(item, "source", MAX_SOURCE_CHARS, where)
    path = Path(raw).expanduser()
    if admit is not None and not path.is_absolute():
        # any form the other tools take (relative to a source, a source's name): walkthrough I's
        # `notes/backups.md` and `adr/0004-....md` were looked for in the project folder only
        try:
            path = admit(path)
        except AmbiguousPathError:
            raise
        except VaultIndexError:
            pass  # not found as given anywhere: the project-relative path, refused below in its words
    path = Path(os.path.realpath(path if path.is_absolute() else base / path))
    # Trigger: a caller that may only name files in the project asks about one elsewhere.
    # Why: "is not an existing file" for /etc/shadow would tell whether it exists.
    # Outcome: where a source lies is checked first, from the path alone, in the same words.
    if roots is None:
        home = _real(base)
        hidden = path.is_relative_to(home) and hidden_part(path, home)
    else:
        inside = _roots_holding(path, roots)
        if not inside:
            raise SourceOutsideError(f"{where}: source {raw!r} is not inside the project folder or a registered "
                                     "source; name a note there (list_sources shows the sources)")
        hidden = all(hidden_part(path, root) for root in inside)
    if hidden:
        raise SourceOutsideError(f"{where}: source {raw!r} lies in a hidden or secrets folder; "
                                 "name a note outside it")
    seen = True
    if admit is not None:
        # the one boundary (services/boundary.py): a file the caller's workspace does not see (another
        # project's source, another vault) is answered as a missing one, never confirmed
        try:
            path = admit(path)
        except VaultIndexError:
            seen = False
    try:
        exists = seen and path.is_file()
    except OSError:  # e.g. a name longer than the file system allows
        exists = False
    if not exists:
        raise SourceMissingError(
            f"{where}: source {raw!r} is not an existing file ({path}); every fact must name the file "
            "it comes from - write or pick that file first"
        )
    return path.as_posix()


def hidden_below_roots(path: Path, roots: Sequence[str | Path]) -> bool:
    """True when `path` lies in some root and, below every root holding it, in a hidden or secrets folder."""
    inside = _roots_holding(path, roots)
    return bool(inside) and all(hidden_part(path, root) for root in inside)


def _roots_holding(path: Path, roots: Sequence[str | Path]) -> list[Path]:
    return [root for root in map(_real, roots) if path == root or path.is_relative_to(root)]


def _real(root: str | Path) -> Path:
    return Path(os.path.realpath(Path(root).expanduser()))
