"""scripts/handoff.py (what /handoff runs) and scripts/precompact_snapshot.py (PreCompact)."""

from __future__ import annotations

import datetime as dt
import json
import re

from hookrun import FIXTURES, LONG_CONTEXT, answer, hook_env, prompt_payload, run_script

LONG = FIXTURES / "long_session.jsonl"
REQUESTS = ["1. /recall garden sensor battery",
            "4. Edit the garden sensor note again: the battery is two AA lithium cells"]
FILES = ["- /home/dev/garden/notes/soil-probe.md", "- /home/dev/garden/notes/garden-sensor.md"]


def _frontmatter(text: str) -> dict[str, str]:
    head = text.split("\n---\n", 1)[0].removeprefix("---\n")
    return dict(line.split(": ", 1) for line in head.splitlines())


def handoff(project, *args: str) -> str:
    done = run_script("handoff.py", "", hook_env(CLAUDE_PROJECT_DIR=str(project)), args=("new", *args))
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout.decode()


def test_handoff_writes_a_note_with_requests_and_touched_files_and_prints_a_card(project):
    out = handoff(project, "--topic", "Garden sensor: battery!", "--session", "sess-7", "--transcript", str(LONG))
    today = dt.date.today().isoformat()
    rel = f"docs/handoffs/{today}-garden-sensor-battery.md"
    assert out.splitlines()[0] == rel
    assert f"handoff note {rel}" in out.splitlines()[-1]  # the card names the note
    text = (project / rel).read_text(encoding="utf-8")
    meta = _frontmatter(text)
    assert meta == {"title": '"Handoff: Garden sensor: battery!"', "date": today,
                    "session_id": '"sess-7"', "type": "handoff"}
    assert [h for h in re.findall(r"^## (.+)$", text, re.M)] == [
        "Goal", "State", "Next steps", "Recent requests", "Touched files"]
    assert all(line in text.splitlines() for line in REQUESTS + FILES)
    assert f"{LONG_CONTEXT:,} tokens" in text


def test_handoff_never_overwrites_and_the_guard_then_lets_the_session_go(project):
    first = json.loads(handoff(project, "--session", "sess-8", "--transcript", str(LONG), "--json"))
    second = json.loads(handoff(project, "--session", "sess-8", "--transcript", str(LONG), "--json"))
    assert first["path"].endswith("-handoff.md") and second["path"].endswith("-handoff-2.md")
    assert first["session_id"] == "sess-8" and first["path"] in first["card"]
    assert (project / first["path"]).is_file() and (project / second["path"]).is_file()
    guard = answer(run_script("context_guard.py", prompt_payload(project, LONG, session="sess-8")))
    assert set(guard) == {"systemMessage"}  # over the threshold, but the handoff is written


def test_handoff_without_a_transcript_still_writes_a_note(project, tmp_path):
    env = hook_env(CLAUDE_PROJECT_DIR=str(project), CLAUDE_CONFIG_DIR=str(tmp_path / "no-claude"))
    done = run_script("handoff.py", "", env, args=("new", "--topic", "x"))
    assert done.returncode == 0
    note = project / done.stdout.decode().splitlines()[0]
    assert "(none found in the transcript)" in note.read_text(encoding="utf-8")


def test_handoff_finds_the_newest_transcript_of_the_project(project, tmp_path):
    """Run by hand: Claude Code's transcript folder for this project gives session and transcript."""
    folder = tmp_path / "claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(project.resolve()))
    folder.mkdir(parents=True)
    (folder / "old-session.jsonl").write_text("{}\n")
    newest = folder / "abcd1234-session.jsonl"
    newest.write_bytes(LONG.read_bytes())
    env = hook_env(CLAUDE_PROJECT_DIR=str(project), CLAUDE_CONFIG_DIR=str(tmp_path / "claude"))
    out = json.loads(run_script("handoff.py", "", env, args=("new", "--json")).stdout)
    assert out["session_id"] == "abcd1234-session"
    assert all(line in (project / out["path"]).read_text().splitlines() for line in REQUESTS)


def test_precompact_snapshot_saves_requests_and_files_and_never_overwrites(project):
    payload = {"session_id": "5f0c2d1e-8a47-4b2e", "transcript_path": str(LONG), "cwd": str(project),
               "hook_event_name": "PreCompact", "trigger": "manual", "custom_instructions": "keep the ADR"}
    runs = [run_script("precompact_snapshot.py", payload) for _ in range(2)]
    assert all(r.returncode == 0 and b"Traceback" not in r.stderr for r in runs)
    outs = [r.stdout.decode().strip() for r in runs]
    assert all(o.startswith("vault-index saved this session's recent requests") for o in outs)
    written = sorted((project / "docs" / "handoffs" / "auto").glob("*.md"))  # and .gitignore (issue 36)
    assert len(written) == 2  # same second or not, the second never replaces the first
    assert all(re.fullmatch(r"\d{8}-\d{6}-5f0c2d1e(-2)?\.md", p.name) for p in written)
    assert {o.rsplit(" ", 1)[1] for o in outs} == {
        f"docs/handoffs/auto/{p.name}" for p in written}
    text = written[0].read_text(encoding="utf-8")
    assert "- trigger: manual (instructions: keep the ADR)" in text and f"{LONG_CONTEXT:,} tokens" in text
    assert all(line in text.splitlines() for line in REQUESTS + FILES)
    assert _frontmatter(text)["session_id"] == '"5f0c2d1e-8a47-4b2e"'


def test_handoff_finds_the_transcript_from_the_session_id(project, tmp_path):
    """What /handoff passes (--session ${CLAUDE_SESSION_ID}): the transcript is looked up by id."""
    folder = tmp_path / "claude" / "projects" / "-some-other-folder-name"
    folder.mkdir(parents=True)
    (folder / "sess-55.jsonl").write_bytes(LONG.read_bytes())
    env = hook_env(CLAUDE_PROJECT_DIR=str(project), CLAUDE_CONFIG_DIR=str(tmp_path / "claude"))
    out = json.loads(run_script("handoff.py", "", env, args=("new", "--session", "sess-55", "--json")).stdout)
    assert out["session_id"] == "sess-55"
    assert all(line in (project / out["path"]).read_text().splitlines() for line in REQUESTS + FILES)
    # A template whose session variable expanded to nothing still writes a note.
    done = run_script("handoff.py", "", env, args=("new", "--session", "--topic", "empty id", "--json"))
    assert json.loads(done.stdout)["path"].endswith("-empty-id.md")
