"""The transcript readers and settings the hooks share (scripts/_hooklib.py), in process."""

from __future__ import annotations

import json
import sys

import pytest
from hookrun import FIXTURES, LONG_CONTEXT, SCRIPTS, SHORT_CONTEXT
from vault_index.engine.files.sources import NOTE_SUFFIXES

sys.path.insert(0, str(SCRIPTS))
import _hooklib as hooks  # noqa: E402

LONG = FIXTURES / "long_session.jsonl"


def _lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_fixture_has_the_shapes_the_readers_must_cope_with():
    records = _lines(LONG)
    last_main = [r for r in records if r.get("type") == "assistant" and not r["isSidechain"]
                 and r["message"]["model"] != "<synthetic>"][-1]
    same_id = [r for r in records if r.get("message", {}).get("id") == last_main["message"]["id"]]
    assert len(same_id) == 3 and all(r["message"]["usage"] == last_main["message"]["usage"] for r in same_id)
    after = records[records.index(same_id[-1]) + 1:]
    assert any(r.get("isSidechain") and "usage" in r.get("message", {}) for r in after)  # a later subagent line
    assert any(r.get("message", {}).get("model") == "<synthetic>" for r in after)
    assert {r["type"] for r in records} >= {"summary", "system", "user", "assistant", "file-history-snapshot"}


@pytest.mark.parametrize("name, expected", [
    ("long_session.jsonl", LONG_CONTEXT), ("short_session.jsonl", SHORT_CONTEXT), ("compacted_session.jsonl", 0),
])
def test_context_is_the_latest_main_chain_message_counted_once(name, expected):
    path = FIXTURES / name
    # Not the later sidechain line (19,502), not the synthetic zeros, not three lines summed.
    assert hooks.latest_context_tokens(path) == expected
    assert hooks.context_tokens(hooks.read_records(path)) == expected  # the forward reader agrees


def test_the_latest_usage_is_found_behind_a_tool_result_bigger_than_the_tail(tmp_path):
    path = tmp_path / "big.jsonl"
    huge = {"type": "user", "isSidechain": False, "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_x", "content": "y" * (hooks.TAIL_BYTES + 1000)}]}}
    path.write_text(LONG.read_text(encoding="utf-8") + json.dumps(huge) + "\n", encoding="utf-8")
    assert hooks.latest_context_tokens(path) == LONG_CONTEXT
    assert hooks.recent_requests(path, 2)[-1].startswith("Edit the garden sensor note again")


def test_unreadable_or_garbage_transcripts_give_no_size(tmp_path):
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\xff\xfe not json\n{\"type\": \"assistant\", \"message\": {\"usage\": \n[1, 2]\n\"text\"\n")
    assert hooks.latest_context_tokens(garbage) is None
    assert hooks.latest_context_tokens(tmp_path / "missing.jsonl") is None
    assert hooks.latest_context_tokens(tmp_path) is None  # a folder
    assert hooks.recent_requests(tmp_path / "missing.jsonl") == [] == hooks.touched_files(tmp_path)


def test_recent_requests_are_what_the_person_typed():
    assert hooks.recent_requests(LONG) == [
        "/recall garden sensor battery",  # the slash command, rebuilt from its tags
        "Add a battery section to the garden sensor note and record the decision",
        "Now tighten the ADR wording and fix the lessons file",  # a list of text blocks
        "Edit the garden sensor note again: the battery is two AA lithium cells",
    ]  # not: tool results, the caveat (isMeta), the interrupt, local command output, the subagent's prompt
    assert hooks.recent_requests(LONG, 1) == ["Edit the garden sensor note again: the battery is two AA lithium cells"]


def test_touched_files_are_the_edited_ones_latest_last():
    assert hooks.touched_files(LONG) == [
        "/home/dev/garden/notes/soil-probe.md",  # edited by the subagent
        "/home/dev/garden/docs/adr/0003-battery.md",
        "/home/dev/garden/docs/lessons.md",  # MultiEdit
        "/home/dev/garden/notes/garden-sensor.md",  # written, then edited again: listed once, last
    ]  # not notes/README.md, which was only Read


def test_the_hook_suffixes_match_the_indexer():
    from vault_index.services.writes import edit_client

    assert hooks.NOTE_SUFFIXES == edit_client.NOTE_SUFFIXES == NOTE_SUFFIXES


@pytest.mark.parametrize("content, expected", [
    (None, 450_000), ("{not json", 450_000), ('{"threshold_tokens": "lots"}', 450_000),
    ('{"threshold_tokens": true}', 450_000), ('{"threshold_tokens": -5}', 450_000), ("[1]", 450_000),
    ('{"threshold_tokens": 600000, "about": "x"}', 600_000),
])
def test_threshold_comes_from_handoff_json_with_a_safe_default(project, content, expected):
    if content is not None:
        (project / ".claude").mkdir()
        (project / ".claude" / "handoff.json").write_text(content, encoding="utf-8")
    assert hooks.read_threshold(project) == expected


def test_the_repository_ships_the_default_threshold():
    assert hooks.read_threshold(SCRIPTS.parent) == hooks.DEFAULT_THRESHOLD == 450_000
    assert "about" in json.loads((SCRIPTS.parent / ".claude" / "handoff.json").read_text(encoding="utf-8"))


def test_create_unique_never_replaces_a_note(tmp_path):
    first = hooks.create_unique(tmp_path / "a" / "b", "note", "one")
    second = hooks.create_unique(tmp_path / "a" / "b", "note", "two")
    assert (first.name, second.name) == ("note.md", "note-2.md")
    assert first.read_text() == "one" and second.read_text() == "two"
