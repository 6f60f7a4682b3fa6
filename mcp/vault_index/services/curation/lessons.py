"""docs/lessons.md: lessons as testable directives, added, superseded or retired, never deleted.

The file is markdown a person can edit. Each lesson is a level-2 heading and a field list:

    ## L-0001: <the lesson as a directive, one line>
    - status: active | superseded | retired
    - date: YYYY-MM-DD
    - lesson: <the directive>
    - cause: <what happened that taught it>
    - detect: <a check or test that would catch a repeat>
    - tags: <a, b>                  (optional)
    - superseded_by: L-0003         (only when superseded)
    - retired: <reason>             (only when retired)

Every write goes through the write service (`WriteService.update_file`): it refuses a lessons file
that is a symlink or hardlink out of the project, a FIFO or a control folder, locks the file,
re-indexes and commits like any curated write. Writes edit the text in place (append a lesson,
change a status line, add a field line) rather than re-render the file, so prose a person wrote
between lessons survives. Each write re-reads the file under its lock, applies one change and
refuses to replace the file unless every lesson that was there is still there, words unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from vault_index.errors import NotFoundError, UsageError, VaultIndexError
from vault_index.services.vault.text import unsafe_char

if TYPE_CHECKING:
    from vault_index.services.writes.write import Caller, WriteOutcome, WriteService

STATUSES = ("active", "superseded", "retired")
REQUIRED = ("status", "date", "lesson", "cause", "detect")
FIELDS = (*REQUIRED, "tags", "superseded_by", "retired")
MAX_LESSON_CHARS = 300  # the heading line; a directive longer than this is a paragraph
MAX_FIELD_CHARS = 2000

HEADING = re.compile(r"^##\s+(?P<id>L-\d{4,}):\s*(?P<title>.*?)\s*$")
LESSON_HEADING = re.compile(r"^##\s+L-")  # what a person meant as a lesson heading, well formed or not
FIELD = re.compile(r"^- (?P<key>[a-z_]+):[ \t]*(?P<value>.*?)\s*$")
ID_INPUT = re.compile(r"^[Ll]-?(\d{1,6})$")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

INTRO = (
    "Lessons learned while building and running this project. Each one is a directive, the\n"
    "event that taught it and a way to detect a repeat. Add them with /learn in Claude Code (the\n"
    "vault-index lesson tools); nothing here is deleted: a lesson that stops holding is superseded\n"
    "by a newer one or retired with a reason.\n"
)  # names no script: this header lands in any project's docs/lessons.md, which has no scripts/learn.py


@dataclass(frozen=True)
class Lesson:
    id: str
    title: str
    line: int  # 1-based line of the heading
    fields: dict[str, str]
    field_lines: dict[str, int]  # field -> 0-based line index
    end: int  # 0-based index just past the field list
    repeated: tuple[str, ...] = ()  # fields given more than once (the first one counts)

    def get(self, key: str) -> str:
        return self.fields.get(key, "")

    @property
    def status(self) -> str:
        return self.get("status")

    def as_dict(self) -> dict:
        tags = [t.strip() for t in self.get("tags").split(",") if t.strip()]
        return {"id": self.id, "title": self.title, "status": self.status, "date": self.get("date"),
                "lesson": self.get("lesson"), "cause": self.get("cause"), "detect": self.get("detect"),
                "tags": tags, "superseded_by": self.get("superseded_by") or None,
                "retired": self.get("retired") or None, "line": self.line}


@dataclass(frozen=True)
class Parsed:
    lines: list[str]  # with their line endings
    lessons: list[Lesson]
    malformed: list[tuple[int, str]]  # (1-based line, heading) of lesson headings without a valid id
    newline: str

    def find(self, lesson_id: str) -> Lesson:
        found = [lesson for lesson in self.lessons if lesson.id == lesson_id]
        if not found:
            raise NotFoundError(f"{lesson_id} is not in the lessons file; `learn.py list --all` shows the ids")
        if len(found) > 1:
            raise UsageError(f"{lesson_id} appears {len(found)} times; fix the file by hand (`learn.py check`)")
        return found[0]


# --- reading ------------------------------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split only where the writer ends a line: at "\n".

    Not str.splitlines(), which also splits at U+2028, U+0085 and other characters a hand edit
    may leave inside a line; reader and writer must agree on where each line ends.
    """
    lines = text.split("\n")
    last = lines.pop()
    return [line + "\n" for line in lines] + ([last] if last else [])


def _bare(raw: str) -> str:
    return raw.removesuffix("\n").removesuffix("\r")


def parse(text: str) -> Parsed:
    lines = split_lines(text)
    newline = "\r\n" if "\r\n" in text else "\n"
    lessons, malformed = [], []
    for index, raw in enumerate(lines):
        line = _bare(raw)
        match = HEADING.match(line)
        if not match:
            if LESSON_HEADING.match(line):
                malformed.append((index + 1, line))
            continue
        fields, field_lines, repeated = {}, {}, []
        cursor = index + 1
        while cursor < len(lines) and not lines[cursor].strip():
            cursor += 1
        while cursor < len(lines) and (field := FIELD.match(_bare(lines[cursor]))):
            key = field["key"]
            if key not in fields:
                fields[key], field_lines[key] = field["value"], cursor
            else:
                repeated.append(key)
            cursor += 1
        lessons.append(Lesson(match["id"], match["title"], index + 1, fields, field_lines, cursor, tuple(repeated)))
    return Parsed(lines, lessons, malformed, newline)


def read(path: str | Path) -> Parsed:
    path = Path(path)
    if not path.exists():
        return parse("")
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return parse(handle.read())
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text ({exc.reason}); fix its encoding first") from exc


def list_lessons(path: str | Path, include_all: bool = False) -> list[Lesson]:
    """Active lessons, or every lesson with `include_all`, in file order."""
    return [lesson for lesson in read(path).lessons if include_all or lesson.status == "active"]


def check_lessons(path: str | Path) -> list[str]:
    """Problems in the lessons file, one line each as `path:line: message`; empty when well formed.

    A missing file is fine (no lessons yet); gaps in the numbering are fine (ids are never reused).
    """
    path = Path(path)
    try:
        parsed = read(path)
    except VaultIndexError as exc:
        return [f"{path}: {exc}"]
    problems = [f"{path}:{line}: malformed lesson heading {heading!r}; write '## L-0001: <lesson>'"
                for line, heading in parsed.malformed]
    ids: dict[str, list[Lesson]] = {}
    for lesson in parsed.lessons:
        ids.setdefault(lesson.id, []).append(lesson)
    for lesson in parsed.lessons:
        where = f"{path}:{lesson.line}: {lesson.id}"
        problems += [f"{where}: {message}" for message in _lesson_problems(lesson, ids)]
    return problems


def _lesson_problems(lesson: Lesson, ids: dict[str, list[Lesson]]) -> list[str]:
    found = []
    first = ids[lesson.id][0]
    if first is not lesson:
        found.append(f"duplicate id (first used at line {first.line}); give this lesson the next free id")
    if not lesson.title:
        found.append("heading has no lesson text")
    found += [f"field {key!r} appears more than once" for key in dict.fromkeys(lesson.repeated)]
    for key in lesson.fields:
        if key not in FIELDS:
            found.append(f"unknown field {key!r} (fields: {', '.join(FIELDS)})")
    for key in REQUIRED:
        if not lesson.get(key):
            found.append(f"missing {key}")
    status = lesson.status
    if status and status not in STATUSES:
        found.append(f"unknown status {status!r} (use {', '.join(STATUSES)})")
    if lesson.get("date") and not _valid_date(lesson.get("date")):
        found.append(f"date {lesson.get('date')!r} is not YYYY-MM-DD")
    target = lesson.get("superseded_by")
    if status == "superseded":
        if not target:
            found.append("superseded without superseded_by")
        elif target == lesson.id or target not in ids:
            found.append(f"superseded_by {target} is not another lesson in this file")
    elif target:
        found.append(f"superseded_by set but status is {status or 'missing'}")
    if status == "retired" and not lesson.get("retired"):
        found.append("retired without a reason (add '- retired: <reason>')")
    elif status != "retired" and lesson.get("retired"):
        found.append(f"retired reason set but status is {status or 'missing'}")
    return found


def _valid_date(value: str) -> bool:
    if not DATE.match(value):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


# --- writing ------------------------------------------------------------------------------------


def add(path: str | Path, lesson: str, cause: str, detect: str, tags: list[str] | None = None, **write) -> str:
    """Append an active lesson; returns its new id (raises on a refused write; see add_outcome)."""
    return _id(add_outcome(path, lesson, cause, detect, tags, **write))


def supersede(path: str | Path, old_id: str, lesson: str, cause: str, detect: str, **write) -> str:
    """Add a lesson that replaces `old_id`; the old one keeps its text and points to the new id."""
    return _id(supersede_outcome(path, old_id, lesson, cause, detect, **write))


def retire(path: str | Path, lesson_id: str, reason: str, **write) -> str:
    """Mark a lesson retired with the reason it no longer holds; returns its id."""
    return _id(retire_outcome(path, lesson_id, reason, **write))


def add_outcome(path: str | Path, lesson: str, cause: str, detect: str, tags: list[str] | None = None, *,
                writer: WriteService | None = None, caller: Caller | None = None,
                request_id: str | None = None) -> WriteOutcome:
    """add as a write outcome: result {"id"}; notices when re-indexing or committing failed."""
    entry = _entry(lesson, cause, detect, tags)

    def change(parsed: Parsed) -> tuple[list[str], str]:
        new_id = _next_id(parsed)
        return _append(parsed.lines, parsed.newline, new_id, entry), new_id

    return _write(path, change, f"lesson: {entry['lesson']}", writer, caller, request_id)


def supersede_outcome(path: str | Path, old_id: str, lesson: str, cause: str, detect: str, *,
                      writer: WriteService | None = None, caller: Caller | None = None,
                      request_id: str | None = None) -> WriteOutcome:
    old_id = normalize_id(old_id)
    entry = _entry(lesson, cause, detect, None)

    def change(parsed: Parsed) -> tuple[list[str], str]:
        old = parsed.find(old_id)
        _require_active(old, "supersede")
        new_id = _next_id(parsed)
        lines = _set_fields(parsed, old, {"status": "superseded", "superseded_by": new_id})
        return _append(lines, parsed.newline, new_id, entry), new_id

    return _write(path, change, f"lesson supersedes {old_id}: {entry['lesson']}", writer, caller, request_id)


def retire_outcome(path: str | Path, lesson_id: str, reason: str, *, writer: WriteService | None = None,
                   caller: Caller | None = None, request_id: str | None = None) -> WriteOutcome:
    lesson_id = normalize_id(lesson_id)
    reason = _one_line("reason", reason)

    def change(parsed: Parsed) -> tuple[list[str], str]:
        old = parsed.find(lesson_id)
        _require_active(old, "retire")
        return _set_fields(parsed, old, {"status": "retired", "retired": reason}), lesson_id

    return _write(path, change, f"lesson {lesson_id} retired: {reason}", writer, caller, request_id)


def _id(outcome: WriteOutcome) -> str:
    from vault_index.services.writes.write import require_ok

    return require_ok(outcome).result["id"]


def normalize_id(value: str) -> str:
    """`L-0003`, `l-3` or `L3` -> `L-0003`."""
    match = ID_INPUT.match(value.strip())
    if not match:
        raise UsageError(f"{value!r} is not a lesson id; ids look like L-0003")
    return f"L-{int(match[1]):04d}"


def _entry(lesson: str, cause: str, detect: str, tags: list[str] | None) -> dict[str, str]:
    lesson = (lesson or "").strip()
    if not lesson:
        raise UsageError("the lesson is empty; write it as one directive line, e.g. 'Run X before Y'")
    _check_line("lesson", lesson)
    if len(lesson) > MAX_LESSON_CHARS:
        raise UsageError(f"the lesson is over {MAX_LESSON_CHARS} characters; make the directive shorter")
    entry = {"lesson": lesson, "cause": _one_line("cause", cause), "detect": _one_line("detect", detect)}
    clean_tags = [tag.strip() for tag in tags or [] if tag.strip()]
    for tag in clean_tags:
        _check_line("tag", tag)
        if not re.fullmatch(r"[\w./+-]{1,40}", tag):
            raise UsageError(f"tag {tag!r}: use letters, digits and - _ . / + (at most 40)")
    if clean_tags:
        entry["tags"] = ", ".join(clean_tags)
    return entry


def _one_line(name: str, value: str) -> str:
    """Prose fields may be given on several lines; they are stored as one."""
    # str.split() breaks at every line-break kind str.splitlines() knows (U+2028, U+000B, ...)
    # and at tabs, so this joins them all; any other control character is then refused.
    value = " ".join((value or "").split())
    if not value:
        raise UsageError(f"the {name} is empty; say it in a sentence")
    if len(value) > MAX_FIELD_CHARS:
        raise UsageError(f"the {name} is over {MAX_FIELD_CHARS} characters; shorten it")
    return _check_line(name, value)


def _check_line(name: str, value: str) -> str:
    """Every field is written as one line of docs/lessons.md; nothing in it may end that line."""
    if bad := unsafe_char(value):
        raise UsageError(f"the {name} must be one line of plain text but holds {bad} (a line break or "
                         "control character); remove it")
    return value


def _require_active(lesson: Lesson, verb: str) -> None:
    if lesson.status == "superseded":
        by = lesson.get("superseded_by") or "a newer lesson"
        raise UsageError(f"{lesson.id} is already superseded by {by}; {verb} that one instead")
    if lesson.status == "retired":
        raise UsageError(f"{lesson.id} is already retired ({lesson.get('retired')}); add a new lesson instead")


def _next_id(parsed: Parsed) -> str:
    numbers = [int(lesson.id[2:]) for lesson in parsed.lessons]
    return f"L-{max(numbers, default=0) + 1:04d}"


def _append(lines: list[str], nl: str, new_id: str, entry: dict[str, str]) -> list[str]:
    lines = list(lines)
    if not lines:
        lines = [f"# Lessons{nl}", nl, *(f"{line}{nl}" for line in INTRO.splitlines())]
    if not lines[-1].endswith("\n"):
        lines[-1] += nl
    if lines[-1].strip():
        lines.append(nl)
    fields = {"status": "active", "date": date.today().isoformat(), **entry}
    lines.append(f"## {new_id}: {entry['lesson']}{nl}")
    lines += [f"- {key}: {fields[key]}{nl}" for key in FIELDS if key in fields]
    return lines


def _set_fields(parsed: Parsed, lesson: Lesson, values: dict[str, str]) -> list[str]:
    """Change field lines in place; fields the lesson lacks go at the end of its field list."""
    lines = list(parsed.lines)
    inserted = []
    for key, value in values.items():
        if key in lesson.field_lines:
            lines[lesson.field_lines[key]] = f"- {key}: {value}{parsed.newline}"
        else:
            inserted.append(f"- {key}: {value}{parsed.newline}")
    end = lesson.end
    if end == len(lines) and lines and not lines[-1].endswith("\n"):
        lines[-1] += parsed.newline
    lines[end:end] = inserted
    return lines


def _write(path: str | Path, change, why: str = "lessons", writer: WriteService | None = None,
           caller: Caller | None = None, request_id: str | None = None) -> WriteOutcome:
    """Through the write service: lock, re-read, apply one change, verify nothing was lost, replace."""
    from vault_index.services.writes.write import Caller, writer_for_file

    writer = writer or writer_for_file(path)
    caller = caller or Caller.local(writer.vault)
    made: dict[str, str] = {}

    def apply(old_text: str | None) -> str:
        before = parse(old_text or "")
        lines, made["id"] = change(before)
        _verify_kept(before, parse("".join(lines)), Path(path))
        return "".join(lines)

    return writer.update_file(caller, str(path), apply, why=why, request_id=request_id,
                              result=lambda: {"id": made.get("id")}, operation="lesson")


def _verify_kept(before: Parsed, after: Parsed, path: Path) -> None:
    # Trigger: any write to the lessons file.
    # Why: lessons are the project's memory of its mistakes; losing one silently is the worst outcome.
    # Outcome: the file is replaced only if every earlier lesson is still there, words unchanged.
    kept = {(x.id, x.title, x.get("lesson"), x.get("cause"), x.get("detect")) for x in after.lessons}
    for lesson in before.lessons:
        key = (lesson.id, lesson.title, lesson.get("lesson"), lesson.get("cause"), lesson.get("detect"))
        if key not in kept:
            raise VaultIndexError(
                f"refusing to write {path}: {lesson.id} would change or disappear; nothing was written"
            )
