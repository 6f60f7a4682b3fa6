"""What the Claude Code hooks remember between runs, and the settings they read.

Standard library only (json, os, re, time): the prompt hook imports this before it knows whether it
has anything to do, on every prompt.

- Settings: `.claude/handoff.json` in the project, the context guard's file (`threshold_tokens`),
  holds the other hooks' switches too (SETTINGS below). A file that is missing is the defaults; a
  file that is not a JSON object, or a value of the wrong type, is the defaults too, and
  `read_settings` says what is wrong so a hook can tell the person once.
- Per session: one small JSON file per session id under `<index home>/hook-sessions/` (outside
  every project, so nothing shows up in a project's `git status`): the notes the prompt hook
  injected, whether the capture hook asked, whether a broken settings file was reported. Bounded:
  at most MAX_SESSION_NOTES paths a session, files older than SESSION_DAYS removed, at most
  MAX_SESSION_FILES kept.
- Handoff cards picked up: `<index home>/hook-sessions/picked-handoffs.json`, note path -> the
  session the briefing handed it to (services/briefing.py), at most MAX_PICKED entries.
A state file that cannot be read or written costs the memory of it, never the hook: the worst case
is a note injected twice or a question asked again.
"""

from __future__ import annotations

import json
import os
import re
import time

from vault_index.locations import index_home

SETTINGS_FILE = os.path.join(".claude", "handoff.json")
# key -> default; a value of another type (a bool for an int, a string for a bool) is the default.
SETTINGS = {
    "prompt_recall": True,  # UserPromptSubmit: inject notes that answer the prompt
    "briefing": True,  # SessionStart: handoff card, lessons, tensions
    "capture": True,  # Stop: ask once to record a lesson or decision
    # Trigger: Stop runs at the end of every turn. Why: a session of a couple of edits rarely
    # teaches anything worth a lesson, and asking after every small fix is noise the person learns
    # to ignore. Outcome: ask only once the session has made this many edits over this many minutes.
    "capture_min_edits": 5,
    "capture_min_minutes": 10,
}
STATE_FOLDER = "hook-sessions"
PICKED_FILE = "picked-handoffs.json"
MAX_SESSION_NOTES = 200
MAX_SESSION_FILES = 500
MAX_PICKED = 200
SESSION_DAYS = 14
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")  # as scripts/handoff.py: never a path


def read_settings(project: str | os.PathLike) -> tuple[dict, str | None]:
    """(every setting, with the defaults where missing or wrong; what is wrong with the file or None)."""
    path = os.path.join(os.fspath(project), SETTINGS_FILE)
    values = dict(SETTINGS)
    try:
        with open(path, encoding="utf-8") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return values, None
    except (OSError, ValueError) as exc:
        return values, f"{SETTINGS_FILE} cannot be read ({exc})"
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return values, f"{SETTINGS_FILE} is not valid JSON ({str(exc)[:80]})"
    if not isinstance(data, dict):
        return values, f"{SETTINGS_FILE} should hold a JSON object"
    wrong = []
    for key, default in SETTINGS.items():
        if key not in data:
            continue
        value = data[key]
        if isinstance(default, bool):
            ok = isinstance(value, bool)
        else:
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        if ok:
            values[key] = value
        else:
            wrong.append(key)
    problem = f"{SETTINGS_FILE}: {', '.join(wrong)} ignored (wrong type)" if wrong else None
    return values, problem


def state_dir() -> str:
    return os.path.join(index_home(), STATE_FOLDER)


def _session_file(session_id: str) -> str | None:
    if not session_id or not _SESSION_ID.fullmatch(session_id):
        return None
    return os.path.join(state_dir(), f"{session_id}.json")


def _read(path: str | None) -> dict:
    if path is None:
        return {}
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.loads(handle.read(1 << 20))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(path: str, data: dict) -> bool:
    """Atomic replace of a small JSON file (mode 0600: it names the person's notes); False on failure."""
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        temp = f"{path}.{os.getpid()}.tmp"
        descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(descriptor, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(data))
        os.replace(temp, path)
        return True
    except OSError:
        return False


def remembers(session_id: str) -> bool:
    """Whether state can be kept for this session id (an id that is no file name has none)."""
    return _session_file(session_id) is not None


def session(session_id: str) -> dict:
    """This session's remembered state ({} for none, or no usable session id)."""
    return _read(_session_file(session_id))


def update_session(session_id: str, **changes) -> None:
    """Merge `changes` into the session's state; `injected` lists are kept to the newest MAX_SESSION_NOTES."""
    path = _session_file(session_id)
    if path is None:
        return
    fresh = not os.path.exists(path)
    data = _read(path)
    data.update(changes)
    if isinstance(data.get("injected"), list):
        data["injected"] = data["injected"][-MAX_SESSION_NOTES:]
    data["at"] = time.time()
    if _write(path, data) and fresh:
        prune()


def injected(session_id: str) -> list[str]:
    """The notes already injected into this session (absolute paths, oldest first)."""
    found = session(session_id).get("injected")
    return [p for p in found if isinstance(p, str)] if isinstance(found, list) else []


def remember_injected(session_id: str, paths: list[str]) -> None:
    if paths:
        before = injected(session_id)
        update_session(session_id, injected=before + [p for p in paths if p not in before])


def prune(now: float | None = None) -> None:
    """Drop session files older than SESSION_DAYS, then the oldest beyond MAX_SESSION_FILES."""
    now = time.time() if now is None else now
    try:
        entries = [e for e in os.scandir(state_dir()) if e.name.endswith(".json") and e.name != PICKED_FILE]
        dated = sorted(((e.stat().st_mtime, e.path) for e in entries), reverse=True)
    except OSError:
        return
    for rank, (mtime, path) in enumerate(dated):
        if rank >= MAX_SESSION_FILES or now - mtime > SESSION_DAYS * 86400:
            try:
                os.unlink(path)
            except OSError:
                pass


def picked_handoffs() -> dict[str, dict]:
    """Handoff notes already handed to a session: path -> {"session", "at"}."""
    data = _read(os.path.join(state_dir(), PICKED_FILE))
    return {k: v for k, v in data.items() if isinstance(v, dict)}


def mark_picked(note: str, session_id: str) -> None:
    path = os.path.join(state_dir(), PICKED_FILE)
    data = picked_handoffs()
    data[note] = {"session": session_id, "at": time.time()}
    newest = sorted(data.items(), key=lambda item: item[1].get("at", 0), reverse=True)[:MAX_PICKED]
    _write(path, dict(newest))


def say_once(session_id: str, key: str) -> bool:
    """True the first time `key` is asked for in this session (and always without a session id)."""
    if _SESSION_ID.fullmatch(session_id or "") is None:
        return True
    said = session(session_id).get("said")
    said = said if isinstance(said, list) else []
    if key in said:
        return False
    update_session(session_id, said=[*said, key][-20:])
    return True
