"""scripts/capture_hook.py as Claude Code runs it on Stop (a subprocess, JSON on stdin).

Transcript records have the shape of Claude Code's JSONL (tests/hooks/fixtures and docs/hooks.md
say where it comes from): assistant lines carry tool_use blocks, every line a `timestamp`, and a
slash command is a user line with <command-name> tags.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid

from hookrun import answer, hook_env, run_script

START = dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.timezone.utc)


def record(kind: str, minute: float, content, sidechain: bool = False) -> dict:
    when = (START + dt.timedelta(minutes=minute)).isoformat().replace("+00:00", "Z")
    message = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=f"msg_{uuid.uuid4().hex[:8]}", model="claude-opus-4-5",
                       usage={"input_tokens": 10, "cache_read_input_tokens": 20_000, "output_tokens": 50})
    return {"parentUuid": None, "isSidechain": sidechain, "type": kind, "message": message,
            "uuid": uuid.uuid4().hex, "timestamp": when}


def tool(name: str, minute: float, **tool_input) -> dict:
    return record("assistant", minute, [{"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:8]}", "name": name,
                                         "input": tool_input}])


def session_lines(edits: int = 6, minutes: float = 30, extra: list[dict] | None = None) -> list[dict]:
    lines = [record("user", 0, "Make the sync tool idempotent")]
    for n in range(edits):
        lines.append(tool("Edit", minutes * (n + 1) / (edits + 1), file_path=f"/repo/src/mod_{n}.py",
                          old_string="a", new_string="b"))
    lines += extra or []
    lines.append(record("assistant", minutes, [{"type": "text", "text": "Done."}]))
    return lines


def write_transcript(path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def stop(project, transcript, session: str, active: bool = False):
    payload = {"session_id": session, "transcript_path": str(transcript), "cwd": str(project),
               "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": active}
    return answer(run_script("capture_hook.py", payload, hook_env(CLAUDE_PROJECT_DIR=str(project)), cwd=project))


def new_session() -> str:
    return f"sess-{uuid.uuid4().hex[:12]}"


def test_it_asks_once_and_never_twice(project, tmp_path):
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, session_lines())
    session = new_session()
    assert stop(project, transcript, session, active=True) is None  # Claude Code is continuing for a Stop hook
    out = stop(project, transcript, session)
    assert out["decision"] == "block" and set(out) == {"decision", "reason"}
    reason = out["reason"]
    assert "6 edits over 30 minutes" in reason and "lesson_add" in reason and "adr_create" in reason
    assert "say so" in reason and '"capture": false' in reason
    assert stop(project, transcript, session) is None  # asked already: the per-session marker
    with transcript.open("a", encoding="utf-8") as handle:  # the session goes on editing
        handle.write(json.dumps(tool("Write", 45, file_path="/repo/src/new.py", content="x")) + "\n")
    assert stop(project, transcript, session) is None


def test_silent_with_too_few_edits_or_minutes(project, tmp_path):
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, session_lines(edits=0))
    assert stop(project, transcript, new_session()) is None
    write_transcript(transcript, session_lines(edits=4))
    assert stop(project, transcript, new_session()) is None
    write_transcript(transcript, session_lines(edits=8, minutes=5))
    assert stop(project, transcript, new_session()) is None


def test_the_counts_grow_with_the_transcript(project, tmp_path):
    transcript = tmp_path / "t.jsonl"
    lines = session_lines(edits=3, minutes=20)
    write_transcript(transcript, lines)
    session = new_session()
    assert stop(project, transcript, session) is None  # 3 edits: under the default 5
    more = [tool("MultiEdit", 25, file_path="/repo/a.py", edits=[]), tool("Edit", 26, file_path="/repo/b.py")]
    write_transcript(transcript, lines + more)
    assert "5 edits over 26 minutes" in stop(project, transcript, session)["reason"]


def test_silent_when_the_session_wrote_to_the_memory(project, tmp_path):
    transcript = tmp_path / "t.jsonl"
    writes = [
        tool("mcp__vault-index__lesson_add", 20, lesson="x", cause="y", detect="z"),
        tool("mcp__plugin_vault-index_vault-index__adr_create", 20, title="t"),
        record("user", 20, "<command-name>/learn</command-name>\n<command-args>a trap</command-args>"),
        tool("Bash", 20, command=".venv/bin/python scripts/learn.py add --lesson x"),
        tool("Edit", 20, file_path="/repo/docs/lessons.md", old_string="a", new_string="b"),
    ]
    for one in writes:
        write_transcript(transcript, session_lines(extra=[one]))
        assert stop(project, transcript, new_session()) is None, one
    write_transcript(transcript, session_lines(extra=[tool("mcp__vault-index__search_notes", 20, query="q")]))
    assert stop(project, transcript, new_session())["decision"] == "block"  # a read is no write


def test_the_off_switch_and_the_thresholds_come_from_handoff_json(project, tmp_path):
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, session_lines(edits=2, minutes=3))
    settings = project / ".claude" / "handoff.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"capture_min_edits": 2, "capture_min_minutes": 1}), encoding="utf-8")
    assert stop(project, transcript, new_session())["decision"] == "block"
    settings.write_text(json.dumps({"capture": False, "capture_min_edits": 2, "capture_min_minutes": 1}),
                        encoding="utf-8")
    assert stop(project, transcript, new_session()) is None


def test_a_broken_settings_file_uses_the_defaults_and_says_so_once(project, tmp_path):
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, session_lines())
    settings = project / ".claude" / "handoff.json"
    settings.parent.mkdir()
    session = new_session()
    for broken in ('{"capture": "no"', '["capture", false]'):
        settings.write_text(broken, encoding="utf-8")
        assert stop(project, transcript, new_session())["decision"] == "block"  # defaults: capture on
    settings.write_text(json.dumps({"capture": "no", "capture_min_edits": True}), encoding="utf-8")
    first = stop(project, transcript, session)
    assert first["decision"] == "block" and "capture, capture_min_edits ignored" in first["systemMessage"]
    assert stop(project, transcript, session) is None  # asked and said: nothing more this session


def test_bad_input_never_breaks_it(project, tmp_path):
    for payload in (b"", b"not json", b"[1]", json.dumps({"transcript_path": str(tmp_path / "missing.jsonl"),
                                                          "session_id": "s"}).encode()):
        done = run_script("capture_hook.py", payload, hook_env(CLAUDE_PROJECT_DIR=str(project)), cwd=project)
        assert answer(done) is None
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b'{"type": "assistant", "message": {"content": [{"type": "tool_use", "name": 5}]}}\n\xff\xfe\n')
    assert stop(project, garbage, new_session()) is None
