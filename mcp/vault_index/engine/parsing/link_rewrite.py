"""Rewrite the links that name a moved note, and nothing else (the text-only half of a move).

A move of `old` to `new` (vault-relative paths) changes, in every note of the vault:
- each wikilink (`[[x]]`, `[[x|alias]]`, `[[x#heading]]`, `![[x]]`), markdown link (`[t](x.md)`)
  and frontmatter link (`related: "[[x]]"`, `superseded_by: x.md`) that resolves to `old` today
  and would no longer resolve to the note once it is at `new`;
- in the moved note itself, also its relative links to other notes that the move would break.
A link that still resolves after the move (a title or alias, a bare name the new path keeps, a
case-only rename) is left as written. Resolution is the index's own rule (engine/parsing/links.py),
applied to the vault before and after the move, so "the link names the note" means here exactly
what backlinks and lint mean by it. Code blocks and code spans are skipped as extraction skips
them; alias, fragment and the `.md` suffix (or its absence) are kept as written.

No file access: `plan` takes the notes' texts and returns the new texts of the notes that change.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import quote

from vault_index.engine.parsing import links as L

# The link shapes are the extraction's own (engine/parsing/links.py), so a rewrite sees what the index sees.
_WIKILINK = L._WIKILINK
_MDLINK = L._MDLINK
_CODE_SPAN = L._CODE_SPAN
# A frontmatter edge written as a plain path: `superseded_by: notes/a.md` or a list item `- a.md`
_FM_PATH = re.compile(r"""^\s*(?:[A-Za-z_][\w-]*:\s*|-\s+)(?P<q>["']?)(?P<path>[^"'\[\]#\s][^"'\[\]#]*?\.md)"""
                      r"""(?:#[^"']*)?(?P=q)\s*$""", re.IGNORECASE)
_FM_KEY = re.compile(r"^([A-Za-z_][\w-]*):")


@dataclass(frozen=True)
class Rewrite:
    path: str   # the note's path after the move (the moved note appears under `new`)
    text: str   # its new text
    links: int  # how many links were rewritten in it


def names_of(path: str, text: str) -> dict[str, set[str]]:
    """The keys a note answers to (title, aliases, path, file name), as the index computes them."""
    from vault_index.engine.parsing.parse import split_frontmatter

    fields, _, start = split_frontmatter(text)
    return L.note_names(path, fields, L.note_title(path, fields, text, start))


def plan(notes: Mapping[str, str], old: str, new: str) -> list[Rewrite]:
    """The notes whose text changes when `old` moves to `new`; `notes` maps every note's path to its text.

    The moved note is always in the answer when any of its own links changes; its path there is `new`.
    """
    before = L.memory_lookup((p, names_of(p, t)) for p, t in notes.items())
    after = L.memory_lookup((p, names_of(p, t)) for p, t in ((new if p == old else p, t) for p, t in notes.items()))
    # Trigger: [[pricing]] names pricing.md by its file name and by its title "Pricing" alike.
    # Why: Obsidian resolves file names only, so after a rename to price-list.md the link breaks
    # there while the index's rule (title first) still resolves it. Outcome: a link that named the
    # note as a path or file name must do so after the move too; one that named it only by a title
    # or alias (which a move keeps) is left alone.
    by_path_before, by_path_after = _paths_only(before), _paths_only(after)
    changed = []
    for path, text in notes.items():
        moved = path == old
        here = new if moved else path

        def retarget(target: str, kind: str, source: str = path, here: str = here, moved: bool = moved) -> str | None:
            was = L.resolve(target, source, "", before)
            if was.status != "resolved" or (was.target != old and not moved):
                return None
            goal = new if was.target == old else was.target
            as_path = L.resolve(target, source, "", by_path_before).target == was.target
            still = (L.resolve(target, here, "", by_path_after if as_path else after).target == goal
                     and L.resolve(target, here, "", after).target == goal)
            if still:
                return None  # still names the note after the move: left as written
            return _new_target(target, kind, here, goal, after, by_path_after)

        new_text, count = rewrite_text(text, retarget)
        if count:
            changed.append(Rewrite(here, new_text, count))
    return changed


def rewrite_text(text: str, retarget: Callable[[str, str], str | None]) -> tuple[str, int]:
    """`text` with each link target `t` (of kind wikilink, markdown or frontmatter) replaced by
    `retarget(t, kind)` where that is not None; returns (text, links rewritten)."""
    lines = text.split("\n")
    start = L.body_start(text)
    skipped = {i + start for i in L.code_lines(lines[start:])}
    count = 0
    field = ""  # the frontmatter key a line belongs to: only the link fields (links.EDGE_FIELDS) hold links
    for index, line in enumerate(lines):
        if index in skipped or ("[" not in line and index >= start):
            continue
        head = 0 < index < start - 1
        if head and (key := _FM_KEY.match(line)):
            field = key.group(1)
        if (index < start and not head) or (head and field not in L.EDGE_FIELDS):
            continue
        new_line, n = _rewrite_line(line, retarget, frontmatter=head)
        if n:
            lines[index], count = new_line, count + n
    return "\n".join(lines), count


def _rewrite_line(line: str, retarget, *, frontmatter: bool) -> tuple[str, int]:
    masked = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line) if not frontmatter else line
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) in `line`
    for match in _WIKILINK.finditer(masked):
        inner_start = match.start(2)
        inner = match.group(2)
        left = inner.split("|", 1)[0]
        raw_target = left.partition("#")[0]
        escaped = raw_target.rstrip("\\") if "#" not in left else raw_target
        target = escaped.strip()
        if not target:
            continue
        replacement = retarget(target, "wikilink")
        if replacement is not None:
            offset = inner_start + (len(escaped) - len(escaped.lstrip()))
            edits.append((offset, offset + len(target), replacement))
    if not frontmatter:
        wiki_masked = _WIKILINK.sub(lambda m: " " * len(m.group(0)), masked)
        for match in _MDLINK.finditer(wiki_masked):
            href = match.group(2)
            local = L._local_markdown_target(href)
            if not local:
                continue
            replacement = retarget(local[0], "markdown")
            if replacement is not None:
                cut = href.find("#")
                fragment = href[cut:] if cut >= 0 else ""
                encoded = "%" in href or " " in replacement
                new_href = (quote(replacement, safe="/._-~()!") if encoded else replacement) + fragment
                edits.append((match.start(2), match.end(2), new_href))
    elif (match := _FM_PATH.match(line)) and "[[" not in line:
        replacement = retarget(match.group("path"), "frontmatter")
        if replacement is not None:
            edits.append((match.start("path"), match.end("path"), replacement))
    for start, end, replacement in sorted(edits, reverse=True):
        line = line[:start] + replacement + line[end:]
    return line, len(edits)


def _paths_only(lookup: L.Lookup) -> L.Lookup:
    """The lookup without titles and aliases: what a link names read as a path or a file name."""
    return lambda kind, key: () if kind == "name" else lookup(kind, key)


def _new_target(target: str, kind: str, here: str, goal: str, after: L.Lookup, by_path: L.Lookup) -> str:
    """A link text that names `goal` from the note at `here`, in the style `target` was written."""
    suffix = target.casefold().endswith(".md")
    bare_goal = goal[:-3] if goal.casefold().endswith(".md") else goal
    keep = (lambda p: p + ".md") if suffix else (lambda p: p)
    relative = posixpath.relpath(bare_goal, posixpath.dirname(here) or ".")
    if kind == "markdown" or kind == "frontmatter":
        if target.startswith("/"):
            candidates = ["/" + keep(bare_goal)]
        else:
            dotted = target.startswith("./") and not relative.startswith("../")
            candidates = [("./" if dotted else "") + keep(relative), keep(bare_goal)]
    elif "/" in target.strip("/"):
        candidates = [keep(bare_goal), keep(relative)]
    else:
        candidates = [keep(posixpath.basename(bare_goal)), keep(bare_goal)]
    for candidate in candidates:  # one that names the note by the full rule and as a path alone
        if L.resolve(candidate, here, "", after).target == goal == L.resolve(candidate, here, "", by_path).target:
            return candidate
    return keep(bare_goal)  # the path from the vault root names one note unless titles collide with it
