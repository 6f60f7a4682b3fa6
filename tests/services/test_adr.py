"""Decision records: numbered, never overwritten, checked, and linked into the memory graph."""

from __future__ import annotations

import shutil

import pytest
from helpers import REPO, write
from vault_index.engine.files import fileio
from vault_index.errors import UsageError
from vault_index.services.curation import adr
from vault_index.services.graph import graph

SECTIONS = {"context": "Two writers met.", "options": "- flock\n- lock file", "decision": "flock where it exists."}


def _copy_repo_adrs(tmp_path):
    folder = tmp_path / "docs" / "adr"
    shutil.copytree(REPO / "docs" / "adr", folder)
    return folder


def test_the_repository_records_pass_the_check():
    records = sorted((REPO / "docs" / "adr").glob("*.md"))
    assert len(records) >= 2
    assert adr.check_adrs(REPO / "docs" / "adr") == []


def test_create_takes_the_next_number_and_writes_every_section(tmp_path):
    folder = _copy_repo_adrs(tmp_path)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    path = adr.create(folder, "Lock files: flock, or O_EXCL on Windows!", **SECTIONS)
    highest = max(int(name[:4]) for name in before)
    assert path == folder / f"{highest + 1:04d}-lock-files-flock-or-o-excl-on-windows.md"
    assert path.read_text() == (
        f"# {highest + 1:04d}: Lock files: flock, or O_EXCL on Windows!\n\nStatus: accepted\n\n"
        "## Context\n\nTwo writers met.\n\n## Options measured\n\n- flock\n- lock file\n\n"
        "## Decision\n\nflock where it exists.\n"
    )
    again = adr.create(folder, "Lock files: flock, or O_EXCL on Windows!", **SECTIONS, status="proposed")
    assert again.name.startswith(f"{highest + 2:04d}-") and "Status: proposed" in again.read_text()
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.name in before} == before  # nothing overwritten
    assert adr.check_adrs(folder) == []
    assert adr.slugify("Ünïcode — only") == "unicode-only" and adr.slugify("???") == "decision"


def test_create_refuses_bad_input_and_writes_nothing(tmp_path):
    folder = tmp_path / "adr"
    cases = [
        ("empty", dict(SECTIONS, title=" ")),
        ("one line", dict(SECTIONS, title="a\nb")),
        ("over 150", dict(SECTIONS, title="x" * 151)),
        ("decision section is empty", dict(SECTIONS, title="t", decision="  \n")),
        ("use '###'", dict(SECTIONS, title="t", options="fine\n## Decision\nsneaky")),
        ("status", dict(SECTIONS, title="t", status="maybe")),
    ]
    for message, kwargs in cases:
        with pytest.raises(UsageError, match=message):
            adr.create(folder, **kwargs)
    assert not folder.exists() or list(folder.iterdir()) == []


def test_a_crash_while_writing_leaves_no_record(tmp_path, monkeypatch):
    folder = tmp_path / "adr"
    folder.mkdir()

    def crash(src, dst, **dir_fds):
        raise OSError("power cut")

    monkeypatch.setattr(fileio.os, "replace", crash)
    with pytest.raises(OSError):
        adr.create(folder, "Title", **SECTIONS)
    assert [p.name for p in folder.iterdir()] == [".vault-index"]  # the write service's lock folder only


GOOD = "# {n}: Title\n\n## Context\n\nc\n\n## Options\n\no\n\n## Decision\n\nd\n"


def test_check_adrs_flags_each_kind_of_problem(tmp_path):
    folder = tmp_path / "adr"
    write(folder, "0001-fine.md", GOOD.format(n="0001"))
    write(folder, "README.md", "# Decision records\n")  # an index page is not a record
    write(folder, "3-short.md", GOOD.format(n="0003"))
    write(folder, "0004-Capital Letters.md", GOOD.format(n="0004"))
    write(folder, "0005-mismatch.md", GOOD.format(n="0006"))
    write(folder, "0007-one.md", GOOD.format(n="0007"))
    write(folder, "0007-two.md", GOOD.format(n="0007"))
    write(folder, "0008-no-title.md", "Title\n\n## Context\n\nc\n\n## Options\n\no\n\n## Decision\n\nd\n")
    write(folder, "0009-no-decision.md", "# 0009: T\n\n## Context\n\nc\n\n## Options measured\n\no\n")
    write(folder, "0010-empty-context.md", "# 0010: T\n\n## Context\n\n## Options\n\no\n\n## Decision\n\nd\n")
    write(folder, "0011-status.md", "# 0011: T\n\nStatus: maybe\n\n" + GOOD.split("\n\n", 1)[1])
    problems = "\n".join(adr.check_adrs(folder))
    expected = [
        "3-short.md: file name must be NNNN-lowercase-slug.md",
        "0004-Capital Letters.md: file name must be",
        "0005-mismatch.md: title says 0006 but the file name says 0005",
        "number 0007 is used by 0007-one.md, 0007-two.md",
        "0008-no-title.md: first line must be '# NNNN: Title'",
        "0009-no-decision.md: missing section '## Decision'",
        "0010-empty-context.md: section '## Context' is empty",
        "0011-status.md: status 'maybe' is not one of",
    ]
    for message in expected:
        assert message in problems, message
    assert "0001-fine" not in problems and "README" not in problems
    assert len(adr.check_adrs(folder)) == len(expected)
    assert adr.check_adrs(tmp_path / "absent") == []


def test_link_adr_adds_the_decision_and_relates_only_known_entities(tmp_path):
    memory = tmp_path / "memory.jsonl"
    note = write(tmp_path, "notes/sensor.md", "# Sensor\n")
    graph.create(memory, entities=[{"name": "Garden sensor", "entityType": "project", "source": str(note)}])
    path = adr.create(tmp_path / "docs" / "adr", "Use flock for writers", **SECTIONS)

    linked = adr.link_adr(memory, path, ["garden SENSOR", "Nobody described this", " "])
    assert linked["entity"] == "ADR 0001: Use flock for writers"
    assert linked["related"] == ["Garden sensor"] and linked["missing"] == ["Nobody described this"]
    view = graph.open_entities(memory, ["ADR 0001: Use flock for writers"])["entities"][0]
    assert view["entityType"] == "decision" and view["source"] == path.resolve().as_posix()
    assert view["relations"] == [{"from": "ADR 0001: Use flock for writers", "to": "Garden sensor",
                                  "relationType": "decides", "source": path.resolve().as_posix()}]
    assert graph.open_entities(memory, ["Nobody described this"])["entities"] == []
    lines = memory.read_text().splitlines()
    adr.link_adr(memory, path, ["Garden sensor"])  # linking again repeats nothing
    assert memory.read_text().splitlines() == lines
    assert graph.check_graph(memory) == []


@pytest.mark.parametrize("char", ["\x1f", "\x00", "\x0b", "\x85", "\u2028", "\u2029", "\t", "\r"],
                         ids=lambda c: f"U+{ord(c):04X}")
def test_a_title_the_graph_would_refuse_is_refused_before_anything_is_written(tmp_path, char):
    folder = tmp_path / "adr"
    memory = tmp_path / "memory.jsonl"
    with pytest.raises(UsageError, match=r"the title .*U\+"):
        adr.create(folder, f"Use X{char}## Decision", **SECTIONS)
    assert not folder.exists() or list(folder.iterdir()) == []
    # the same title would have been refused by the graph at link time, after the write
    with pytest.raises(graph.GraphInputError):
        graph.create(memory, entities=[{"name": f"ADR 0001: Use X{char}## Decision", "entityType": "decision",
                                        "source": str(write(tmp_path, "n.md", "# n\n"))}])


@pytest.mark.parametrize("char", ["\x0b", "\x0c", "\x1c", "\x1e", "\x85", "\u2028", "\u2029", "\x00", "\x1b"],
                         ids=lambda c: f"U+{ord(c):04X}")
def test_a_section_with_a_line_break_other_than_newline_is_refused(tmp_path, char):
    folder = tmp_path / "adr"
    with pytest.raises(UsageError, match=rf"the options section .*U\+{ord(char):04X}"):
        adr.create(folder, "Title", **dict(SECTIONS, options=f"fine{char}## Decision{char}sneaky"))
    assert not folder.exists() or list(folder.iterdir()) == []


def test_sections_keep_tabs_and_newlines_and_lose_carriage_returns(tmp_path):
    path = adr.create(tmp_path / "adr", "Title", **dict(SECTIONS, options="- a\r\n\tindented\r- b"))
    assert "## Options measured\n\n- a\n\tindented\n- b\n\n" in path.read_text()
    assert adr.check_adrs(tmp_path / "adr") == []


def test_a_retry_with_the_same_request_id_answers_the_first_record_and_writes_no_second(tmp_path):
    folder = _copy_repo_adrs(tmp_path)
    count = len(list(folder.glob("*.md")))
    first = adr.record(folder, "Retry once", **SECTIONS, request_id="adr-retry-1")
    again = adr.record(folder, "Retry once", **SECTIONS, request_id="adr-retry-1")
    assert first.status == again.status == "written" and again.result["path"] == first.result["path"]
    assert len(list(folder.glob("*.md"))) == count + 1


@pytest.mark.parametrize("layout", adr.LAYOUTS)
def test_a_record_continues_the_series_the_project_already_has(tmp_path, layout):
    project = tmp_path / "project"
    for number in ("0001", "0002", "0003"):
        write(project / layout, f"{number}-earlier.md", GOOD.format(n=number))
    assert adr.series_folder(project) == project / layout
    path = adr.create(adr.series_folder(project), "Next one", **SECTIONS)
    assert path == project / layout / "0004-next-one.md"
    assert layout == "docs/adr" or not (project / "docs" / "adr").exists()  # no second series beside it


def test_a_three_digit_series_keeps_three_digits_and_the_fullest_layout_wins(tmp_path):
    project = tmp_path / "project"
    write(project / "docs" / "adr", "0001-lonely.md", GOOD.format(n="0001"))
    for number in ("001", "002"):
        write(project / "docs" / "decisions", f"{number}-earlier.md", GOOD.format(n=number))
    write(project / "docs" / "decisions", "README.md", "# Decisions\n")
    folder = adr.series_folder(project)
    assert folder == project / "docs" / "decisions"
    path = adr.create(folder, "Third", **SECTIONS)
    assert path.name == "003-third.md" and path.read_text().startswith("# 003: Third\n")
    assert adr.entity_name(path) == "ADR 003: Third" and adr.check_adrs(folder) == []
    assert adr.series_folder(tmp_path / "empty") == tmp_path / "empty" / "docs" / "adr"


def test_a_record_follows_the_title_form_of_the_series_it_continues(tmp_path):
    """Issue 39: a project whose records read `# 4. Title` (adr-tools, MADR) got `# 0005: Title`."""
    folder = tmp_path / "project" / "docs" / "decisions"
    for number in (3, 4):
        write(folder, f"{number:04d}-earlier-{number}.md", GOOD.replace("# {n}: ", f"# {number}. "))
    path = adr.create(folder, "Queue the imports", **SECTIONS)
    assert path.name == "0005-queue-the-imports.md"
    assert path.read_text().startswith("# 5. Queue the imports\n"), path.read_text()[:40]
    assert adr.check_adrs(folder) == [] and adr.entity_name(path) == "ADR 5: Queue the imports"
    ours = tmp_path / "ours"
    write(ours, "0001-first.md", GOOD.format(n="0001"))
    assert adr.create(ours, "Second", **SECTIONS).read_text().startswith("# 0002: Second\n")  # ours stays ours


# MADR as teams write it: no number in the title (the file name has it), a list of fields, its own headings
UNNUMBERED = ("# Record {n}\n\n* Status: accepted\n* Deciders: Ann\n* Date: 2026-01-0{n}\n\n"
              "## Context and Problem Statement\n\nc\n\n## Decision Drivers\n\n- fast\n\n"
              "## Considered Options\n\n- a\n\n## Decision Outcome\n\nd\n")


def test_a_record_in_a_madr_series_is_titled_listed_and_sectioned_as_the_series_is(tmp_path):
    """Walkthrough B: in a MADR series titled `# Silence alerts`, a new record read `# 0003: Title`, had a
    blank line inside its `* Status:`/`* Date:` list, and sections named Context / Options measured / Decision."""
    import datetime as dt

    folder = tmp_path / "project" / "docs" / "adr"
    for number in (1, 2):
        write(folder, f"{number:04d}-record-{number}.md", UNNUMBERED.format(n=number))
    path = adr.create(folder, "Queue the imports", **SECTIONS)
    lines = path.read_text().split("\n")
    assert lines[:4] == ["# Queue the imports", "", "* Status: accepted", f"* Date: {dt.date.today():%Y-%m-%d}"]
    headings = [line for line in lines if line.startswith("## ")]
    assert headings == ["## Context and Problem Statement", "## Considered Options", "## Decision Outcome"]
    assert lines[lines.index("## Decision Outcome") + 2] == SECTIONS["decision"]
    assert adr.entity_name(path) == "ADR 0003: Queue the imports" and adr.check_adrs(folder) == []
    assert not adr.is_own_series(folder)
    memory = tmp_path / "memory.json"
    linked = adr.record(folder, "Link it", **SECTIONS, memory_file=memory).result
    assert linked["entity"] == "ADR 0004: Link it" and graph.load(memory).entity("ADR 0004: Link it")


# adr-tools (Nygard): the date above `## Status`; MADR 2: a list with the date below the status.
NYGARD = "# {n}. Record {n}\n\n{date}\n\n## Status\n\nAccepted\n\n## Context\n\nc\n\n## Decision\n\nd\n"
MADR = "# {n}. Record {n}\n\n* Status: accepted\n* Deciders: Ann\n{date}\n\n## Context and Problem Statement\n\nc\n"


@pytest.mark.parametrize("template", [NYGARD, MADR], ids=["nygard", "madr"])
@pytest.mark.parametrize("lead", ["Date: ", "* Date: ", "- **Date:** "])
def test_a_record_dates_itself_as_the_series_it_continues_does(tmp_path, template, lead):
    """Walkthrough A: a new record in an adr-tools series (`Date: 2026-02-03` in each) had no date line."""
    import datetime as dt

    folder = tmp_path / "project" / "docs" / "decisions"
    for number in (1, 2, 3):
        write(folder, f"{number:04d}-record-{number}.md", template.format(n=number, date=f"{lead}2026-02-0{number}"))
    lines = adr.create(folder, "Queue the imports", **SECTIONS).read_text().split("\n")
    dated = [line for line in lines if line.startswith(lead)]
    assert dated == [f"{lead}{dt.date.today():%Y-%m-%d}"], lines[:8]
    said = "## Status" if template is NYGARD else "* Status: accepted"  # as the series says it
    status = lines.index(said)
    assert (lines.index(dated[0]) < status) == (template is NYGARD)  # where the series puts it
    assert template is not NYGARD or lines[status + 2] == "Accepted"
    # one list's field lines are consecutive (MADR); adr-tools' `Date:` is a paragraph above `## Status`
    assert lines[status + 1] == dated[0] if template is MADR and lead != "Date: " else "" in lines[1:status]
    context = "## Context" if template is NYGARD else "## Context and Problem Statement"  # the series' name
    assert [line for line in lines if line.startswith("## ") and line != said] == [
        context, "## Decision"]  # ours where the series has no decision; no options section it lacks
    assert lines[lines.index("### Options considered") + 2] == "- flock"  # the options close its context
    assert lines[0] == "# 4. Queue the imports" and adr.entity_name(folder / "0004-queue-the-imports.md")


def test_a_record_in_our_own_template_has_no_date_line(tmp_path):
    folder = tmp_path / "ours"
    write(folder, "0001-first.md", GOOD.format(n="0001"))
    text = adr.create(folder, "Second", **SECTIONS).read_text()
    assert "date" not in text.lower() and text.startswith("# 0002: Second\n\nStatus: accepted\n\n## Context")


@pytest.mark.parametrize("given", ["4. Drop the Redis cache", "0004: Drop the Redis cache",
                                   "ADR 4: Drop the Redis cache", "ADR-4 Drop the Redis cache",
                                   "0004 Drop the Redis cache"])  # walkthrough E: a bare zero-padded number
def test_a_number_the_agent_puts_in_the_title_is_dropped_and_the_series_keeps_one_entity_form(tmp_path, given):
    """Walkthrough C: "4. Drop the Redis cache" made `0005-4-drop-...` titled `# 5. 4. Drop ...` in an
    adr-tools series, and in a MADR series `ADR 4: ...` beside `ADR 0003: ...` in the graph."""
    tools = tmp_path / "tools"
    for number in (3, 4):
        write(tools, f"{number:04d}-earlier-{number}.md", GOOD.replace("# {n}: ", f"# {number}. "))
    path = adr.create(tools, given, **SECTIONS)
    assert path.name == "0005-drop-the-redis-cache.md"
    assert path.read_text().startswith("# 5. Drop the Redis cache\n")
    assert adr.entity_name(path) == "ADR 5: Drop the Redis cache"
    madr = tmp_path / "madr"
    for number in (1, 2, 3):
        write(madr, f"{number:04d}-record-{number}.md", UNNUMBERED.format(n=number))
    path = adr.create(madr, given, **SECTIONS)
    assert path.name == "0004-drop-the-redis-cache.md" and path.read_text().startswith("# Drop the Redis cache\n")
    names = [adr.entity_name(p) for p in sorted(madr.glob("*.md"))]
    assert names == ["ADR 0001: Record 1", "ADR 0002: Record 2", "ADR 0003: Record 3",
                     "ADR 0004: Drop the Redis cache"]


@pytest.mark.parametrize("title", ["3.5 release notes", "2024 roadmap", "Adrian's plan"])
def test_a_title_that_only_begins_with_a_number_keeps_it(tmp_path, title):
    assert adr.create(tmp_path / "adr", title, **SECTIONS).read_text().startswith(f"# 0001: {title}\n")


def test_a_title_that_is_only_a_number_is_empty(tmp_path):
    with pytest.raises(UsageError, match="empty"):
        adr.create(tmp_path / "adr", "ADR 4:", **SECTIONS)


# adr-tools as `adr new` writes it: Context, Decision, Consequences; no options section
ADR_TOOLS = ("# {n}. Record {n}\n\nDate: 2026-02-0{n}\n\n## Status\n\nAccepted\n\n## Context\n\nc\n\n"
             "## Decision\n\nd\n\n## Consequences\n\nq\n")


def test_a_record_in_an_adr_tools_series_has_its_consequences_and_no_options_section(tmp_path):
    """Walkthrough G: a record in an adr-tools series got `## Options measured` and no `## Consequences`."""
    folder = tmp_path / "project" / "doc" / "adr"
    for number in (1, 2):
        write(folder, f"{number:04d}-record-{number}.md", ADR_TOOLS.format(n=number))
    with pytest.raises(UsageError, match=r"'## Consequences' section \(0002-record-2.md\); give consequences"):
        adr.create(folder, "Queue the imports", **SECTIONS)
    assert sorted(p.name for p in folder.iterdir()) == ["0001-record-1.md", "0002-record-2.md"]  # nothing written
    path = adr.create(folder, "Queue the imports", **SECTIONS, consequences="Imports wait in line.")
    lines = path.read_text().split("\n")
    assert [line for line in lines if line.startswith("#")] == [
        "# 3. Queue the imports", "## Status", "## Context", "### Options considered", "## Decision",
        "## Consequences"]
    assert lines[-2] == "Imports wait in line." and lines[lines.index("## Decision") + 2] == SECTIONS["decision"]
    assert adr.check_adrs(folder) == []  # the series' own records need no options section either
    write(folder, "0004-bare.md", "# 4. Bare\n\n## Status\n\nAccepted\n\n## Decision\n\nd\n")
    assert adr.check_adrs(folder) == [f"{folder / '0004-bare.md'}: missing section '## Context'"]


def test_consequences_go_where_the_series_keeps_them_and_after_the_decision_in_ours(tmp_path):
    madr = tmp_path / "madr"  # MADR 3: `### Consequences` inside `## Decision Outcome`
    write(madr, "0001-first.md", UNNUMBERED.format(n=1) + "\n### Consequences\n\n* Good, because q\n\n"
          "## More Information\n\nm\n")
    lines = adr.create(madr, "Second", **SECTIONS, consequences="Good, because it waits.").read_text().split("\n")
    assert [line for line in lines if line.startswith("#")] == [
        "# Second", "## Context and Problem Statement", "## Considered Options", "## Decision Outcome",
        "### Consequences"]
    ours = tmp_path / "ours"
    write(ours, "0001-first.md", GOOD.format(n="0001"))
    text = adr.create(ours, "Second", **SECTIONS, consequences="Two writers wait.").read_text()
    assert text.endswith("## Decision\n\nflock where it exists.\n\n## Consequences\n\nTwo writers wait.\n")
    assert "Consequences" not in adr.create(ours, "Third", **SECTIONS).read_text()  # optional in ours
    assert adr.check_adrs(ours) == []


# MADR 4: status and date in YAML frontmatter, a blank line, then `# Title`
MADR4 = ("---\nstatus: accepted\ndate: 2026-01-0{n}\ndecision-makers: Ann\n---\n\n# Record {n}\n\n"
         "## Context and Problem Statement\n\nc\n\n## Considered Options\n\n* a\n\n## Decision Outcome\n\nd\n")


def test_a_record_in_a_madr_4_series_says_its_status_and_date_in_frontmatter(tmp_path):
    import datetime as dt

    folder = tmp_path / "docs" / "decisions"
    for number in (1, 2):
        write(folder, f"{number:04d}-record-{number}.md", MADR4.format(n=number))
    path = adr.create(folder, "Queue the imports", **SECTIONS, status="proposed")
    text = path.read_text()
    assert text.startswith(f"---\nstatus: proposed\ndate: {dt.date.today():%Y-%m-%d}\n---\n\n# Queue the imports\n\n"
                           "## Context and Problem Statement\n"), text[:120]
    assert "Status:" not in text and adr.entity_name(path) == "ADR 0003: Queue the imports"
    assert adr.check_adrs(folder) == [] and not adr.is_own_series(folder)
    write(folder, "0004-odd.md", MADR4.format(n=4).replace("status: accepted", "status: maybe"))
    assert adr.check_adrs(folder) == [f"{folder / '0004-odd.md'}: status 'maybe' is not one of "
                                      f"{', '.join(adr.STATUSES)}"]
