"""How a project's series of decision records writes them, read from its newest record.

A new record continues the series the project already has, in its form: where it lies, how wide its
numbers are, its title line, its status and date (lines, a `## Status` section, or YAML frontmatter,
MADR 4) and its sections in its order, a `## Consequences` section included (adr-tools). Issue 39:
a record in our own form inside a team's adr-tools series read as a stranger's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# Where projects keep their records, most common first. A project that already has a series in one
# of them gets its next record there: a second series in docs/adr beside docs/decisions/0001-0003
# splits the project's decisions in two (issue 39).
LAYOUTS = ("docs/adr", "docs/decisions", "doc/adr", "adr", "docs/architecture/decisions")
DEFAULT_WIDTH = 4  # 0001-...; a series numbered 001-... keeps its three digits

NUMBERED = re.compile(r"^(?P<number>\d{3,4})-")
# `# 0004: Title` (ours) or `# 4. Title` (adr-tools, MADR): a series keeps the form it has
TITLE = re.compile(r"^# (?P<number>\d{1,4})(?P<separator>: |\. )(?P<title>\S.*?)\s*$")
# `# Title` with no number (MADR): the number is the file name's
UNNUMBERED = re.compile(r"^# (?P<title>\S.*?)\s*$")
SECTION = re.compile(r"^## (?P<name>.+?)\s*$")
HEADING = re.compile(r"^(?P<level>#{2,3}) (?P<name>.+?)\s*$")
# A record's field line in the forms series write it: `Date: 2026-02-03`, `* Date: ...`, `- **Date:** ...`
FIELD_LINE = re.compile(r"^(?P<lead>[ ]{0,3}(?:[*+-][ \t]+)?(?P<strong>\*\*|__)?(?P<name>date|status)"
                        r"(?::(?P=strong)|(?P=strong):|:)[ \t]*)\S", re.IGNORECASE)
LIST_ITEM = re.compile(r"^[ ]{0,3}[*+-][ \t]")
TOP_FIELD = re.compile(r"^(?P<key>[A-Za-z][\w-]*):[ \t]*(?P<value>.*?)\s*$")  # a frontmatter line, unindented
FIELDS = ("status", "date")  # the frontmatter keys a record of ours fills in

# Our parts, the word a series' heading for each holds (MADR: `## Considered Options`), and our heading
PARTS = (("context", "context", "## Context"), ("options", "option", "## Options measured"),
         ("decision", "decision", "## Decision"), ("consequences", "consequence", "## Consequences"))
OURS = tuple((part, heading) for part, _, heading in PARTS[:3])
# Where a series has no options section (adr-tools), the options close its context section
FOLDED_OPTIONS = "### Options considered"


@dataclass(frozen=True)
class Form:
    """A series' form. `separator`: ": " (ours, `# 0004: Title`), ". " (`# 4. Title`) or "" (no number);
    `dated`: (the date line's lead, whether it follows the status) or None; `said`: how the status is
    said ("## Status", a field's lead, or `Status: `); `sections`: (part, heading) in the series' order;
    `fields`: the frontmatter keys among FIELDS, in its order, or None for a record without frontmatter."""

    width: int = DEFAULT_WIDTH
    separator: str = ": "
    padded: bool = True
    dated: tuple[str, bool] | None = None
    said: str = "Status: "
    sections: tuple[tuple[str, str], ...] = OURS
    fields: tuple[str, ...] | None = None
    newest: str = ""


def split(text: str) -> tuple[dict | None, list[str]]:
    """(a record's frontmatter fields or None, its lines from the title on).

    Only the top-level `key: value` lines are read (status, date): scripts/adr.py runs with
    `python -I -S`, where PyYAML (services/vault/frontmatter.py) is not importable."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        return None, lines
    end = next((i for i, line in enumerate(lines[1:], 1) if line.rstrip("\r") in ("---", "...")), None)
    if end is None:
        return None, lines
    fields = {m["key"]: m["value"].strip("\"'") for line in lines[1:end] if (m := TOP_FIELD.match(line))}
    body = lines[end + 1:]
    while body and not body[0].strip():
        body.pop(0)  # MADR 4: a blank line between the frontmatter and the title
    return fields, body


def numbered(folder: Path) -> list[str]:
    """The number of each record in `folder`, as written (`0003`, `003`)."""
    return [m["number"] for p in folder.glob("*.md") if (m := NUMBERED.match(p.name))] if folder.is_dir() else []


def series_folder(root: str | Path) -> Path:
    """The folder a project's next record goes in: the layout in LAYOUTS that already holds the most
    numbered records (the first such layout on a tie), else docs/adr."""
    root = Path(root)
    counts = [(len(numbered(root / layout)), -i, layout) for i, layout in enumerate(LAYOUTS)]
    count, _, layout = max(counts)
    return root / (layout if count else LAYOUTS[0])


def number_width(folder: str | Path) -> int:
    """How many digits the series in `folder` writes (the widest it has), DEFAULT_WIDTH for a new one."""
    return max((len(n) for n in numbered(Path(folder))), default=DEFAULT_WIDTH)


def next_number(folder: str | Path) -> int:
    return max((int(n) for n in numbered(Path(folder))), default=0) + 1


def read_form(folder: str | Path) -> Form:
    """The form of the series in `folder`, from its newest record (highest number); ours for none."""
    folder = Path(folder)
    newest = max(((int(m["number"]), p) for p in folder.glob("*.md") if (m := NUMBERED.match(p.name))),
                 default=None) if folder.is_dir() else None
    try:
        fields, lines = split(newest[1].read_text(encoding="utf-8")) if newest else (None, [])
    except (OSError, UnicodeDecodeError):
        fields, lines = None, []
    width = number_width(folder)
    title = TITLE.match(lines[0]) if lines else None
    if not lines or (title is None and not UNNUMBERED.match(lines[0])) or (title and title["separator"] == ": "):
        return Form(width=width)  # none, unreadable, or ours
    separator, padded = ("", False) if title is None else (
        title["separator"], len(title["number"]) == len(NUMBERED.match(newest[1].name)["number"]))
    kept = tuple(key for key in (fields or {}) if str(key).lower() in FIELDS)
    return Form(width=width, separator=separator, padded=padded, dated=_date_form(lines),
                said=_status_form(lines), sections=read_sections(lines), fields=kept if fields is not None else None,
                newest=newest[1].name)


def _date_form(lines: list[str]) -> tuple[str, bool] | None:
    """(the lead of the date line, whether it comes after the status), read above the first section
    other than `## Status`, where adr-tools (`Date:` above `## Status`) and MADR (`* Date:` below
    `* Status:`) put it; None when there is none."""
    status_at = date = None
    for at, line in enumerate(lines[1:], 1):
        if (section := SECTION.match(line)) and section["name"].lower() != "status":
            break
        field = FIELD_LINE.match(line)
        if section or (field and field["name"].lower() == "status"):
            status_at = at if status_at is None else status_at
        elif field and date is None:
            date = (field["lead"], status_at is not None)
    return date


def _status_form(lines: list[str]) -> str:
    """"## Status" (adr-tools: a section holding "Accepted"), a field's lead as written (`* Status: `,
    MADR), or ours, `Status: `."""
    for line in lines[1:]:
        if section := SECTION.match(line):
            if section["name"].lower() == "status":
                return "## Status"
            break
        if (field := FIELD_LINE.match(line)) and field["name"].lower() == "status":
            return field["lead"]
    return "Status: "


def read_sections(lines: list[str]) -> tuple[tuple[str, str], ...]:
    """(part, heading) in the record's order: for each part, the first heading holding its word after
    the previous part's (MADR's `## Decision Drivers` comes before its options, `## Decision Outcome`
    after). Consequences may be a `###` inside the decision (MADR); a missing context or decision is
    ours; missing options fold into the context (FOLDED_OPTIONS)."""
    headings = [(m["level"], m["name"]) for line in lines[1:] if (m := HEADING.match(line))]
    found, after = {}, 0
    for part, word, _ in PARTS:
        at = next((i for i in range(after, len(headings)) if word in headings[i][1].lower()
                   and (headings[i][0] == "##" or part == "consequences")), None)
        if at is not None:
            level, name = headings[at]
            found[part] = f"## {name}" if level == "##" else "### " + (
                name if name.lower() == "consequences" else "Consequences")  # MADR 2: Positive/Negative
            after = at + 1
    found.setdefault("context", "## Context")
    found.setdefault("decision", "## Decision")
    return tuple((part, found[part]) for part, _, _ in PARTS if part in found)


def render(number: int, title: str, parts: dict[str, str], status: str, form: Form, today: str) -> str:
    """The record's text in the series' form; `parts`: context, options, decision and, optionally,
    consequences (an `## Consequences` after the decision where the series has none)."""
    shown = "" if not form.separator else f"{number:0{form.width}d}" if form.padded else str(number)
    head = [f"# {shown}{form.separator}{title}"]
    if form.fields:
        values = {"status": status, "date": today}
        head.insert(0, "---\n" + "".join(f"{key}: {values[key.lower()]}\n" for key in form.fields) + "---")
    if form.fields is None or "status" not in [key.lower() for key in form.fields]:
        stated = (f"## Status\n\n{status.capitalize()}" if form.said == "## Status" else f"{form.said}{status}")
        head.append(stated)
        if form.dated:
            dated = f"{form.dated[0]}{today}"
            if LIST_ITEM.match(dated) and LIST_ITEM.match(stated):  # one list (MADR): consecutive lines
                head[-1] = f"{stated}\n{dated}" if form.dated[1] else f"{dated}\n{stated}"
            else:  # adr-tools: `Date:` a paragraph of its own above `## Status`
                head.insert(len(head) if form.dated[1] else len(head) - 1, dated)
    sections = dict(form.sections)
    texts = dict(parts)
    if "options" not in sections:
        texts["context"] = f"{texts['context']}\n\n{FOLDED_OPTIONS}\n\n{texts.pop('options')}"
    if texts.get("consequences") and "consequences" not in sections:
        sections["consequences"] = "## Consequences"
    body = []
    for part, heading in sections.items():
        if not texts.get(part):
            continue
        body.append(f"\n\n{heading}\n\n{texts[part]}")  # a `###` lies inside the section before it
    return "\n\n".join(head) + "".join(body) + "\n"
