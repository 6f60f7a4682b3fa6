"""Decision records: numbered markdown files, written once, checked, linked in the graph.

    docs/adr/0003-short-slug.md         (or the series the project already has, in its form: adr_series)
    # 0003: Title
    Status: accepted                    (optional)
    ## Context
    ## Options measured                 (or ## Options)
    ## Decision
    ## Consequences                     (optional)

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
from vault_index.services.curation import adr_series as series
from vault_index.services.curation.adr_series import LAYOUTS, NUMBERED, TITLE, UNNUMBERED, series_folder

__all__ = ["LAYOUTS", "STATUSES", "check_adrs", "create", "entity_name", "is_own_series", "link_adr", "record",
           "series_folder"]
from vault_index.services.graph import graph
from vault_index.services.vault.text import unsafe_char

if TYPE_CHECKING:
    from vault_index.services.writes.write import Caller, WriteOutcome, WriteService

STATUSES = ("proposed", "accepted", "superseded", "deprecated", "rejected")
MAX_TITLE_CHARS = 150  # "ADR NNNN: " + title stays within the graph's name limit
MAX_SECTION_CHARS = 20_000
MAX_SLUG_CHARS = 60
MAX_NUMBER_TRIES = 50  # another writer took the number we picked: try the next one, this many times
FILE_NAME = re.compile(r"^(?P<number>\d{3,4})-(?P<slug>[a-z0-9]+(?:-[a-z0-9]+)*)\.md$")
# A record number the agent put in its title (`4. `, `0004: `, `ADR 4: `, `ADR-4 `): the tool numbers
# the record itself, so it is dropped (it made `# 5. 4. Title`). A bare number needs its `.` or `:`, or a
# leading zero (`0005 Title`: "2024 roadmap" keeps its year).
GIVEN_NUMBER = re.compile(r"^(?:adr[ _-]?\d{1,4}\s*[.:-]?|\d{1,4}[.:]|0\d{1,3}(?=\s))(?:\s+|$)", re.IGNORECASE)
STATUS = re.compile(r"^Status:\s*(?P<status>.*?)\s*$", re.IGNORECASE)
TOP_HEADING = re.compile(r"^#{1,2} ", re.MULTILINE)
NOT_RECORDS = {"readme.md", "template.md"}


def slugify(title: str) -> str:
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")
    return slug[:MAX_SLUG_CHARS].rstrip("-") or "decision"


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
        match = TITLE.match(first)  # ours has no frontmatter: a `---` first line is a team's (MADR 4)
        if match is None or match["separator"] != ": ":
            return False
    return True


def create(folder: str | Path, title: str, context: str, options: str, decision: str,
           status: str = "accepted", consequences: str | None = None, **write) -> Path:
    """Write <folder>/NNNN-slug.md with the next free number; returns its path (raises if refused)."""
    from vault_index.services.writes.write import require_ok

    outcome = record(folder, title, context, options, decision, status, consequences=consequences, **write)
    return Path(require_ok(outcome).result["path"])


def record(folder: str | Path, title: str, context: str, options: str, decision: str, status: str = "accepted", *,
           consequences: str | None = None, writer: WriteService | None = None, caller: Caller | None = None,
           request_id: str | None = None, memory_file: str | Path | None = None,
           relates_to: list[str] | None = None, roots: Sequence[str | Path] | None = None) -> WriteOutcome:
    """Write the next record, in the form of the series it continues (adr_series), as a write outcome;
    with `memory_file`, link it in the graph as a late stage.

    result: {"path", "number", and with a memory file "entity", "related", "missing"}. A record is
    created exclusively: when another writer took the number first, the next number is tried.
    """
    from vault_index.services.writes.write import Caller, writer_for_file

    folder = Path(folder)
    title = _title(title)
    if status not in STATUSES:
        raise UsageError(f"status {status!r} is not one of {', '.join(STATUSES)}")
    parts = {name: _section(name, text) for name, text in
             (("context", context), ("options", options), ("decision", decision))}
    form = series.read_form(folder)
    if consequences is not None and consequences.strip():
        parts["consequences"] = _section("consequences", consequences)
    elif heading := dict(form.sections).get("consequences"):
        raise UsageError(f"the records of {folder} have a '{heading}' section ({form.newest}); give consequences: "
                         "what becomes easier or harder because of this decision")
    writer = writer or writer_for_file(folder / "0000.md")
    caller = caller or Caller.local(writer.vault)
    linked: dict = {}
    followups = []
    if memory_file is not None:
        def link(path: Path) -> None:
            linked.update(link_adr(memory_file, path, relates_to or [], roots=roots))
        followups.append(("linked in the memory graph", link))
    outcome = None
    for _ in range(MAX_NUMBER_TRIES):
        number = series.next_number(folder)
        if number > 9999:
            raise UsageError(f"{folder} already holds record 9999; start a new folder")
        path = folder / f"{number:0{form.width}d}-{slugify(title)}.md"
        text = series.render(number, title, parts, status, form, f"{writer.clock():%Y-%m-%d}")
        outcome = writer.update_file(
            caller, str(path), lambda _old, text=text: text, why=f"ADR {number:0{form.width}d}: {title}",
            request_id=request_id,
            exclusive=True, followups=followups, operation="adr",
            result=lambda path=path, number=number: {"path": str(path), "number": number, **linked})
        if outcome.status != "stale":
            return outcome
    return outcome


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
        fields, lines = series.split(path.read_text(encoding="utf-8"))  # lines from the title on (MADR 4)
    except (OSError, UnicodeDecodeError) as exc:
        return [f"cannot be read as UTF-8 text ({exc})"]
    found = []
    title = TITLE.match(lines[0]) if lines else None
    if not title and not (numbered and lines and UNNUMBERED.match(lines[0])):  # MADR's `# Title`
        found.append("first line must be '# NNNN: Title' (or the series' '# N. Title' or '# Title')")
    elif title and numbered and int(title["number"]) != int(numbered["number"]):
        found.append(f"title says {title['number']} but the file name says {numbered['number']}")
    said = [str(value) for key, value in (fields or {}).items() if str(key).lower() == "status"]
    sections: dict[str, list[str]] = {}  # lines under each heading, as named
    current = None
    for line in lines[1:]:
        if match := series.SECTION.match(line):
            current = match["name"]
            sections.setdefault(current, [])
        elif current is not None:
            sections[current].append(line)
        elif status := STATUS.match(line):
            said.append(status["status"])
    found += [f"status {text!r} is not one of {', '.join(STATUSES)}" for text in said
              if (text.split(" ") or [""])[0].lower() not in STATUSES]
    # each part by the word its heading holds, as adr_create names them; a team's series (adr-tools)
    # may have no options section: required in ours (`# NNNN: Title`) only
    named = dict(series.read_sections(lines))
    required = ("context", "options", "decision") if title and title["separator"] == ": " else ("context", "decision")
    for part in required:
        present = named[part][3:] if named.get(part, "").startswith("## ") else None
        ours = dict(series.OURS)[part][3:]
        if present not in sections:
            found.append(f"missing section '## {ours}'")
        elif not any(line.strip() for line in sections[present]):
            found.append(f"section '## {present}' is empty")
    return found


def entity_name(path: str | Path) -> str:
    """The graph name of a record: 'ADR 0003: Title', read from its title line (the number from the
    file name, as written, for MADR's `# Title`)."""
    _, lines = series.split(Path(path).read_text(encoding="utf-8"))
    first = lines[0] if lines else ""
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
