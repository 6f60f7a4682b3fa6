#!/usr/bin/env python3
"""The session briefing at SessionStart (vault_index.services.briefing), and the script to preview it.

    python scripts/briefing.py             # print the briefing this project's next session would get
                                           # (a dry run: no handoff card is marked picked up)
    python scripts/briefing.py --hook      # as a SessionStart hook: JSON on stdin, one JSON answer or
                                           # nothing on stdout, always exit 0

Claude Code runs it inside the invariants' hook (`invariants.py --hook` calls `hook_answer`), one
process for both: see the comment there. Silent when there is nothing to say, when `briefing` is off
in .claude/handoff.json, and when the session resumes or was just compacted (it had its briefing).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _hookio import ensure_package, read_payload, run, text, warn  # noqa: E402

ensure_package()
from vault_index.config import project_dir  # noqa: E402

SKIPPED_SOURCES = ("resume", "compact")


def hook_answer(payload: dict, project: Path | None = None) -> dict | None:
    """The briefing as a SessionStart answer (additionalContext for the agent, one line for the person),
    and a broken settings file said once a session; None when there is nothing to say."""
    if payload.get("source") in SKIPPED_SOURCES:
        return None
    try:
        from vault_index.services import hook_state
        from vault_index.services.briefing import brief

        project = Path(project).resolve() if project else project_dir(text(payload, "cwd") or None)
        session_id = text(payload, "session_id")
        settings, problem = hook_state.read_settings(project)
        notice = f"vault-index: {problem}; the hooks use their defaults until it is fixed." \
            if problem and hook_state.say_once(session_id, "settings") else ""
        found = brief(project, session_id) if settings["briefing"] else None
    except Exception as exc:  # noqa: BLE001 - a briefing that fails is a line on stderr, never a failed start
        warn(f"the session briefing could not be made: {type(exc).__name__}: {exc}")
        return None
    answer: dict = {"systemMessage": notice} if notice else {}
    if found is not None and found.text:
        held = [f"{len(found.lessons)} lesson(s) about files here" if found.lessons else "",
                "a handoff card" if found.card else "",
                f"{len(found.tensions)} open tension(s)" if found.tensions else ""]
        said = f"vault-index briefing: {', '.join(h for h in held if h)}"
        answer["systemMessage"] = f"{notice} {said}".strip()
        answer["hookSpecificOutput"] = {"hookEventName": "SessionStart", "additionalContext": found.text}
    return answer or None


def merge(first: dict | None, second: dict | None) -> dict | None:
    """Two SessionStart answers as one: messages and contexts joined, the first's before the second's."""
    if not first or not second:
        return first or second
    out = dict(first)
    if second.get("systemMessage"):
        out["systemMessage"] = "; ".join(m for m in (first.get("systemMessage"), second["systemMessage"]) if m)
    contexts = [(a.get("hookSpecificOutput") or {}).get("additionalContext") for a in (first, second)]
    if any(contexts):
        out["hookSpecificOutput"] = {"hookEventName": "SessionStart",
                                     "additionalContext": "\n\n".join(c for c in contexts if c)}
    return out


def main() -> None:
    if "--hook" in sys.argv[1:]:
        answer = hook_answer(read_payload())
        if answer:
            print(json.dumps(answer))
        return
    from vault_index.services.briefing import brief

    found = brief(project_dir(), record=False)
    print(found.text or "vault-index: nothing to brief a new session with here.")


if __name__ == "__main__":
    run(main)
