"""The edit operations people know from basic-memory, as stages of the one write service.

    prepend         add text at the top of the body (after the frontmatter)
    replace_section replace what one heading holds (its text and nested subsections), found by
                    heading text ("Setup", "## Setup") or heading path ("Install > Linux")
    find_replace    replace a literal text that must occur exactly `count` times (default 1)
    move            rename a note and rewrite the links to it in the same commit (services/writes/move.py)

Each runs through `WriteService._pipeline` (authorize, lock, version, validate, replace, re-index,
commit with provenance). What is outside the edit is kept byte for byte: the other sections, the
line endings (a CRLF note gets CRLF lines), the frontmatter's text in a plain folder.

Two kinds of folder, one rule each:
- a vault (a `.vault-index/config.yaml`): the edited body goes through the note's own composition
  (services/writes/notes.py), so stamps, hooks and the vault's schema apply as for `replace`;
- a plain notes folder (no config; a person's own notes, a project's docs): only the body text
  changes. Such notes never agreed to the curated schema, so none is imposed and no fields are
  stamped; the text checks (UTF-8, no NUL, size) still hold, and the built-in owner role applies.

Versions: `replace_section` must name the version it was composed against (it overwrites what
others may have changed); `prepend` and `find_replace` may omit it (they overwrite nothing, or
only text whose count they check). A given `base_version` is always checked: a stale one is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from vault_index.services.vault import frontmatter as fm
from vault_index.services.vault.vault import not_visible
from vault_index.services.writes.write_types import EDITS

if TYPE_CHECKING:
    from vault_index.services.writes.write import WriteService
    from vault_index.services.writes.write_types import Caller, Target, WriteOutcome

EditOp = Literal["prepend", "replace_section", "find_replace"]
EDIT_OPS = EDITS
VERSION_REQUIRED = ("replace_section",)
HEADING_PATH_SEPARATOR = " > "  # the index's own heading paths (engine/parsing/parse.py)
MAX_LISTED_HEADINGS = 20


@dataclass(frozen=True)
class EditRequest:
    op: EditOp
    path: str
    text: str | None = None  # prepend: what to add; replace_section: the new content; find_replace: the replacement
    heading: str | None = None  # replace_section
    find: str | None = None  # find_replace: literal text
    count: int = 1  # find_replace: how many times `find` must occur
    base_version: str | None = None
    reason: str | None = None
    request_id: str | None = None


class Refusal(Exception):
    """An edit that cannot apply (missing heading, wrong count): becomes an `invalid` outcome."""

    def __init__(self, field: str, rule: str, message: str) -> None:
        super().__init__(message)
        self.problem = fm.problem(field, rule, message)


def compose(service: WriteService, caller: Caller, request: EditRequest, target: Target, old: str | None,
            version: str | None, alive) -> str | WriteOutcome:
    """The note's new text under the lock, or the outcome that stops the write.

    Trigger: on a note with CR-only line endings (old Mac files) the headings were found by line
    but the text was split on LF, so replace_section appended its text at the end (issue 36).
    Outcome: such a note is edited as LF text and written back with CR alone.
    """
    if old is not None and "\r" in old and "\n" not in old:
        composed = _compose(service, caller, request, target, old.replace("\r", "\n"), version, alive)
        return composed.replace("\r\n", "\n").replace("\n", "\r") if isinstance(composed, str) else composed
    return _compose(service, caller, request, target, old, version, alive)


def _compose(service: WriteService, caller: Caller, request: EditRequest, target: Target, old: str | None,
             version: str | None, alive) -> str | WriteOutcome:
    from vault_index.services.writes import notes
    from vault_index.services.writes.write_types import WriteOutcome, WriteRequest

    if old is None:
        return WriteOutcome("not_found", target.rel, not_visible(target.rel))
    if request.op in VERSION_REQUIRED and not request.base_version:
        return notes._invalid(target, [fm.problem("base_version", "required", f"{request.op} must name the "
                                                  "version it was composed against (read the note first)")], version)
    if request.base_version and request.base_version != version:
        return WriteOutcome("stale", target.rel, f"{target.rel} changed since version {request.base_version} (now "
                            f"{version}); read it again and redo the change", version=version,
                            result={"base_version": request.base_version})
    head, body = split_text(old)
    try:
        new_body = edit_body(request, body)
    except Refusal as refusal:
        return notes._invalid(target, [refusal.problem], version)
    if service.vault.config_path is None:  # a plain notes folder: the text alone changes
        problems = _text_problems(new_body)
        return notes._invalid(target, problems, version) if problems else head + new_body
    _, _, unreadable = fm.parse(old)
    if unreadable:  # the fields would be dropped by a re-render; fix them first (as append asks)
        return notes._invalid(target, [*unreadable, fm.problem("frontmatter", "unreadable", "fix the note's "
                                                               "frontmatter before this change")], version)
    as_replace = WriteRequest(op="replace", path=request.path, body=new_body, base_version=version,
                              reason=request.reason, request_id=request.request_id)
    return notes.compose(service, caller, as_replace, target, old, version, alive)


def split_text(text: str) -> tuple[str, str]:
    """(the frontmatter block's exact text, the body): head + body == text."""
    _, body = fm.split(text)
    return text[:len(text) - len(body)], body


def edit_body(request: EditRequest, body: str) -> str:
    """The body after the operation; raises Refusal when it cannot apply."""
    newline = "\r\n" if "\r\n" in body else "\n"
    text = request.text
    if request.op == "prepend" and not (text or "").strip():
        raise Refusal("body", "required", "prepend needs the text to add (body)")
    if request.op == "replace_section" and text is None:
        raise Refusal("body", "required", "replace_section needs the section's new content (body; '' empties it)")
    if request.op != "find_replace":
        text = _with_newline(text.strip("\r\n"), newline)
    if request.op == "prepend":
        return prepend(body, text, newline)
    if request.op == "replace_section":
        from vault_index.services.writes.note_limits import section_edit_problem

        if problem := section_edit_problem(body):  # before any parse: a request's work is bounded
            raise Refusal("body", "size", problem)
        return replace_section(body, request.heading or "", text, newline)
    if request.op == "find_replace":
        if not request.find:
            raise Refusal("find", "required", "find_replace needs the literal text to find (find)")
        if text is None:
            raise Refusal("body", "required", "find_replace needs the replacement (body; '' deletes)")
        return find_replace(body, request.find, text, request.count)
    raise Refusal("op", "enum", f"unknown edit {request.op!r}")


def prepend(body: str, text: str, newline: str = "\n") -> str:
    """`text` as the first paragraph of the body; blank lines that open the body stay where they are."""
    rest = body.lstrip("\r\n")
    lead = body[:len(body) - len(rest)]
    return lead + text + newline + (newline + rest if rest.strip() else "")


def find_replace(body: str, find: str, replacement: str, count: int = 1) -> str:
    """Every occurrence of `find` replaced, only when there are exactly `count` of them."""
    found = body.count(find)
    if count < 1:
        raise Refusal("count", "minimum", "count is how many times the text must occur: 1 or more")
    if found != count:
        where = "does not occur" if not found else f"occurs {found} time{'s' if found != 1 else ''}"
        raise Refusal("find", "count", f"the text {where} in the body, not {count}; nothing was replaced "
                      "(give the count you expect, or a longer text that occurs once)")
    return body.replace(find, replacement)


# --- sections -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    path: tuple[str, ...]  # the heading texts from the top level down to this one
    start: int  # 0-based line of the heading in the body
    after: int  # the first line after the heading (a setext heading spans two)
    end: int  # the line where its section ends: the next heading of the same or a higher level


def headings(body: str) -> list[Heading]:
    """The body's headings (ATX and setext, never inside code) with their sections' line ranges."""
    from vault_index.engine.parsing.parse import _structure

    found, _ = _structure(body)
    total = body.count("\n") + 1
    ordered = sorted(found.items())
    # Trigger: each heading's end was searched in a copy of the rest of the list: 60,000 headings
    # held the write (and every read waiting on the server's lock) for 19-35 s (issue 36).
    # Outcome: one pass; a heading's section ends where the next heading of its level or above starts.
    ends = [total] * len(ordered)
    open_: list[int] = []  # indexes of headings whose section is still open, levels rising
    for index, (start, (level, _, _)) in enumerate(ordered):
        while open_ and ordered[open_[-1]][1][0] >= level:
            ends[open_.pop()] = start
        open_.append(index)
    result: list[Heading] = []
    stack: list[tuple[int, str]] = []
    for index, (start, (level, after, text)) in enumerate(ordered):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
        result.append(Heading(level, text, tuple(t for _, t in stack), start, after, ends[index]))
    return result


def find_heading(body: str, wanted: str) -> Heading:
    """The one heading `wanted` names: its text, `## text` (that level only) or a path `A > B`."""
    spec = wanted.strip()
    level = len(spec) - len(spec.lstrip("#")) if spec.startswith("#") else 0
    spec = spec.lstrip("#").strip() if level else spec
    parts = [_key(p) for p in spec.split(HEADING_PATH_SEPARATOR)]
    if not spec or not all(parts):
        raise Refusal("heading", "required", "replace_section needs the heading (its text, '## text' or 'A > B')")
    every = headings(body)
    matches = [h for h in every if [_key(t) for t in h.path[-len(parts):]] == parts and len(h.path) >= len(parts)
               and (not level or h.level == level)]
    if not matches and len(parts) > 1:  # a heading whose own text holds " > "
        matches = [h for h in every if _key(h.text) == _key(spec) and (not level or h.level == level)]
    if len(matches) == 1:
        return matches[0]
    listed = ", ".join(f"{'#' * h.level} {' > '.join(h.path)} (line {h.start + 1})"
                       for h in (matches or every)[:MAX_LISTED_HEADINGS])
    if matches:
        raise Refusal("heading", "ambiguous", f"{len(matches)} headings match {wanted!r}: {listed}; name one by "
                      "its path ('Parent > Heading') or level ('## Heading')")
    raise Refusal("heading", "missing", f"no heading {wanted!r} in the note" + (f"; its headings: {listed}"
                                                                               if listed else " (it has none)"))


def replace_section(body: str, wanted: str, text: str, newline: str = "\n") -> str:
    """The section under the heading `wanted` replaced by `text`; the heading line and everything
    outside the section are kept byte for byte, and so are the blank lines that close it."""
    heading = find_heading(body, wanted)
    lines = body.split("\n")
    first = text.split(newline, 1)
    if _heading_line(first[0]) == (heading.level, _key(heading.text)):  # the caller repeated the heading
        text = (first[1] if len(first) > 1 else "").strip("\r\n")
    cr = "\r" if newline == "\r\n" else ""
    last = heading.end == len(lines) and lines[-1] == ""  # the body's final newline closes this section
    section = lines[heading.after:heading.end - last]
    content_end = len(_rstrip_blank(section))
    trailing = len(section) - content_end
    lead = next((i for i, line in enumerate(section) if line.strip()), 0) if content_end else 1
    kept = [cr] * lead + [text + cr] if text.strip() else []
    new = kept + [cr] * trailing + ([""] if last else [])
    return "\n".join(lines[:heading.after] + new + lines[heading.end:])


def _rstrip_blank(lines: list[str]) -> list[str]:
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    return lines[:end]


def _heading_line(line: str) -> tuple[int, str] | None:
    stripped = line.strip()
    hashes = len(stripped) - len(stripped.lstrip("#"))
    if 1 <= hashes <= 6 and stripped[hashes:hashes + 1] in (" ", "\t"):
        return hashes, _key(stripped[hashes:].strip().rstrip("#").strip())
    return None


def _key(text: str) -> str:
    """A heading as compared: letter case, spacing and emphasis marks (`**Setup**`) do not count."""
    return " ".join(text.casefold().translate(_EMPHASIS).split())


_EMPHASIS = str.maketrans("", "", "*_`")


def _with_newline(text: str, newline: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", newline) if newline != "\n" else text.replace("\r\n", "\n")


def _text_problems(body: str) -> list[dict]:
    """The checks every note's text meets, plain folder or vault (services/writes/note_limits.py)."""
    from vault_index.services.writes.note_limits import body_problems

    return body_problems(body)


def write_op(writer: WriteService, caller: Caller, op: str, path: str, *, body: str | None = None,
             frontmatter: dict | None = None, base_version: str | None = None, reason: str | None = None,
             superseded_by: str | None = None, request_id: str | None = None, heading: str | None = None,
             find: str | None = None, count: int | None = None, new_path: str | None = None) -> WriteOutcome:
    """The one entry of the surfaces (MCP note_write, the CLI): an op and its fields to the write service."""
    from vault_index.services.writes.write_types import MoveRequest, WriteOutcome, WriteRequest

    if op in EDIT_OPS or op == "move":
        misplaced = [name for name, value in (("frontmatter", frontmatter), ("superseded_by", superseded_by))
                     if value]
        if misplaced:
            return WriteOutcome("invalid", path, f"{op} changes the body or the name only; "
                                f"{', '.join(misplaced)} belongs to create, replace or deprecate")
    if op in EDIT_OPS:
        return writer.edit(caller, EditRequest(op, path, body, heading, find, 1 if count is None else count,
                                               base_version, reason, request_id))
    if op == "move":
        if not new_path:
            return WriteOutcome("invalid", path, "move needs new_path, the note's new vault-relative path")
        return writer.move(caller, MoveRequest(path, new_path, base_version, reason, request_id))
    return writer.write(caller, WriteRequest(op=op, path=path, body=body, frontmatter=frontmatter,
                                             base_version=base_version, reason=reason, superseded_by=superseded_by,
                                             request_id=request_id))
