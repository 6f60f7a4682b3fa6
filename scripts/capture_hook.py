"""Stop hook: once a session has changed files for a while and recorded nothing in the memory, ask the
agent, once, to record what it learned (a lesson or a decision) through the tools, or to say there is none.

stdin: {"session_id", "transcript_path", "cwd", "hook_event_name": "Stop", "stop_hook_active"}
stdout, one of:
- nothing: `capture` is off in .claude/handoff.json; Claude Code is already continuing because of a
  Stop hook (`stop_hook_active`); this session was asked before; it made fewer than
  `capture_min_edits` edits (Write, Edit, MultiEdit, NotebookEdit) or worked less than
  `capture_min_minutes` minutes (first to last transcript timestamp); or it already wrote to the
  memory (a vault-index write tool, /learn, /adr, scripts/learn.py or adr.py, or an edit of a
  lessons.md or docs/adr/ file);
- {"decision": "block", "reason": ...}: the agent goes on with the reason as its instruction;
- a systemMessage, once a session, when .claude/handoff.json is broken (the defaults are used).

Stop runs at the end of every turn, so the transcript is read incrementally: the counts and the byte
offset read so far are kept in the session's state (vault_index.services.hook_state) and each run
reads only what was appended since. Lines are parsed only when they can hold a tool call or a
command. Standard library (and the package's stdlib-only hook_state) alone.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _hooklib as hooks  # noqa: E402 - the scripts folder is not a package

MEMORY_TOOLS = frozenset({"lesson_add", "lesson_supersede", "lesson_retire", "adr_create", "note_write",
                          "tension_log", "graph_create"})
MEMORY_COMMANDS = frozenset({"learn", "adr"})  # /learn, /adr and a plugin's /vault-index:learn
_MEMORY_SCRIPT = re.compile(r"(?:^|[\s/\"'])(?:learn|adr)\.py\b")
_TIMESTAMP = re.compile(rb'"timestamp"\s*:\s*"([^"]{10,40})"')
READ_BLOCK = 8 * 1024 * 1024


def main() -> None:
    payload = hooks.read_payload()
    project = hooks.project_dir(payload)
    session_id, transcript = hooks.text(payload, "session_id"), hooks.text(payload, "transcript_path")
    settings, problem = hooks.read_settings(project)
    answer: dict = {}
    notice = hooks.settings_notice(problem, session_id)
    if notice:
        answer["systemMessage"] = notice
    reason = ask(payload, settings, session_id, transcript)
    if reason:
        answer.update(decision="block", reason=reason)
    if answer:
        hooks.emit(answer)


def ask(payload: dict, settings: dict, session_id: str, transcript: str) -> str | None:
    """The reason to block with, or None to let the session stop."""
    from vault_index.services import hook_state

    if not settings["capture"] or payload.get("stop_hook_active") is True or not transcript:
        return None
    if not hook_state.remembers(session_id):
        return None  # no state to remember the question by: never risk asking at every stop
    state = hook_state.session(session_id)
    if state.get("capture_asked"):
        return None
    activity = scan(transcript, state.get("capture_scan"))
    if activity is None:
        return None
    hook_state.update_session(session_id, capture_scan=activity)
    minutes = _minutes(activity.get("first"), activity.get("last"))
    if activity["memory"] or activity["edits"] < settings["capture_min_edits"] \
            or minutes < settings["capture_min_minutes"]:
        return None
    hook_state.update_session(session_id, capture_asked=True)
    if not hook_state.session(session_id).get("capture_asked"):
        return None  # the state folder cannot be written: asking now could mean asking at every stop
    return (f"Before you stop: this session made {activity['edits']} edits over {minutes:.0f} minutes and "
            "recorded nothing in the memory. If it taught something a later session should know (a cause "
            "found, a trap, a check that would have caught it), record it now with the vault-index tools: "
            "lesson_add (lesson, cause, detect) for a lesson, adr_create for a decision between alternatives. "
            "If there is nothing worth recording, say so in one line and stop. (Asked once a session; "
            f"turn it off with \"capture\": false in {hooks.HANDOFF_CONFIG.as_posix()}.)")


def scan(transcript: str, before: dict | None) -> dict | None:
    """{"offset", "edits", "memory", "first", "last"} of the transcript, continuing from `before`
    when the file grew since (a transcript only grows); None when it cannot be read."""
    counts = {"offset": 0, "edits": 0, "memory": False, "first": None, "last": None}
    if isinstance(before, dict) and set(counts) <= set(before):
        counts.update(before)
    try:
        size = os.path.getsize(transcript)
        if size < counts["offset"]:  # not the file we read before: start over
            counts = {"offset": 0, "edits": 0, "memory": False, "first": None, "last": None}
        # O_NONBLOCK: a FIFO named like the transcript must not hold the hook (checked after opening)
        descriptor = os.open(transcript, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            handle.seek(counts["offset"])
            pending = b""
            while block := handle.read(READ_BLOCK):
                lines = (pending + block).split(b"\n")
                pending = lines.pop()  # a line still being written: read again next time
                for line in lines:
                    _count(line, counts)
                counts["offset"] += len(block)
            counts["offset"] -= len(pending)
    except (OSError, ValueError):
        return None
    return counts


def _count(line: bytes, counts: dict) -> None:
    stamp = _TIMESTAMP.search(line)  # a record's own key (quoted JSON inside it is escaped: \"timestamp\")
    if stamp:
        when = stamp.group(1).decode("ascii", "replace")
        counts["first"] = counts["first"] or when
        counts["last"] = when
    if b'"tool_use"' not in line and b"command-name" not in line:
        return
    record = hooks._parse(line)
    if record is None:
        return
    content = hooks._message(record).get("content")
    if record.get("type") == "user":
        text = content if isinstance(content, str) else " ".join(
            b.get("text", "") for b in content or () if isinstance(b, dict) and isinstance(b.get("text"), str))
        command = hooks._COMMAND.search(text)
        if command and command.group(1).lstrip("/").rsplit(":", 1)[-1] in MEMORY_COMMANDS:
            counts["memory"] = True
        return
    for block in content if record.get("type") == "assistant" and isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "tool_use":
            _tool(str(block.get("name") or ""), block.get("input"), counts)


def _tool(name: str, tool_input: object, counts: dict) -> None:
    if name in hooks.EDIT_TOOLS:
        counts["edits"] += 1
        target = hooks.text(tool_input, "file_path") or hooks.text(tool_input, "notebook_path")
        if target.endswith("lessons.md") or "/docs/adr/" in f"/{target}":
            counts["memory"] = True  # a lesson or decision written by hand is a memory write too
    elif "vault-index" in name or "vault_index" in name:
        if name.rsplit("__", 1)[-1] in MEMORY_TOOLS:
            counts["memory"] = True
    elif name == "Bash" and _MEMORY_SCRIPT.search(hooks.text(tool_input, "command")):
        counts["memory"] = True


def _minutes(first: str | None, last: str | None) -> float:
    try:
        start = dt.datetime.fromisoformat(str(first).replace("Z", "+00:00"))
        end = dt.datetime.fromisoformat(str(last).replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return max(0.0, (end - start).total_seconds() / 60)


if __name__ == "__main__":
    hooks.run(main)
