"""The one boundary between the paths an agent names and the files: resolved once, checked once.

The rule, in two sentences: every path an agent names or a tool reaches (a read, a write, an edit,
a move and the notes whose links it rewrites, index_paths, get_note, note_links, a graph fact's
source, a resource) is resolved once to its real path, with symlinks and `..` followed and letter
case and Unicode spelled as the file system stores them, and it is used only when this workspace
sees that real path (ADR 0020's rule: the deepest source holding it is one the workspace sees, and
no other init vault holds it). A path inside a source or vault the workspace cannot see is refused
with the very words a missing path gets, so no answer tells a hidden file from an absent one
(docs/adr/0034-one-boundary.md).

`resolve` is that one function; `seen` is its check, for the places that filter many files at
once (the notes a move may rewrite). A path outside every folder the workspace sees is an
OutsideSourcesError, decided from where it lies, never from whether it exists.
"""

from __future__ import annotations

import os
import sys
import unicodedata
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

from vault_index.engine.files.sources import is_note_path, real_path
from vault_index.errors import AmbiguousPathError, NotFoundError, OutsideSourcesError, VaultIndexError
from vault_index.services import workspace as workspaces


def unseen(path: str | os.PathLike) -> str:
    """The one answer for a path that is missing, or that this workspace does not see."""
    return f"{os.fspath(path)} is not a file in the index sources"


def outside(path: str | os.PathLike) -> str:
    return f"{os.fspath(path)} is outside every registered source; `vault-index sources` lists them"


def real(path: str | os.PathLike) -> Path:
    """`path`'s real path: symlinks and `..` followed (os.path.realpath), then, where the file system
    folds letter case or Unicode (macOS, Windows, a case-insensitive mount), each existing part
    spelled as its folder stores it, so `Notes/B/DOCS` and `notes/b/docs` are one place."""
    found = Path(real_path(os.path.expanduser(os.fspath(path))))
    return _as_stored(found) if _folds(found) else found


def seen(app, base: str | Path | Sequence[str | Path] | None = None) -> Callable[[str | Path], bool]:
    """Whether this workspace sees a real path (as `real` spells it): it lies in a source the workspace
    sees or in `base` (the served vault or project folder, a graph fact's folders), the deepest
    source holding it is one the workspace sees, and no init vault but the workspace's own holds it.

    `app` is a services.app.App (not imported: the App calls this module)."""
    bases = [] if base is None else [base] if isinstance(base, (str, os.PathLike)) else list(base)
    served = [str(real(b)) for b in bases]
    roots = [str(real(r)) for r in app.roots()] + served
    # the store keys sources by the path they were added with: spelled as `real` spells paths here
    scopes = {str(real(p)): s for p, s in app.store.source_scopes().items()}
    rule = workspaces.path_rule(app.workspace, scopes)
    deepest_first = sorted(scopes, key=len, reverse=True)
    ws = app.workspace
    own = {real(ws.root)} if ws.kind == workspaces.VAULT and ws.root is not None else set()
    own |= {real(v) for v in map(workspaces.vault_root, map(real, bases)) if v is not None}

    def _served(text: str) -> bool:
        """A note of the folder being served (`base`) is seen by its writer, unless a source nested
        inside that folder holds it (another project's docs, a vault): only such a source hides it.
        Trigger: a writer given a vault its App's workspace does not list saw none of its notes."""
        holder = next((s for s in deepest_first if _holds(s, text)), None)
        return any(_holds(b, text) and (holder is None or not (holder != b and _holds(b, holder)))
                   for b in served)

    @lru_cache(maxsize=4096)
    def vault_of(folder: str) -> Path | None:  # a move checks every note of a folder: one look per folder
        found = workspaces.vault_root(Path(folder))
        return None if found is None else real(found)

    def check(path: str | Path) -> bool:
        text = os.fspath(path)
        if not any(_holds(root, text) for root in roots):
            return False
        if rule is not None and not rule(text) and not _served(text):
            return False
        vault = Path(text) if os.path.isfile(os.path.join(text, *workspaces.VAULT_MARKER)) else \
            vault_of(os.path.dirname(text))
        return vault is None or vault in own

    return check


def resolve(app, path: str | os.PathLike, *, base: str | Path | Sequence[str | Path] | None = None,
            for_write: bool = False, served: bool = False) -> Path:
    """The real path of `path` when this workspace sees it; raises otherwise (see the module's rule).

    Every form a person or a tool gives is taken (issue 39 item 4): absolute; relative to `base` (the
    first, for several: the served vault or project folder), to the workspace's folder, or to a
    visible source (`x.md` inside it, or `docs/x.md` naming the source's own folder). `base` counts
    as a folder the workspace sees. `for_write`: the file need not exist yet (a new one goes under
    `base`; without one, in the first of the other places the workspace sees). `served`: only what
    indexing would take (a note file, no secrets or hidden part, not ignored).

    Raises OutsideSourcesError when the path lies outside every folder the workspace sees (decided
    from where it lies), NotFoundError with `unseen`'s words when it is missing or hidden, and
    AmbiguousPathError (listing them) when a relative path names different files this workspace sees.
    """
    text = os.fspath(path)
    if "\x00" in text:
        raise OutsideSourcesError("path contains a NUL byte")
    bases = [] if base is None else [base] if isinstance(base, (str, os.PathLike)) else list(base)
    roots = [real(r) for r in [*bases, *app.roots()]]
    visible = seen(app, bases)
    found: list[Path] = []
    first_placed, never = None, None
    housed = None  # a later place for a new file whose folder exists (`decisions/x.md` in docs/decisions)
    inside = False
    for index, candidate in enumerate(_candidates(app, text, bases, roots)):
        where = real(candidate)
        holders = [root for root in roots if where == root or (root.is_dir() and where.is_relative_to(root))]
        if not holders:
            continue
        inside = True
        if served and not any(root.is_file() or is_note_path(where, root) for root in holders):
            never = never or OutsideSourcesError(
                f"{text} is never served: it is hidden, under secrets/, excluded by "
                ".indexignore, or not a note (.md, .markdown, .mdx, .txt)")
            continue
        if not visible(where):
            continue
        if os.path.lexists(where):
            if where not in found:
                found.append(where)
        elif first_placed is None and (index == 0 or not bases):  # a new file goes where `base` says
            first_placed = where
        elif housed is None and where.parent.is_dir():
            housed = where
    if len(found) > 1:
        raise AmbiguousPathError(ambiguous(text, found))
    if found:
        return found[0]
    if for_write and first_placed is not None:
        # Trigger: `decisions/x.md` and `P/docs/decisions/x.md` were created under the project root, in
        # a new folder nothing indexes, beside the docs/decisions/ they named. Outcome: where base's
        # folder does not exist and another place's does, the new note goes there.
        if housed is not None and not first_placed.parent.is_dir():
            first_placed = housed
        return _new_note_place(app, text, first_placed)
    if never is not None:
        raise never
    if not inside:
        raise OutsideSourcesError(outside(text))
    raise NotFoundError(unseen(text))


def given(app, raw: str, base: str | Path | None) -> str:
    """A path to index as given: `raw` when it names something as typed (absolute, or relative to
    the working folder or `base`); else what `resolve` finds (`decisions/x.md` in the source docs/,
    `P/docs/x.md` as `sources` names it); else `raw`, for the indexer's own answer.
    Trigger: index_paths and `index` refused those forms ("not a file in the index sources")."""
    expanded = os.path.expanduser(raw)
    if os.path.isabs(expanded) or os.path.lexists(expanded) or (base is not None and (Path(base) / raw).exists()):
        return raw
    try:
        return str(resolve(app, raw, base=base))
    except VaultIndexError:
        return raw


def _new_note_place(app, text: str, placed: Path) -> Path:
    """Where a new note goes: one named by a bare file name in a project, under its notes/ (a folder
    the project indexes, where CLAUDE.md tells agents to write); else where `resolve` placed it.
    Trigger: `note_write create x.md` landed at the project root, outside every indexed folder."""
    folder = app.workspace.root
    if app.workspace.kind != workspaces.PROJECT or folder is None or len(Path(text).parts) != 1:
        return placed
    notes = real(folder) / "notes"
    if placed.parent != real(folder) or (os.path.lexists(notes) and not (notes.is_dir() and not notes.is_symlink())):
        return placed  # not the project root's, or notes/ is a file or a link: left as named
    return notes / placed.name


def source_folder(app, path: str | Path) -> Path | None:
    """The visible source folder holding the real path `path` (the one a note outside the served
    vault is read and written in: MCP's note tools and the CLI alike); None when none holds it."""
    return next((Path(r) for r in map(real, app.roots()) if Path(path).is_relative_to(r) and Path(r).is_dir()), None)


def prefix(app, text: str) -> str:
    """A search's path filter as an absolute prefix: an absolute one as given when this workspace
    sees the folder or note it names (a filter matches whole names); a relative one (`postmortems`,
    `docs/adr`, `research`) found as `resolve` finds a path (relative to the workspace's folder or a
    visible source), a folder or a note.

    Trigger: `search --path postmortems` and `path_prefix: "research"` matched no stored path (they
    are absolute) and answered nothing. Outcome: found, or a NotFoundError naming what was tried."""
    given = os.path.expanduser(text)
    roots = [real(r) for r in app.roots()]
    visible = seen(app)
    if os.path.isabs(given):
        # walkthrough H: `/tmp/nowhere` or another project's folder answered no hits and no word
        target = real(given)
        holds_source = any(_holds(str(target), str(root)) for root in roots)
        if (os.path.lexists(target) and visible(target)) or holds_source:
            return given  # a note or folder this workspace sees, or a folder holding its sources
        raise NotFoundError(f"the path filter {text!r} names no folder or note this workspace sees "
                            "(`vault-index sources` lists the sources)")
    tried = [real(c) for c in _candidates(app, text, [], roots)]
    found = list(dict.fromkeys(p for p in tried if os.path.lexists(p) and visible(p)))
    folder = app.workspace.root
    own = [p for p in found if folder is not None and _holds(str(real(folder)), str(p))]
    if len(found) > 1 and len(own) == 1:  # `docs` in a project is its own docs/, not ~/.../personal/docs
        return str(own[0])
    if len(found) > 1:
        raise AmbiguousPathError(ambiguous(text, found) + "; give one as the path filter")
    if not found:
        raise NotFoundError(f"the path filter {text!r} names no folder or note this workspace sees; tried "
                            + ", ".join(map(str, dict.fromkeys(tried))) + " (`vault-index sources` lists the sources)")
    return str(found[0])


def ambiguous(text: str, found: Sequence[Path]) -> str:
    return f"{text} names {len(found)} different files: " + ", ".join(map(str, found)) + "; give one of them"


def _candidates(app, text: str, bases: list, roots: list[Path]) -> list[Path]:
    """Where a path as given may lie, in order: itself when absolute; else under the first base, the
    workspace's folder (project or vault), each visible source, the folder holding a source whose
    own name the path starts with (`docs/x.md` for the source `<project>/docs`), and a visible
    source named as `sources` names it (`P/docs/x.md`, `P/README.md`: the form notices show)."""
    given = Path(os.path.expanduser(text))
    if given.is_absolute():
        return [given]
    folder = app.workspace.root
    places = [Path(bases[0])] if bases else []
    places += [Path(folder)] if folder is not None else []
    places += [root for root in roots if root.is_dir()]
    if given.parts:
        places += [root.parent for root in roots if root.is_dir() and root.name == given.parts[0]]
    named = [Path(path) / text[len(name):].lstrip("/") for name, path in app.store.source_names().items()
             if (text == name or text.startswith(name + "/")) and real(path) in roots]
    return [place / given for place in dict.fromkeys(places)] + named


def _holds(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


# --- letter case and Unicode, as the file system compares them ------------------------------------

_FOLDING: dict[int, bool] = {}  # device -> folds case: a cache of what the disk says, never a setting


def _folds(path: Path) -> bool:
    """Whether the file system holding `path` treats names differing in case as one name."""
    if sys.platform in ("darwin", "win32"):
        return True  # APFS, HFS+ and NTFS fold case (and Unicode forms) unless formatted otherwise
    probe = next((p for p in (path, *path.parents) if p.name and p.name.swapcase() != p.name and p.exists()), None)
    if probe is None:
        return False
    try:
        info = os.stat(probe)
    except OSError:
        return False
    if info.st_dev not in _FOLDING:  # one probe per file system: the same folder under its swapped-case name?
        try:
            _FOLDING[info.st_dev] = os.path.samestat(info, os.stat(probe.with_name(probe.name.swapcase())))
        except OSError:
            _FOLDING[info.st_dev] = False
    return _FOLDING[info.st_dev]


def _fold(name: str) -> str:
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


def _as_stored(path: Path) -> Path:
    """`path` with each existing part spelled as its folder lists it (the first part not there, and
    what follows it, stay as given: a note about to be written)."""
    parts = path.parts
    out = Path(parts[0])
    for index, part in enumerate(parts[1:], start=1):
        try:
            names = os.listdir(out)
        except OSError:
            return out.joinpath(*parts[index:])
        if part not in names:
            matches = [name for name in names if _fold(name) == _fold(part)]
            if len(matches) != 1:
                return out.joinpath(*parts[index:])
            part = matches[0]
        out = out / part
    return out
