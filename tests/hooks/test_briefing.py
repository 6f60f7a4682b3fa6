"""The session briefing at SessionStart, as Claude Code runs it (a subprocess, JSON on stdin).

Claude Code runs it inside `invariants.py --hook` (tests/bundle/test_invariants.py checks that the
real command carries it); here `briefing.py --hook`, the same function without the wiring checks,
so a bare project's failing checks do not hide what the briefing says.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid

from helpers import write
from hookrun import answer, hook_env, run_script

TODAY = dt.date.today()


def start(project, session=None, source="startup", **env):
    payload = {"session_id": session or f"sess-{uuid.uuid4().hex[:12]}", "transcript_path": "",
               "cwd": str(project), "hook_event_name": "SessionStart", "source": source}
    return answer(run_script("briefing.py", payload, hook_env(CLAUDE_PROJECT_DIR=str(project), **env),
                             args=("--hook",), cwd=project))


def context_of(out) -> str:
    return ((out or {}).get("hookSpecificOutput") or {}).get("additionalContext", "")


def handoff(project, name: str, days_old: int, session: str = "writer-1", topic: str = "garden sensor",
            next_step: str = "Run the battery test on the bench rig.") -> None:
    date = (TODAY - dt.timedelta(days=days_old)).isoformat()
    write(project, f"docs/handoffs/{date}-{name}.md",
          f'---\ntitle: "Handoff: {topic}"\ndate: {date}\nsession_id: "{session}"\ntype: handoff\n---\n'
          f"# Handoff: {topic}\n\n## Goal\n\nLonger battery life.\n\n## Next steps\n\n1. {next_step}\n")


def lesson(number: int, directive: str, status: str = "active") -> str:
    return (f"## L-{number:04d}: {directive}\n- status: {status}\n- date: 2026-11-30\n- lesson: {directive}\n"
            f"- cause: it broke once\n- detect: a test\n\n")


def test_silent_with_nothing_to_say(project):
    assert start(project) is None
    write(project, "docs/lessons.md", "# Lessons\n\n" + lesson(1, "Always say please"))  # names no file
    assert start(project) is None


def test_a_fresh_card_is_shown_once_and_a_stale_or_own_one_never(project):
    handoff(project, "old", days_old=15, topic="an old topic")
    mine = f"sess-{uuid.uuid4().hex[:12]}"
    handoff(project, "mine", days_old=2, session=mine, topic="my own topic")
    assert start(project, session=mine) is None  # the only fresh card is this session's own
    handoff(project, "fresh", days_old=1)
    out = start(project, session=f"sess-{uuid.uuid4().hex[:12]}")
    context = context_of(out)
    assert "Continue the work on garden sensor from the handoff note docs/handoffs/" in context
    assert "Run the battery test on the bench rig." in context
    assert "an old topic" not in context and "my own topic" not in context
    assert "handoff card" in out["systemMessage"]
    # picked up by the session it was shown to: the next one gets the older card of the other session
    assert "my own topic" in context_of(start(project)) and start(project) is None


def test_active_lessons_that_name_files_here_and_open_tensions(project):
    write(project, "scripts/sync_tool.py", "print('x')\n")
    write(project, "docs/lessons.md", "# Lessons\n\n" + "".join([
        lesson(1, "Run `scripts/sync_tool.py --check` before a release"),
        lesson(2, "Never edit generated.py by hand"),  # no such file here
        lesson(3, "Keep sync_tool.py idempotent", status="retired"),
        lesson(4, "Pin the parser in sync_tool.py"),
    ]))
    write(project, "tensions.md", "# Tensions\n\n## T-0001: `a.md` vs `b.md`\n\n- status: open\n\n"
          "## T-0002: `c.md` vs `d.md`\n\n- status: resolved\n")
    out = start(project)
    context = context_of(out)
    assert "L-0001 (scripts/sync_tool.py)" in context and "L-0004 (sync_tool.py)" in context
    assert context.index("L-0004") < context.index("L-0001")  # newest first
    assert "L-0002" not in context and "L-0003" not in context
    assert "T-0001: `a.md` vs `b.md`" in context and "T-0002" not in context


def test_the_briefing_stays_within_400_tokens(project):
    write(project, "scripts/sync_tool.py", "print('x')\n")
    handoff(project, "long", days_old=0, next_step="step " * 200)
    long_lesson = "Check scripts/sync_tool.py " + "carefully " * 60
    write(project, "docs/lessons.md", "# Lessons\n\n" + "".join(lesson(n, long_lesson) for n in range(1, 9)))
    write(project, "tensions.md", "# Tensions\n\n" + "".join(
        f"## T-{n:04d}: `notes/a-long-note-name-{n}.md` vs `notes/another-long-one-{n}.md`\n\n- status: open\n\n"
        for n in range(1, 9)))
    context = context_of(start(project))
    assert context and -(-len(context) // 4) <= 400, len(context)


def test_the_off_switch_resume_and_a_broken_settings_file(project):
    handoff(project, "fresh", days_old=0)
    (project / ".claude").mkdir()
    settings = project / ".claude" / "handoff.json"
    settings.write_text(json.dumps({"briefing": False}), encoding="utf-8")
    assert start(project) is None
    settings.write_text("[1, 2", encoding="utf-8")
    assert start(project, source="resume") is None  # a resumed session had its briefing
    session = f"sess-{uuid.uuid4().hex[:12]}"
    out = start(project, session=session)
    assert "handoff.json is not valid JSON" in out["systemMessage"]  # and the defaults: briefing on
    assert "docs/handoffs/" in context_of(out)
    assert start(project, session=session) is None  # said once; the card is picked up
