"""Decision records: numbered markdown files, written once, checked, linked in the graph.

    docs/adr/0003-short-slug.md         (or the series the project already has: see `series_folder`)
    # 0003: Title
    Status: accepted                    (optional)
    ## Context
    ## Options measured                 (or ## Options)
    ## Decision

A record is never overwritten: a changed decision gets a new record that says what it replaces.
Records are written through the write service (`update_file`, exclusive): a docs/adr that is a
symlink out of the project is refused, and linking the graph is a late stage whose failure is a
notice on a `written` outcome, so a retry never writes a second record.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vault_index.errors import UsageError
from vault_index.services.graph import graph
from vault_index.services.vault.text import unsafe_char

if TYPE_CHECKING:
    from vault_index.services.writes.write import Caller, WriteOutcome, WriteService

STATUSES = ("proposed", "accepted", "superseded", "deprecated", "rejected")
MAX_TITLE_CHARS = 150  # "ADR NNNN: " + title stays within the graph's name limit
MAX_SECTION_CHARS = 20_000
MAX_SLUG_CHARS = 60
MAX_NUMBER_TRIES = 50  # another writer took the number we picked: try the next one, this many times
SECTIONS = (("Context",), ("Options measured", "Options"), ("Decision",))
# Our three parts, by the word a series' heading for each holds (MADR: `## Considered Options`)
PARTS = (("context", "Context"), ("option", "Options measured"), ("decision", "Decision"))

# Where projects keep their records, most common first. A project that already has a series in one
# of them gets its next record there: a second series in docs/adr beside docs/decisions/0001-0003
# splits the project's decisions in two (issue 39).
LAYOUTS = ("docs/adr", "docs/decisions", "doc/adr", "adr", "docs/architecture/decisions")
DEFAULT_WIDTH = 4  # 0001-...; a series numbered 001-... keeps its three digits

FILE_NAME = re.compile(r"^(?P<number>\d{3,4})-(?P<slug>[a-z0-9]+(?:-[a-z0-9]+)*)\.md$")
NUMBERED = re.compile(r"^(?P<number>\d{3,4})-")
# `# 0004: Title` (ours) or `# 4. Title` (adr-tools, MADR): a series keeps the form it has
TITLE = re.compile(r"^# (?P<number>\d{1,4})(?P<separator>: |\. )(?P<title>\S.*?)\s*$")
# `# Title` with no number (MADR): the number is the file name's
UNNUMBERED = re.compile(r"^# (?P<title>\S.*?)\s*$")
SECTION = re.compile(r"^## (?P<name>.+?)\s*$")
# A record number the agent put in its title (`4. `, `0004: `, `ADR 4: `, `ADR-4 `): the tool numbers
# the record itself, so it is dropped (it made `# 5. 4. Title`). A bare number needs its `.` or `:`, or a
# leading zero (`0005 Title`: "2024 roadmap" keeps its year).
GIVEN_NUMBER = re.compile(r"^(?:adr[ _-]?\d{1,4}\s*[.:-]?|\d{1,4}[.:]|0\d{1,3}(?=\s))(?:\s+|$)", re.IGNORECASE)
STATUS = re.compile(r"^Status:\s*(?P<status>.*?)\s*$", re.IGNORECASE)
TOP_HEADING = re.compile(r"^#{1,2} ", re.MULTILINE)
# A record's field line in the forms series write it: `Date: 2026-02-03`, `* Date: ...`, `- **Date:** ...`
FIELD_LINE = re.compile(r"^(?P<lead>[ ]{0,3}(?:[*+-][ \t]+)?(?P<strong>\*\*|__)?(?P<name>date|status)"
                        r"(?::(?P=strong)|(?P=strong):|:)[ \t]*)\S", re.IGNORECASE)
LIST_ITEM = re.compile(r"^[ ]{0,3}[*+-][ \t]")
NOT_RECORDS = {"readme.md", "template.md"}


def slugify(title: str) -> str:
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")
    return slug[:MAX_SLUG_CHARS].rstrip("-") or "decision"


def _numbered(folder: Path) -> list[str]:
    """The number of each record in `folder`, as written (`0003`, `003`)."""
    return [m["number"] for p in folder.glob("*.md") if (m := NUMBERED.match(p.name))] if folder.is_dir() else []


def series_folder(root: str | Path) -> Path:
    """The folder a project's next record goes in: the layout in LAYOUTS that already holds the most
    numbered records (the first such layout on a tie), else docs/adr."""
    root = Path(root)
    counts = [(len(_numbered(root / layout)), -i, layout) for i, layout in enumerate(LAYOUTS)]
    count, _, layout = max(counts)
    return root / (layout if count else LAYOUTS[0])


def number_width(folder: str | Path) -> int:
    """How many digits the series in `folder` writes (the widest it has), DEFAULT_WIDTH for a new one."""
    return max((len(n) for n in _numbered(Path(folder))), default=DEFAULT_WIDTH)


def next_number(folder: str | Path) -> int:
    return max((int(n) for n in _numbered(Path(folder))), default=0) + 1


def _newest(folder: str | Path) -> tuple[Path | None, list[str]]:
    """The series' newest record (highest number) and its lines; (None, []) for none or unreadable."""
    newest = max(((int(m["number"]), p) for p in Path(folder).glob("*.md") if (m := NUMBERED.match(p.name))),
                 default=None) if Path(folder).is_dir() else None
    try:
        return (newest[1], newest[1].read_text(encoding="utf-8").split("\n")) if newest else (None, [])
    except (OSError, UnicodeDecodeError):
        return None, []


def title_form(folder: str | Path) -> tuple[str, bool]:
    """(separator, zero-padded) of the newest record's first line: `# 4. Title` gives (". ", False);
    `# Title` with no number gives ("", False); ours, `# 0004: Title`, for a new series or another form."""
    path, lines = _newest(folder)
    match = TITLE.match(lines[0]) if lines else None
    if match is None:
        return ("", False) if lines and UNNUMBERED.match(lines[0]) else (": ", True)
    return match["separator"], len(match["number"]) == len(NUMBERED.match(path.name)["number"])


def date_form(folder: str | Path) -> tuple[str, bool] | None:
    """(the lead of the newest record's date line, whether it comes after the status), or None when
    it has none (ours has none). Read above its first section other than `## Status`, where
    adr-tools (`Date:` above `## Status`) and MADR (`* Date:` below `* Status:`) put it."""
    _, lines = _newest(folder)
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


def status_form(folder: str | Path) -> str:
    """How the newest record says its status: "## Status" (adr-tools: a section holding "Accepted"),
    a field's lead as it writes it (`* Status: `, MADR), or ours, `Status: `."""
    _, lines = _newest(folder)
    for line in lines[1:]:
        if section := SECTION.match(line):
            if section["name"].lower() == "status":
                return "## Status"
            break
        if (field := FIELD_LINE.match(line)) and field["name"].lower() == "status":
            return field["lead"]
    return "Status: "


def section_names(folder: str | Path) -> tuple[str, str, str]:
    """The headings of our three parts as the newest record names them (`## Context and Problem
    Statement`, `## Considered Options`, `## Decision Outcome`); ours for a part it lacks or in our form."""
    _, lines = _newest(folder)
    if not lines or ((title := TITLE.match(lines[0])) and title["separator"] == ": "):
        return PARTS[0][1], PARTS[1][1], PARTS[2][1]
    return _parts([m["name"] for line in lines[1:] if (m := SECTION.match(line))])


def _parts(headings: list[str]) -> tuple[str, str, str]:
    """For each part, the first heading holding its word after the previous part's heading (MADR's
    `## Decision Drivers` comes before its options, its `## Decision Outcome` after); ours if none."""
    found, after = [], 0
    for word, ours in PARTS:
        at = next((i for i in range(after, len(headings)) if word in headings[i].lower()), None)
        found.append(ours if at is None else headings[at])
        after = after if at is None else at + 1
    return found[0], found[1], found[2]


def is_own_series(folder: str | Path) -> bool:
    """Whether every record of the folder opens in this tool's own form, `# NNNN: Title`: a series it
    started. A team's adr-tools or MADR series (`# 4. Title`, frontmatter) is theirs, in their form."""
    for path in Path(folder).glob("*.md") if Path(folder).is_dir() else ():
        if path.name.lower() in NOT_RECORDS:
            continue
        try:
            first = path.read_text(encoding="utf-8").split("\n", 1)[0]
        except (OSError, UnicodeDecodeError):
            continue  # check_adrs says so, in a series of ours
        match = TITLE.match(first)
        if match is None or match["separator"] != ": ":
            return False
    return True


def create(folder: str | Path, title: str, context: str, options: str, decision: str,
           status: str = "accepted", **write) -> Path:
    """Write <folder>/NNNN-slug.md with the next free number; returns its path (raises if refused)."""
    from vault_index.services.writes.write import require_ok

    return Path(require_ok(record(folder, title, context, options, decision, status, **write)).result["path"])


def record(folder: str | Path, title: str, context: str, options: str, decision: str, status: str = "accepted", *,
           writer: WriteService | None = None, caller: Caller | None = None, request_id: str | None = None,
           memory_file: str | Path | None = None, relates_to: list[str] | None = None,
           roots: Sequence[str | Path] | None = None) -> WriteOutcome:
    """Write the next record as a write outcome; with `memory_file`, link it in the graph as a late stage.

    result: {"path", "number", and with a memory file "entity", "related", "missing"}. A record is
    created exclusively: when another writer took the number first, the next number is tried.
    """
    from vault_index.services.writes.write import Caller, writer_for_file

    folder = Path(folder)
    title = _title(title)
    if status not in STATUSES:
        raise UsageError(f"status {status!r} is not one of {', '.join(STATUSES)}")
    bodies = [_section(name, text) for name, text in
              (("context", context), ("options", options), ("decision", decision))]
    writer = writer or writer_for_file(folder / "0000.md")
    caller = caller or Caller.local(writer.vault)
    linked: dict = {}
    followups = []
    if memory_file is not None:
        def link(path: Path) -> None:
            linked.update(link_adr(memory_file, path, relates_to or [], roots=roots))
        followups.append(("linked in the memory graph", link))
    outcome = None
    width, form, dated, said = number_width(folder), title_form(folder), date_form(folder), status_form(folder)
    headings = section_names(folder)
    if dated:  # the series dates its records: this one says today's date, in the series' form and place
        dated = (f"{dated[0]}{writer.clock():%Y-%m-%d}", dated[1])
    for _ in range(MAX_NUMBER_TRIES):
        number = next_number(folder)
        if number > 9999:
            raise UsageError(f"{folder} already holds record 9999; start a new folder")
        path = folder / f"{number:0{width}d}-{slugify(title)}.md"
        text = render(number, title, *bodies, status=status, width=width, form=form, dated=dated, said=said,
                      headings=headings)
        outcome = writer.update_file(
            caller, str(path), lambda _old, text=text: text, why=f"ADR {number:0{width}d}: {title}",
            request_id=request_id,
            exclusive=True, followups=followups, operation="adr",
            result=lambda path=path, number=number: {"path": str(path), "number": number, **linked})
        if outcome.status != "stale":
            return outcome
    return outcome


def render(number: int, title: str, context: str, options: str, decision: str, status: str = "accepted",
           width: int = DEFAULT_WIDTH, form: tuple[str, bool] = (": ", True),
           dated: tuple[str, bool] | None = None, said: str = "Status: ",
           headings: Sequence[str] = (PARTS[0][1], PARTS[1][1], PARTS[2][1])) -> str:
    """The record's text; `form` (title_form): the first line's separator ("" for no number) and whether
    its number is padded; `dated`: (the date line, whether it follows the status line), as the series
    writes it; ours has none; `said` (status_form): how the series says a status; `headings`
    (section_names): the names of the context, options and decision sections."""
    separator, padded = form
    shown = "" if not separator else f"{number:0{width}d}" if padded else str(number)
    stated = f"## Status\n\n{status.capitalize()}" if said == "## Status" else f"{said}{status}"
    head = [f"# {shown}{separator}{title}", stated]
    if dated:
        if LIST_ITEM.match(dated[0]) and LIST_ITEM.match(stated):  # one list (MADR): consecutive lines
            head[1] = f"{stated}\n{dated[0]}" if dated[1] else f"{dated[0]}\n{stated}"
        else:  # adr-tools: `Date:` a paragraph of its own above `## Status`
            head.insert(2 if dated[1] else 1, dated[0])
    parts = zip(headings, (context, options, decision), strict=True)
    body = "".join(f"\n\n## {name}\n\n{text}" for name, text in parts)
    return "\n\n".join(head) + body + "\n"


def _title(title: str) -> str:
    """A title the record's first line and the graph's entity name can both hold.

    Checked before the record is written: a title the graph refused at link time left a record
    on disk that no entity names, and an agent retrying wrote it again under the next number.
    """
    title = GIVEN_NUMBER.sub("", (title or "").strip()).strip()
    if not title:
        raise UsageError("the title is empty; name the decision in a few words")
    if bad := unsafe_char(title):
        raise UsageError(f"the title must be one line of plain text but holds {bad} (a line break or control "
                         "character); remove it")
    if len(title) > MAX_TITLE_CHARS:
        raise UsageError(f"the title is over {MAX_TITLE_CHARS} characters; shorten it")
    if problem := graph.name_problem(f"ADR 9999: {title}"):
        raise UsageError(f"the title cannot name the record in the memory graph: its name {problem}")
    return title


def _section(name: str, text: str) -> str:
    text = (text or "").strip().replace("\r\n", "\n").replace("\r", "\n")
    if bad := unsafe_char(text, allow="\n\t"):
        # U+2028 and the like end a line for str.splitlines(), so one could slip a '## ' heading in
        raise UsageError(f"the {name} section holds {bad} (a control character or a line break other than a "
                         "newline); remove it or use a plain newline")
    if not text:
        raise UsageError(f"the {name} section is empty; every record needs context, options and a decision")
    if len(text) > MAX_SECTION_CHARS:
        raise UsageError(f"the {name} section is over {MAX_SECTION_CHARS} characters; shorten it")
    if TOP_HEADING.search(text):
        raise UsageError(f"the {name} section has a '#' or '##' heading; use '###' inside a section")
    return text


def check_adrs(folder: str | Path) -> list[str]:
    """Problems in the decision records, one line each; empty when all is well (or no folder)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    problems, seen = [], {}
    for path in sorted(folder.glob("*.md")):
        if path.name.lower() in NOT_RECORDS:
            continue
        name = FILE_NAME.match(path.name)
        if not name:
            problems.append(f"{path}: file name must be NNNN-lowercase-slug.md, e.g. 0003-vector-backend.md")
        numbered = NUMBERED.match(path.name)
        if numbered:
            seen.setdefault(int(numbered["number"]), []).append(path.name)
        problems += [f"{path}: {message}" for message in _record_problems(path, numbered)]
    for number, names in seen.items():
        if len(names) > 1:
            problems.append(f"{folder}: number {number:04d} is used by {', '.join(names)}; renumber all but one")
    return problems


def _record_problems(path: Path, numbered: re.Match | None) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").split("\n")  # as written; read_text turns \r\n into \n
    except (OSError, UnicodeDecodeError) as exc:
        return [f"cannot be read as UTF-8 text ({exc})"]
    found = []
    title = TITLE.match(lines[0]) if lines else None
    if not title and not (numbered and lines and UNNUMBERED.match(lines[0])):  # MADR's `# Title`
        found.append("first line must be '# NNNN: Title' (or the series' '# N. Title' or '# Title')")
    elif title and numbered and int(title["number"]) != int(numbered["number"]):
        found.append(f"title says {title['number']} but the file name says {numbered['number']}")
    sections: dict[str, list[str]] = {}  # lines under each heading, as named
    current = None
    for line in lines[1:]:
        if match := SECTION.match(line):
            current = match["name"]
            sections.setdefault(current, [])
        elif current is not None:
            sections[current].append(line)
        elif (status := STATUS.match(line)) and status["status"].split(" ")[0].lower() not in STATUSES:
            found.append(f"status {status['status']!r} is not one of {', '.join(STATUSES)}")
    # a part's section by the word its heading holds, as adr_create names them (section_names)
    for names, present in zip(SECTIONS, _parts(list(sections)), strict=True):
        if present not in sections:
            found.append(f"missing section '## {names[0]}'")
        elif not any(line.strip() for line in sections[present]):
            found.append(f"section '## {present}' is empty")
    return found


def entity_name(path: str | Path) -> str:
    """The graph name of a record: 'ADR 0003: Title', read from its first line (the number from the
    file name, as written, for MADR's `# Title`)."""
    first = Path(path).read_text(encoding="utf-8").split("\n", 1)[0]
    match = TITLE.match(first)
    if match:
        return f"ADR {match['number']}: {match['title']}"
    if (numbered := NUMBERED.match(Path(path).name)) and (untitled := UNNUMBERED.match(first)):
        return f"ADR {numbered['number']}: {untitled['title']}"
    raise UsageError(f"{path} does not start with '# NNNN: Title', '# N. Title' or '# Title'; fix its first line")


def link_adr(graph_file: str | Path, adr_path: str | Path, relates_to: list[str] | None = None, *,
             roots: Sequence[str | Path] | None = None) -> dict:
    """Add the record to the memory graph as a decision, related to the entities it decides.

    `roots`: where the record may lie to be a source (graph.create); None for anywhere.
    Names in `relates_to` that the graph does not have are returned in `missing`, not created:
    a relation to an entity nobody described would be a fact without a source.
    Returns {"entity", "related", "missing", "memory_file"}.
    """
    adr_path = Path(adr_path).resolve()
    name = entity_name(adr_path)
    known = graph.load(graph_file)
    related, missing = [], []
    for target in dict.fromkeys(t.strip() for t in relates_to or [] if t.strip()):
        found = known.entity(target)
        (related if found else missing).append(found["name"] if found else target)
    source = str(adr_path)
    graph.create(
        graph_file,
        entities=[{"name": name, "entityType": "decision", "source": source}],
        relations=[{"from": name, "to": target, "relationType": "decides", "source": source} for target in related],
        roots=roots,
    )
    return {"entity": name, "related": related, "missing": missing, "memory_file": str(Path(graph_file).expanduser())}
