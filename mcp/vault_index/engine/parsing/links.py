"""Links between notes: what a note links to (extraction) and which note a link names (resolution).

Extraction reads the note's text line by line so every link keeps its file line: `[[wikilinks]]`
(with `|alias`, `#heading`, `#^block`), embeds `![[...]]`, markdown links to local notes, and the
typed edges of the frontmatter (EDGE_FIELDS). Fenced code blocks and inline code spans hold
examples, not links, and are skipped.

Resolution is one rule for the index and for lint (docs/links.md), tried in this order:
  1. exact title or canonical name (frontmatter `title`, `name`, `aliases`),
  2. a path relative to the linking note,
  3. a path from the vault (source) root,
  4. a unique bare file name.
All comparisons are case-insensitive (casefold). A step that names two or more notes stops the
search: the link is `ambiguous` and stays unresolved. No step matching: `unresolved`.

This module has no SQL and no file access: `resolve` asks a `lookup(kind, key)` for candidates, so
the index (engine/parsing/link_index.py) and lint (services/curation/curation.py) share the rule itself.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

# Frontmatter fields whose values name other notes, and the edge kind each gives. `sources` and
# `provenance` name a note only when written [[like this]] or as a .md path; the others always do.
EDGE_FIELDS = {
    "supersedes": "supersedes",
    "superseded_by": "superseded_by",
    "contradicts": "contradicts",
    "sources": "provenance",
    "provenance": "provenance",
    "related": "related",
}
BODY_KINDS = ("wikilink", "embed", "markdown")
EDGE_KINDS = (*BODY_KINDS, *dict.fromkeys(EDGE_FIELDS.values()))
MAX_LINKS_PER_NOTE = 5_000  # a generated note with more keeps its first links; the rest are dropped
MAX_TARGET_CHARS = 500

_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_MDLINK = re.compile(r"(!?)\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'][^\"'\n]*[\"'])?\s*\)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


@dataclass(frozen=True)
class Link:
    """One link as written: `target` without alias or fragment; `line` is the file's 1-based line."""

    target: str
    kind: str
    line: int
    fragment: str = ""  # 'heading' or '^block' after '#', '' when none


@dataclass(frozen=True)
class Resolution:
    status: str                    # resolved | unresolved | ambiguous
    target: str | None = None      # the note's path when resolved
    rule: str = ""                 # name | relative | root | file (the step that decided)
    candidates: tuple[str, ...] = ()


# --- keys ---------------------------------------------------------------------------------------


def name_key(text: str) -> str:
    """A title, name or alias as compared: casefolded, runs of white space as one space."""
    return " ".join(str(text).casefold().split())


def path_key(path: str) -> str:
    """A note path as compared: normalised, casefolded, without the `.md` suffix."""
    norm = posixpath.normpath(path.replace("\\", "/"))
    return (norm[:-3] if norm.casefold().endswith(".md") else norm).casefold()


def file_key(target: str) -> str:
    """The bare file name of a link target or path, as compared."""
    return path_key(target.rstrip("/")).rsplit("/", 1)[-1]


def note_names(path: str, frontmatter: dict, title: str) -> dict[str, set[str]]:
    """The keys a note answers to: {"name": titles/names/aliases, "path": {path}, "file": {stem}}."""
    names = {name_key(title)} if title else set()
    for field in ("title", "name"):
        if isinstance(frontmatter.get(field), str):
            names.add(name_key(frontmatter[field]))
    aliases = frontmatter.get("aliases")
    for alias in aliases if isinstance(aliases, list) else [aliases] if isinstance(aliases, str) else []:
        if isinstance(alias, str) and alias.strip():
            names.add(name_key(alias))
    names.discard("")
    return {"name": names, "path": {path_key(path)}, "file": {file_key(path)}}


# --- extraction ---------------------------------------------------------------------------------


_H1 = re.compile(r"^#[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")


def note_title(path: str, frontmatter: dict, text: str, start: int = 0) -> str:
    """The title the index gives a note (engine/parsing/parse.py): frontmatter title, else the first H1
    outside code blocks, else the file name. Lint uses it without parsing the note twice."""
    value = frontmatter.get("title")
    if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value).strip():
        return str(value).strip()
    lines = text.split("\n")[start:]
    skipped = code_lines(lines)
    for index, line in enumerate(lines):
        match = _H1.match(line)
        if match and index not in skipped and match.group(1).strip():
            return match.group(1).strip()
    return posixpath.splitext(posixpath.basename(path))[0]


def body_start(text: str) -> int:
    """0-based line where the body begins: after a leading '---' frontmatter block, else 0."""
    lines = text.split("\n", 2001)
    if not lines or lines[0].rstrip("\r").strip() != "---":
        return 0
    for index in range(1, min(len(lines), 2000)):
        if lines[index].rstrip("\r") in ("---", "..."):
            return index + 1
    return 0


def code_lines(lines: Sequence[str]) -> set[int]:
    """0-based indexes of lines inside fenced code blocks (fence lines included)."""
    inside: set[int] = set()
    fence = ""
    for index, line in enumerate(lines):
        match = _FENCE.match(line)
        if fence:
            inside.add(index)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not line.strip()[len(match.group(1)):].strip():
                fence = ""
        elif match and not (match.group(1)[0] == "`" and "`" in line.strip()[len(match.group(1)):]):
            fence = match.group(1)
            inside.add(index)
    return inside


def _split_wikilink(inner: str) -> tuple[str, str]:
    target = inner.split("|", 1)[0].rstrip("\\")
    target, _, fragment = target.partition("#")
    return target.strip(), fragment.strip()


def _local_markdown_target(href: str) -> tuple[str, str] | None:
    """(path, fragment) of a markdown link to a local note; None for URLs, anchors and other files."""
    if _SCHEME.match(href) or href.startswith(("#", "//")):
        return None
    path, _, fragment = unquote(href).partition("#")
    last = path.rstrip("/").rsplit("/", 1)[-1]
    if not path or ("." in last and not last.casefold().endswith(".md")):
        return None
    return path, fragment


def extract(text: str, frontmatter: dict | None = None, body_start: int = 0,
            skip_lines: Iterable[int] = ()) -> list[Link]:
    """Every link of a note, in file order, frontmatter edges first.

    `body_start` is the 0-based line where the body begins (after the frontmatter); `skip_lines`
    adds 0-based lines to leave out (a parser's code-block ranges).
    """
    lines = text.split("\n")
    found = _frontmatter_links(lines[:body_start], frontmatter or {})
    skipped = code_lines(lines[body_start:])
    skipped = {i + body_start for i in skipped} | set(skip_lines)
    for index in range(body_start, len(lines)):
        if index in skipped or "[" not in lines[index]:
            continue
        line = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), lines[index])
        for match in _WIKILINK.finditer(line):
            target, fragment = _split_wikilink(match.group(2))
            if target:  # [[#heading]] points into the same note
                found.append(Link(target[:MAX_TARGET_CHARS], "embed" if match.group(1) else "wikilink",
                                  index + 1, fragment))
        for match in _MDLINK.finditer(_WIKILINK.sub(lambda m: " " * len(m.group(0)), line)):
            local = _local_markdown_target(match.group(2))
            if local:
                found.append(Link(local[0][:MAX_TARGET_CHARS], "markdown", index + 1, local[1]))
        if len(found) >= MAX_LINKS_PER_NOTE:
            break
    return found[:MAX_LINKS_PER_NOTE]


def _frontmatter_links(head: Sequence[str], frontmatter: dict) -> list[Link]:
    found = []
    for field, kind in EDGE_FIELDS.items():
        values = frontmatter.get(field)
        values = values if isinstance(values, list) else [values]
        line = next((i + 1 for i, text in enumerate(head) if text.startswith(f"{field}:")), 1)
        for value in values:
            if not isinstance(value, str) or not value.strip() or _SCHEME.match(value.strip()):
                continue  # a URL source is provenance outside the vault, not an edge
            target = value.strip()
            wiki = target.startswith("[[") and target.endswith("]]")
            if kind == "provenance" and not wiki and not target.casefold().split("#")[0].endswith(".md"):
                continue  # sources are often free text ("interview, May 2026"): a note only as [[x]] or x.md
            if wiki:
                target, fragment = _split_wikilink(target[2:-2])
            else:
                target, _, fragment = target.partition("#")
            if target:
                found.append(Link(target[:MAX_TARGET_CHARS], kind, line, fragment))
    return found


# --- resolution ---------------------------------------------------------------------------------

Lookup = Callable[[str, str], Sequence[str]]


def _inside(candidate: str, root: str) -> bool:
    if not root:
        return candidate != ".." and not candidate.startswith("../") and not candidate.startswith("/")
    return candidate.startswith(root.rstrip("/") + "/")


def _decide(hits: Sequence[str], rule: str) -> Resolution | None:
    unique = tuple(sorted(set(hits)))
    if len(unique) == 1:
        return Resolution("resolved", unique[0], rule, unique)
    if len(unique) > 1:
        return Resolution("ambiguous", None, rule, unique)
    return None


def resolve(target: str, source: str, root: str, lookup: Lookup) -> Resolution:
    """The note `target` (as written in `source`) names, by the rule in the module docstring.

    `source` and `root` use the same path form as the lookup's paths (absolute in the index,
    vault-relative with root "" in lint).
    """
    target = target.strip().replace("\\", "/")
    if not target:
        return Resolution("unresolved")
    steps = [("name", lambda: lookup("name", name_key(target)))]
    relative = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
    if _inside(relative, root) and not target.startswith("/"):
        steps.append(("relative", lambda: lookup("path", path_key(relative))))
    from_root = posixpath.normpath(posixpath.join(root, target.lstrip("/"))) if root else \
        posixpath.normpath(target.lstrip("/"))
    if _inside(from_root, root):
        steps.append(("root", lambda: lookup("path", path_key(from_root))))
    if "/" not in target.strip("/"):
        steps.append(("file", lambda: lookup("file", file_key(target))))
    for rule, step in steps:
        decided = _decide(step(), rule)
        if decided:
            return decided
    return Resolution("unresolved")


def memory_lookup(names: Iterable[tuple[str, dict[str, set[str]]]]) -> Lookup:
    """A lookup over notes held in memory: `names` yields (path, note_names(...))."""
    table: dict[tuple[str, str], list[str]] = {}
    for path, keys in names:
        for kind, values in keys.items():
            for key in values:
                table.setdefault((kind, key), []).append(path)
    return lambda kind, key: table.get((kind, key), ())
