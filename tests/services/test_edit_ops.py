"""prepend, replace_section and find_replace through the one write service, on a person's plain
notes folder (no vault config: the built-in owner, text-only edits) and in a vault made by
`vault-index init` (stamps, schema, git commit with trailers)."""

from __future__ import annotations

import datetime as dt
import subprocess

import pytest
from vault_index.engine.files import fileio
from vault_index.services.curation.scaffold import scaffold
from vault_index.services.vault.vault import Vault
from vault_index.services.writes.edit_ops import EditRequest, find_heading
from vault_index.services.writes.write import Caller, WriteService

HEAD = "---\ntitle: Setup guide\ntags: [ops,  linux]   # the person's own spacing and comment\n---\n"
BODY = ("# Setup guide\n\nIntro line.\n\n## Install\n\nOld install text.\n\n### Linux\n\napt install x\n\n"
        "### macOS\n\nbrew install x\n\n## Usage\n\nRun it.\n\n```\n## Install\nnot a heading\n```\n\n"
        "Config\n------\n\nsetext heading body.\n\n## Notes\n\nlast words\n")


def git(root, *args) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture(params=["plain", "vault"])
def folder(request, tmp_path, monkeypatch):
    """(root, relative note path, service, caller): a plain notes folder, or an init vault."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    (tmp_path / "gitconfig").write_text("[user]\n\tname = Pat Person\n\temail = pat@example.org\n")
    if request.param == "plain":
        root = tmp_path / "notes"
        root.mkdir()
        rel = "guides/setup.md"
    else:
        root = tmp_path / "vault"
        scaffold(root)
        rel = "research/setup.md"
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    head = HEAD if request.param == "plain" else HEAD.replace("title: Setup guide\n", "title: Setup guide\n"
                                                                "status: draft\ncreated: 2026-01-02\nupdated: "
                                                                "2026-01-02\n")
    (root / rel).write_text(head + BODY)
    if request.param == "vault":
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "the person's note")
    service = WriteService(Vault.open(root), clock=lambda: dt.date(2026, 3, 1))
    return root, rel, service, Caller.local(service.vault, agent="claude-code"), request.param


def version_of(root, rel) -> str:
    return fileio.file_version((root / rel).read_bytes())


def body_of(root, rel) -> str:
    text = (root / rel).read_text()
    return text[text.index("---\n", 4) + 4:]


def test_prepend_adds_the_first_paragraph_and_keeps_the_rest(folder):
    root, rel, service, caller, kind = folder
    outcome = service.edit(caller, EditRequest("prepend", rel, text="TL;DR: install, then run.\n"))
    assert outcome.status == "written", outcome
    assert body_of(root, rel) == "TL;DR: install, then run.\n\n" + BODY
    text = (root / rel).read_text()
    if kind == "plain":  # the person's frontmatter is theirs: not one byte of it changes
        assert text.startswith(HEAD) and outcome.commit is None
    else:  # a vault note is stamped and committed like every other write
        assert "updated: 2026-03-01" in text and "updated_by: agent:claude-code" in text
        (entry, _) = service.history(caller, rel)
        assert (entry["operation"], entry["agent"], entry["commit"]) == ("prepend", "claude-code", outcome.commit)


def test_replace_section_keeps_every_other_section_byte_for_byte(folder):
    root, rel, service, caller, _ = folder
    before = body_of(root, rel)
    outcome = service.edit(caller, EditRequest("replace_section", rel, text="New install text.",
                                               heading="Install", base_version=version_of(root, rel)))
    assert outcome.status == "written", outcome
    after = body_of(root, rel)
    start, end = before.index("## Install\n"), before.index("## Usage\n")
    # the heading's nested subsections belong to it; before and after it nothing moved
    assert after == before[:start] + "## Install\n\nNew install text.\n\n" + before[end:]
    assert "apt install x" not in after and "## Install\nnot a heading" in after  # the fenced one is code


def test_replace_section_by_heading_path_replaces_one_subsection(folder):
    root, rel, service, caller, _ = folder
    before = body_of(root, rel)
    outcome = service.edit(caller, EditRequest("replace_section", rel, text="### Linux\n\ndnf install x\n",
                                               heading="Install > Linux", base_version=version_of(root, rel)))
    assert outcome.status == "written", outcome
    # the repeated heading is not doubled; the sibling subsection and the parent's text stay
    assert body_of(root, rel) == before.replace("apt install x", "dnf install x")


def test_replace_section_finds_setext_headings_and_the_last_section(folder):
    root, rel, service, caller, _ = folder
    before = body_of(root, rel)
    assert service.edit(caller, EditRequest("replace_section", rel, text="config text", heading="## Config",
                                            base_version=version_of(root, rel))).ok
    assert service.edit(caller, EditRequest("replace_section", rel, text="final words", heading="## Notes",
                                            base_version=version_of(root, rel))).ok
    expected = before.replace("setext heading body.", "config text").replace("last words", "final words")
    assert body_of(root, rel) == expected


@pytest.mark.parametrize(("heading", "rule"), [("Deployment", "missing"), ("Install > Windows", "missing"),
                                               ("### Install", "missing")])
def test_replace_section_refuses_a_missing_heading_and_changes_nothing(folder, heading, rule):
    root, rel, service, caller, _ = folder
    before = (root / rel).read_bytes()
    outcome = service.edit(caller, EditRequest("replace_section", rel, text="x", heading=heading,
                                               base_version=version_of(root, rel)))
    assert outcome.status == "invalid" and outcome.problems[0]["rule"] == rule
    assert "## Setup guide > Install (line 5)" in outcome.problems[0]["message"]  # it lists the headings
    assert (root / rel).read_bytes() == before


def test_replace_section_refuses_an_ambiguous_heading_until_named_by_path_or_level(folder):
    root, rel, service, caller, _ = folder
    (root / rel).write_text((root / rel).read_text() + "\n# Appendix\n\n## Install\n\nagain\n")
    before = (root / rel).read_bytes()
    outcome = service.edit(caller, EditRequest("replace_section", rel, text="x", heading="Install",
                                               base_version=version_of(root, rel)))
    assert outcome.status == "invalid" and outcome.problems[0]["rule"] == "ambiguous"
    assert "Appendix > Install" in outcome.problems[0]["message"]
    assert (root / rel).read_bytes() == before
    assert service.edit(caller, EditRequest("replace_section", rel, text="replaced", heading="Appendix > Install",
                                            base_version=version_of(root, rel))).ok
    assert body_of(root, rel).endswith("# Appendix\n\n## Install\n\nreplaced\n")
    assert "Old install text." in body_of(root, rel)


def test_a_stale_version_is_refused_by_every_edit(folder):
    root, rel, service, caller, _ = folder
    stale = version_of(root, rel)
    (root / rel).write_text((root / rel).read_text() + "\nThe person's own edit.\n")
    before = (root / rel).read_bytes()
    for request in (EditRequest("prepend", rel, text="x", base_version=stale),
                    EditRequest("replace_section", rel, text="x", heading="Usage", base_version=stale),
                    EditRequest("find_replace", rel, text="Go", find="Run it.", base_version=stale)):
        outcome = service.edit(caller, request)
        assert outcome.status == "stale", (request.op, outcome)
        assert outcome.version == fileio.file_version(before)
    assert (root / rel).read_bytes() == before


def test_replace_section_must_name_the_version_it_read(folder):
    root, rel, service, caller, _ = folder
    outcome = service.edit(caller, EditRequest("replace_section", rel, text="x", heading="Usage"))
    assert outcome.status == "invalid" and outcome.problems[0]["field"] == "base_version"


def test_find_replace_needs_the_expected_count(folder):
    root, rel, service, caller, _ = folder
    before = (root / rel).read_bytes()
    outcome = service.edit(caller, EditRequest("find_replace", rel, text="y", find="install x"))
    assert outcome.status == "invalid" and "occurs 2 times" in outcome.problems[0]["message"]
    missing = service.edit(caller, EditRequest("find_replace", rel, text="y", find="no such text"))
    assert missing.status == "invalid" and "does not occur" in missing.problems[0]["message"]
    assert (root / rel).read_bytes() == before
    old_body = body_of(root, rel)
    assert service.edit(caller, EditRequest("find_replace", rel, text="install y", find="install x", count=2)).ok
    assert body_of(root, rel) == old_body.replace("install x", "install y")


def test_an_edit_of_a_missing_note_is_not_found_and_makes_no_folder(folder):
    root, _, service, caller, kind = folder
    folder_name = "guides" if kind == "plain" else "research"
    outcome = service.edit(caller, EditRequest("prepend", f"{folder_name}/nested/none.md", text="x"))
    assert outcome.status == "not_found"
    assert not (root / folder_name / "nested").exists()


def test_crlf_notes_keep_their_line_endings(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "w.md").write_bytes(b"# W\r\n\r\n## A\r\n\r\nold\r\n\r\n## B\r\n\r\nkeep\r\n")
    service = WriteService(Vault.open(root))
    caller = Caller.local(service.vault)
    version = fileio.file_version((root / "w.md").read_bytes())
    assert service.edit(caller, EditRequest("replace_section", "w.md", text="new\nlines", heading="A",
                                            base_version=version)).ok
    assert (root / "w.md").read_bytes() == b"# W\r\n\r\n## A\r\n\r\nnew\r\nlines\r\n\r\n## B\r\n\r\nkeep\r\n"


def test_the_heading_rules_as_a_person_reads_them():
    body = "# T\n\n## A\n\ntext\n\n### A1\n\n## B\n\n  ## not at the margin? still CommonMark\n\n> ## quoted\n"
    assert find_heading(body, "A").end == find_heading(body, "B").start  # A1 is inside A
    assert find_heading(body, "a1").path == ("T", "A", "A1")  # letter case and spacing do not matter
    assert find_heading(body, "not at the margin? still CommonMark").level == 2
    styled = "## **Setup** `steps`\n\nx\n\n## In > Out\n\ny\n"
    assert find_heading(styled, "setup steps").start == 0  # emphasis and code marks do not count
    assert find_heading(styled, "In > Out").start == 4  # a heading whose own text holds the separator


def test_a_reader_may_not_edit_and_learns_nothing(tmp_path):
    root = tmp_path / "vault"
    scaffold(root)
    service = WriteService(Vault.open(root))
    reader = Caller("Rex <rex@example.org>", "reader")
    outcome = service.edit(reader, EditRequest("prepend", "drafts/whatever.md", text="x"))
    assert outcome.status == "denied"
    outcome = service.edit(reader, EditRequest("prepend", "research/how-this-vault-works.md", text="x"))
    assert outcome.status == "denied"


def test_a_plain_note_without_frontmatter_gets_none(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "journal.md").write_text("Monday: walked.\n")
    service = WriteService(Vault.open(root))
    caller = Caller.local(service.vault)
    assert service.edit(caller, EditRequest("prepend", "journal.md", text="Tuesday: ran.")).ok
    assert service.edit(caller, EditRequest("find_replace", "journal.md", text="hiked", find="walked")).ok
    assert (root / "journal.md").read_text() == "Tuesday: ran.\n\nMonday: hiked.\n"


# --- issue 36 item 7: outside a curated vault a write changes only the bytes its operation names ---

PERSON_HEAD = ("---\ntitle: Journal   # my own title\ncollection: work   # not a folder, my own word\n"
               "tags: [a, b]\n---\n")


def _plain(tmp_path, rel: str, data: bytes):
    root = tmp_path / "notes"
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(data)
    service = WriteService(Vault.open(root), clock=lambda: dt.date(2026, 3, 1))
    return root, service, Caller.local(service.vault, agent="claude-code")


def test_an_append_in_a_plain_folder_stamps_nothing_and_keeps_the_persons_fields(tmp_path):
    from vault_index.services.writes.write import WriteRequest

    root, service, caller = _plain(tmp_path, "days/j.md", (PERSON_HEAD + "Monday.\n").encode())
    outcome = service.write(caller, WriteRequest("append", "days/j.md", body="Tuesday.\n"))
    assert outcome.status == "written", outcome
    # old code: status, created, updated, updated_by stamped, collection: days, the comments dropped
    assert (root / "days" / "j.md").read_text() == PERSON_HEAD + "Monday.\n\nTuesday.\n"


def test_a_plain_replace_changes_only_the_fields_it_names(tmp_path):
    from vault_index.services.writes.write import WriteRequest

    root, service, caller = _plain(tmp_path, "days/j.md", (PERSON_HEAD + "Monday.\n").encode())
    outcome = service.write(caller, WriteRequest("replace", "days/j.md", frontmatter={"tags": ["c"]},
                                                 base_version=version_of(root, "days/j.md")))
    assert outcome.status == "written", outcome
    assert (root / "days" / "j.md").read_text() == PERSON_HEAD.replace("tags: [a, b]", "tags:\n- c") + "Monday.\n"
    made = service.write(caller, WriteRequest("create", "days/new.md", body="just text\n"))
    assert made.status == "written" and (root / "days" / "new.md").read_text() == "just text\n"


def test_prepend_on_a_note_with_a_byte_order_mark_keeps_its_frontmatter_and_the_mark(tmp_path):
    root, service, caller = _plain(tmp_path, "bom.md", ("\ufeff" + PERSON_HEAD + "# B\n\nbody\n").encode())
    assert service.edit(caller, EditRequest("prepend", "bom.md", text="TL;DR")).status == "written"
    # old code: "TL;DR\n\n\ufeff---\n..." (the frontmatter pushed into the body)
    assert (root / "bom.md").read_bytes() == ("\ufeff" + PERSON_HEAD + "TL;DR\n\n# B\n\nbody\n").encode()
    view = service.read(caller, "bom.md")
    assert view.frontmatter["title"] == "Journal" and view.body.startswith("TL;DR")


def test_replace_section_on_a_cr_only_note_replaces_the_section(tmp_path):
    data = b"---\rtitle: C\r---\r# C\r\r## S\r\rold\r\r## T\r\rkeep\r"
    root, service, caller = _plain(tmp_path, "cr.md", data)
    outcome = service.edit(caller, EditRequest("replace_section", "cr.md", text="new\nlines", heading="S",
                                               base_version=fileio.file_version(data)))
    assert outcome.status == "written", outcome
    # old code: the whole note turned to LF with "new" appended after "keep"
    assert (root / "cr.md").read_bytes() == b"---\rtitle: C\r---\r# C\r\r## S\r\rnew\rlines\r\r## T\r\rkeep\r"


def test_the_person_own_collection_in_a_vault_is_still_the_folder(tmp_path):
    """In a curated vault a note's collection is where it lies: the stamps and that rule stay."""
    from vault_index.services.writes.write import WriteRequest

    root = tmp_path / "vault"
    scaffold(root)
    (root / "research" / "x.md").write_text("---\ntitle: X\ncollection: research\nstatus: draft\n---\nbody\n")
    service = WriteService(Vault.open(root), clock=lambda: dt.date(2026, 3, 1))
    caller = Caller.local(service.vault, agent="claude-code")
    assert service.write(caller, WriteRequest("append", "research/x.md", body="more")).status == "written"
    assert "updated: 2026-03-01" in (root / "research" / "x.md").read_text()


# --- issue 36 item 11: a request's work is bounded by the note's size and structure ---


def test_replace_section_on_a_note_of_sixty_thousand_headings_is_refused_before_any_parse(tmp_path):
    import time

    from vault_index.services.writes.note_limits import MAX_NOTE_HEADINGS

    body = "".join(f"## h{i}\n\nx\n\n" for i in range(60_000))
    root, service, caller = _plain(tmp_path, "big.md", body.encode())
    started = time.perf_counter()
    outcome = service.edit(caller, EditRequest("replace_section", "big.md", text="new", heading="h59990",
                                               base_version=fileio.file_version(body.encode())))
    elapsed = time.perf_counter() - started
    assert outcome.status == "invalid" and "replace the note whole" in outcome.problems[0]["message"], outcome
    assert elapsed < 2.0, elapsed  # old code: 19-35 s holding the server's lock (36 s here)
    few = "".join(f"## h{i}\n\nx\n\n" for i in range(MAX_NOTE_HEADINGS - 10))
    (root / "few.md").write_text(few)
    started = time.perf_counter()
    assert service.edit(caller, EditRequest("replace_section", "few.md", text="new", heading="h5",
                                            base_version=version_of(root, "few.md"))).status == "written"
    assert time.perf_counter() - started < 5.0  # the largest note it edits: bounded (about 0.5 s here)


def test_a_write_may_not_make_a_note_of_more_headings_than_the_limit(tmp_path):
    from vault_index.services.writes.note_limits import MAX_NOTE_HEADINGS
    from vault_index.services.writes.write import WriteRequest

    root, service, caller = _plain(tmp_path, "small.md", b"# Small\n")
    many = "".join(f"# h{i}\n" for i in range(MAX_NOTE_HEADINGS + 1))
    made = service.write(caller, WriteRequest("create", "made.md", body=many))
    appended = service.write(caller, WriteRequest("append", "small.md", body=many))
    assert (made.status, appended.status) == ("invalid", "invalid")  # old code: written, then 12 s to index
    assert "split it into several notes" in made.problems[0]["message"]
    assert not (root / "made.md").exists() and (root / "small.md").read_text() == "# Small\n"


def test_a_long_list_note_is_not_parsed_by_replace_section(tmp_path):
    body = "# T\n\n## S\n\nx\n\n" + "".join(f"- item {i}\n" for i in range(150_000))
    root, service, caller = _plain(tmp_path, "list.md", body.encode())
    outcome = service.edit(caller, EditRequest("replace_section", "list.md", text="new", heading="S",
                                               base_version=fileio.file_version(body.encode())))
    assert outcome.status == "invalid" and "150,007 lines" in outcome.problems[0]["message"]  # old code: 10-15 s


def test_headings_are_found_in_one_pass():
    body = "# T\n\n" + "".join(f"## h{i}\n\nx\n\n### h{i}.1\n\ny\n\n" for i in range(500))
    found = find_heading(body, "h499")
    assert (found.level, found.end) == (2, len(body.split("\n")))
    assert find_heading(body, "h3").end == find_heading(body, "h4").start
    assert find_heading(body, "h3 > h3.1").end == find_heading(body, "h4").start
    assert find_heading(body, "T").end == len(body.split("\n"))
