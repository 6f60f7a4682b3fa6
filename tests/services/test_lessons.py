"""docs/lessons.md: add, supersede, retire, check; nothing is ever lost, on real files."""

from __future__ import annotations

import subprocess
import sys
from datetime import date

import pytest
from helpers import REPO
from vault_index.engine.files import fileio, guarded_replace
from vault_index.errors import NotFoundError, UsageError, VaultIndexError
from vault_index.services.curation import lessons

TODAY = date.today().isoformat()


def _add(path, n: int) -> str:
    return lessons.add(path, f"Directive number {n}", f"cause {n}", f"detect {n}")


def test_add_creates_the_file_in_the_contract_format(tmp_path):
    path = tmp_path / "docs" / "lessons.md"
    new_id = lessons.add(path, "  Check the lock first ", "two writers\nlost a line", "a test", ["io", "locks"])
    assert new_id == "L-0001"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# Lessons\n\n" + lessons.INTRO + "\n")
    assert text.endswith(
        "## L-0001: Check the lock first\n"
        "- status: active\n"
        f"- date: {TODAY}\n"
        "- lesson: Check the lock first\n"
        "- cause: two writers lost a line\n"  # prose fields are stored on one line
        "- detect: a test\n"
        "- tags: io, locks\n"
    )
    assert _add(path, 2) == "L-0002"
    assert lessons.check_lessons(path) == []
    assert [x.id for x in lessons.list_lessons(path)] == ["L-0001", "L-0002"]
    assert lessons.list_lessons(path)[0].as_dict()["tags"] == ["io", "locks"]


def test_ids_continue_after_the_highest_and_gaps_are_fine(tmp_path):
    path = tmp_path / "lessons.md"
    path.write_text(
        "# Lessons\n\n## L-0007: Old one\n- status: active\n- date: 2024-01-02\n- lesson: Old one\n"
        "- cause: c\n- detect: d\n"
    )
    assert _add(path, 1) == "L-0008"
    assert lessons.check_lessons(path) == []


def test_supersede_and_retire_keep_every_lesson(tmp_path):
    path = tmp_path / "lessons.md"
    for n in range(1, 4):
        _add(path, n)
    before = path.read_text()
    new_id = lessons.supersede(path, "l-1", "Directive revised", "learned more", "a better check")
    assert new_id == "L-0004"
    assert lessons.retire(path, "L-0002", "the tool it was about is gone") == "L-0002"

    every = {x.id: x for x in lessons.list_lessons(path, include_all=True)}
    assert list(every) == ["L-0001", "L-0002", "L-0003", "L-0004"]
    old = every["L-0001"]
    assert (old.status, old.get("superseded_by"), old.get("lesson"), old.get("cause")) == (
        "superseded", "L-0004", "Directive number 1", "cause 1")
    assert every["L-0002"].status == "retired" and every["L-0002"].get("retired") == "the tool it was about is gone"
    assert every["L-0004"].status == "active" and every["L-0004"].get("detect") == "a better check"
    assert [x.id for x in lessons.list_lessons(path)] == ["L-0003", "L-0004"]
    # Every original line is still there, in order, apart from the two status lines that changed.
    after = iter(path.read_text().splitlines())
    kept = [line for line in before.splitlines() if line != "- status: active"]
    assert all(line in after for line in kept)  # a subsequence: `in` advances the iterator
    assert lessons.check_lessons(path) == []


def test_refusals_leave_the_file_untouched(tmp_path):
    path = tmp_path / "lessons.md"
    _add(path, 1)
    _add(path, 2)
    lessons.supersede(path, "L-0001", "Newer", "c", "d")
    lessons.retire(path, "L-0002", "moot")
    before = path.read_bytes()
    cases = [
        (UsageError, "empty", lambda: lessons.add(path, "  ", "c", "d")),
        (UsageError, "one line", lambda: lessons.add(path, "two\nlines", "c", "d")),
        (UsageError, "cause is empty", lambda: lessons.add(path, "x", "\n ", "d")),
        (UsageError, "detect is empty", lambda: lessons.add(path, "x", "c", "")),
        (UsageError, "over 300", lambda: lessons.add(path, "x" * 301, "c", "d")),
        (UsageError, "tag", lambda: lessons.add(path, "x", "c", "d", ["a, b"])),
        (UsageError, "not a lesson id", lambda: lessons.retire(path, "X-1", "why")),
        (NotFoundError, "L-0042 is not in", lambda: lessons.retire(path, "L-0042", "why")),
        (UsageError, "reason is empty", lambda: lessons.retire(path, "L-0003", " ")),
        (UsageError, "already retired", lambda: lessons.retire(path, "L-0002", "again")),
        (UsageError, "already superseded by L-0003", lambda: lessons.retire(path, "L-0001", "why")),
        (UsageError, "already superseded", lambda: lessons.supersede(path, "L-0001", "x", "c", "d")),
        (UsageError, "already retired", lambda: lessons.supersede(path, "L-0002", "x", "c", "d")),
    ]
    for error, message, action in cases:
        with pytest.raises(error, match=message):
            action()
        assert path.read_bytes() == before, message


def test_hand_edits_and_line_endings_survive_writes(tmp_path):
    path = tmp_path / "lessons.md"
    path.write_bytes(
        b"# Lessons\r\n\r\nOur intro, reworded by hand.\r\n\r\n"
        b"## L-0001: First\r\n- status: active\r\n- date: 2025-05-01\r\n- lesson: First\r\n"
        b"- cause: c\r\n- detect: d\r\n\r\nA paragraph a person added under the lesson.\r\n\r\n"
        b"### Aside\r\n\r\nMore prose.\r\n\r\n"
        b"## L-0002: Second\r\n- status: active\r\n- date: 2025-05-02\r\n- lesson: Second\r\n"
        b"- cause: c\r\n- detect: d"  # no final newline
    )
    lessons.retire(path, "L-0002", "done")
    lessons.supersede(path, "L-0001", "First, better", "c2", "d2")
    _add(path, 4)
    data = path.read_bytes()
    assert b"\n" not in data.replace(b"\r\n", b"")  # still CRLF throughout
    text = data.decode()
    for prose in ("Our intro, reworded by hand.", "A paragraph a person added under the lesson.",
                  "### Aside\r\n\r\nMore prose."):
        assert prose in text
    assert "- detect: d\r\n- superseded_by: L-0003\r\n\r\nA paragraph" in text
    assert "- detect: d\r\n- retired: done\r\n\r\n## L-0003" in text
    assert lessons.check_lessons(path) == []


def test_a_crash_mid_write_leaves_the_file_byte_identical(tmp_path, monkeypatch):
    path = tmp_path / "lessons.md"
    _add(path, 1)
    before = path.read_bytes()

    def crash(*args, **dir_fds):
        raise OSError("power cut")

    monkeypatch.setattr(fileio.os, "replace", crash)
    monkeypatch.setattr(guarded_replace, "_rename2", crash)  # the Linux rename (RENAME_EXCHANGE)
    for action in (lambda: _add(path, 2), lambda: lessons.retire(path, "L-0001", "x"),
                   lambda: lessons.supersede(path, "L-0001", "y", "c", "d")):
        with pytest.raises(OSError, match="power cut"):
            action()
        assert path.read_bytes() == before
    # no temp file left; the lock lives in the state folder (.vault-index/, git-ignored)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".vault-index", "lessons.md"]
    monkeypatch.undo()
    assert _add(path, 2) == "L-0002"  # the lock was released


def test_a_change_that_would_drop_a_lesson_is_refused(tmp_path):
    path = tmp_path / "lessons.md"
    _add(path, 1)
    _add(path, 2)
    before = path.read_bytes()

    def drop_last(parsed):
        return parsed.lines[: parsed.lessons[-1].line - 1], "L-0003"

    def reword(parsed):
        return [line.replace("cause 1", "cause one") for line in parsed.lines], "L-0001"

    for change in (drop_last, reword):
        with pytest.raises(VaultIndexError, match="nothing was written"):
            lessons._write(path, change)
        assert path.read_bytes() == before


WRITER = """
import sys
sys.path.insert(0, {mcp!r})
from vault_index.services.curation import lessons
for n in range(15):
    lessons.add(sys.argv[1], f"Writer {{sys.argv[2]}} lesson {{n}}", "concurrency", "count them")
"""


def test_concurrent_adds_from_two_processes_all_land(tmp_path):
    path = tmp_path / "docs" / "lessons.md"
    code = WRITER.format(mcp=str(REPO / "mcp"))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), name]) for name in "AB"]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    found = lessons.list_lessons(path)
    assert [x.id for x in found] == [f"L-{n:04d}" for n in range(1, 31)]
    assert {x.title for x in found} == {f"Writer {w} lesson {n}" for w in "AB" for n in range(15)}
    assert lessons.check_lessons(path) == []


BROKEN = """# Lessons

## L-0001: Fine
- status: active
- date: 2025-01-01
- lesson: Fine
- cause: c
- detect: d

## L-1: Short id
- status: active

## L-0002: Twice
- status: active
- date: 2025-01-01
- lesson: Twice
- cause: c
- detect: d

## L-0002: Twice again
- status: paused
- date: 2025-13-01
- lesson: Twice again
- cause: c
- detect: d
- cuase: typo

## L-0003: No cause or detect
- status: active
- date: 2025-01-01
- lesson: No cause or detect

## L-0004: Superseded, no target
- status: superseded
- date: 2025-01-01
- lesson: x
- cause: c
- detect: d

## L-0005: Superseded by nothing
- status: superseded
- date: 2025-01-01
- lesson: x
- cause: c
- detect: d
- superseded_by: L-0099

## L-0006: Retired, no reason
- status: retired
- date: 2025-01-01
- lesson: x
- cause: c
- detect: d

## L-0007: Active but pointing on
- status: active
- date: 2025-01-01
- lesson: x
- cause: c
- detect: d
- detect: again
- superseded_by: L-0001
"""


def test_check_lessons_names_each_kind_of_problem(tmp_path):
    path = tmp_path / "lessons.md"
    path.write_text(BROKEN)
    problems = "\n".join(lessons.check_lessons(path))
    expected = [
        ":10: malformed lesson heading '## L-1: Short id'",
        ":20: L-0002: duplicate id (first used at line 13)",
        "L-0002: unknown status 'paused'",
        "L-0002: date '2025-13-01' is not YYYY-MM-DD",
        "L-0002: unknown field 'cuase'",
        "L-0003: missing cause", "L-0003: missing detect",
        "L-0004: superseded without superseded_by",
        "L-0005: superseded_by L-0099 is not another lesson",
        "L-0006: retired without a reason",
        "L-0007: field 'detect' appears more than once",
        "L-0007: superseded_by set but status is active",
    ]
    for message in expected:
        assert message in problems, message
    assert ": L-0001:" not in problems
    assert len(lessons.check_lessons(path)) == len(expected)


def test_check_lessons_on_missing_and_non_utf8_files(tmp_path):
    assert lessons.check_lessons(tmp_path / "absent.md") == []
    bad = tmp_path / "lessons.md"
    bad.write_bytes(b"# Lessons\n\xff\xfe\n")
    assert "not UTF-8" in lessons.check_lessons(bad)[0]
    with pytest.raises(UsageError, match="not UTF-8"):
        _add(bad, 1)
    assert bad.read_bytes() == b"# Lessons\n\xff\xfe\n"


def test_the_repository_lessons_are_well_formed():
    path = REPO / "docs" / "lessons.md"
    assert path.exists()
    assert lessons.check_lessons(path) == []
    assert len(lessons.list_lessons(path)) >= 2


# Every character str.splitlines() breaks on that "\n" does not: any of them in a one-line field
# once forged a heading or a field line in docs/lessons.md.
LINE_BREAKS = ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("char", [*LINE_BREAKS, "\n", "\x00", "\x1b", "\x7f", "\x9b", "\t"],
                         ids=lambda c: f"U+{ord(c):04X}")
def test_the_lesson_refuses_every_line_break_and_control_character(tmp_path, char):
    path = tmp_path / "lessons.md"
    _add(path, 1)
    before = path.read_bytes()
    for text in (f"Do X{char}## L-0001: Fake lesson", f"Do Y{char}- status: retired"):
        with pytest.raises(UsageError, match=r"the lesson .*U\+"):
            lessons.add(path, text, "c", "d")
        with pytest.raises(UsageError, match=r"the lesson .*U\+"):
            lessons.supersede(path, "L-0001", text, "c", "d")
    assert path.read_bytes() == before


@pytest.mark.parametrize("char", ["\u202e", "\u200b", "\U000e0049", "\ufeff", "\udcff"],
                         ids=lambda c: f"U+{ord(c):04X}")
def test_invisible_and_unwritable_characters_are_refused(tmp_path, char):
    """Bidi overrides, zero-width and tag characters hide text from the person while an agent
    reading the lesson through recall still sees it; a lone surrogate cannot be written as UTF-8."""
    path = tmp_path / "lessons.md"
    _add(path, 1)
    before = path.read_bytes()
    for field in ("lesson", "cause", "detect"):
        texts = {"lesson": "Run the tests", "cause": "c", "detect": "d", field: f"Run{char} the tests"}
        with pytest.raises(UsageError, match=r"U\+"):
            lessons.add(path, texts["lesson"], texts["cause"], texts["detect"])
    assert path.read_bytes() == before
    assert lessons.add(path, "Ship the \U0001f468\u200d\U0001f373 fix", "c", "d")  # ZWJ inside an emoji stays


@pytest.mark.parametrize("char", LINE_BREAKS + ["\n", "\r\n"], ids=lambda c: f"U+{ord(c[-1]):04X}")
def test_prose_fields_given_on_several_lines_of_any_kind_are_stored_on_one(tmp_path, char):
    path = tmp_path / "lessons.md"
    lessons.add(path, "Do X", f"first{char}## L-0001: Fake", f"check{char}- status: retired", ["a"])
    lessons.add(path, "Do Y", "c", "d")
    lessons.retire(path, "L-0002", f"moot{char}- superseded_by: L-0001")
    first, second = lessons.list_lessons(path, include_all=True)
    assert (first.id, first.status, first.get("cause"), first.get("detect")) == (
        "L-0001", "active", "first ## L-0001: Fake", "check - status: retired")
    assert (second.status, second.get("retired"), second.get("superseded_by")) == (
        "retired", "moot - superseded_by: L-0001", "")
    assert lessons.check_lessons(path) == []


@pytest.mark.parametrize("char", ["\x00", "\x1b", "\x7f", "\x9b"], ids=lambda c: f"U+{ord(c):04X}")
def test_prose_fields_refuse_control_characters_that_are_not_line_breaks(tmp_path, char):
    path = tmp_path / "lessons.md"
    _add(path, 1)
    before = path.read_bytes()
    for name, action in (("cause", lambda: lessons.add(path, "x", f"c{char}", "d")),
                         ("detect", lambda: lessons.add(path, "x", "c", f"d{char}")),
                         ("reason", lambda: lessons.retire(path, "L-0001", f"r{char}")),
                         ("tag", lambda: lessons.add(path, "x", "c", "d", [f"t{char}"]))):
        with pytest.raises(UsageError, match=name):
            action()
    assert path.read_bytes() == before


def test_the_reader_splits_lines_where_the_writer_does(tmp_path):
    # a hand-edited file may hold any character; only "\n" (with an optional "\r") ends a line
    text = ("## L-0001: One\u2028## L-0002: Forged\n- status: active\x0b- status: retired\n- date: 2025-01-01\n"
            "- lesson: One\n- cause: c\u2029- cause: forged\n- detect: d\x85x\n")
    parsed = lessons.parse(text)
    assert [x.id for x in parsed.lessons] == ["L-0001"]
    only = parsed.lessons[0]
    assert only.title == "One\u2028## L-0002: Forged"
    assert only.status == "active\x0b- status: retired" and only.repeated == ()
    assert only.get("detect") == "d\x85x" and parsed.lines[-1] == "- detect: d\x85x\n"
    crlf = lessons.parse("## L-0001: A\r\n- status: active\r\n")
    assert crlf.lessons[0].title == "A" and crlf.lessons[0].status == "active" and crlf.newline == "\r\n"
