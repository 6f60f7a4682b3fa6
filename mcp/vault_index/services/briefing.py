"""The session briefing the SessionStart hook gives a new session: what the memory holds for it now.

Three parts, in this order, in at most MAX_TOKENS (characters / 4), silent when all are empty:
1. the newest handoff card of this project not yet picked up: a note /handoff wrote under
   docs/handoffs/ (type: handoff) at most CARD_DAYS old, written by another session and not yet
   handed to one. The briefing is what hands it over: the first later session shown a card picks
   it up (services/hook_state.py records it), so a card reaches one fresh session, not every one;
2. active lessons (docs/lessons.md) that name a file present in the project, newest first;
3. open tensions of the vault (tensions.md: contradictions between notes, services/curation).
Handoffs, lessons and tensions are read where /handoff, /learn and tension_log write them
(config.content_dir: the project, or the personal folder in a clone of vault-index; an init vault's
root for a project inside one); the files a lesson names are looked up in the project itself.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from vault_index.config import content_dir
from vault_index.engine.parsing.parse import split_frontmatter
from vault_index.errors import VaultIndexError
from vault_index.services import hook_state
from vault_index.services.curation import curation, lessons
from vault_index.services.vault.safe_git import git_argv
from vault_index.services.workspace import vault_root

MAX_TOKENS = 400
CARD_DAYS = 14  # an older handoff is history, not the next step
HANDOFFS = Path("docs") / "handoffs"  # as scripts/_hooklib.HANDOFF_DIR; auto/ (pre-compact snapshots) is not a card
LESSONS = Path("docs") / "lessons.md"
MAX_LESSONS, MAX_TENSIONS = 5, 5
NEXT_STEP_CHARS = 240
MAX_PROJECT_FILES = 50_000  # files listed to match a lesson's bare file names; a bigger tree is cut
_PLACEHOLDER = re.compile(r"^<!--.*-->$")
# A file a lesson names: `in/backticks`, or a word with a folder or a suffix (scripts/x.py, setup.py).
_BACKTICKED = re.compile(r"`([^`\s]{2,200})`")
_PATHLIKE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7})(?![\w/])")


@dataclass(frozen=True)
class Briefing:
    text: str = ""
    tokens: int = 0
    card: str | None = None  # the handoff note handed over (absolute path), if any
    lessons: tuple[str, ...] = ()  # their ids
    tensions: tuple[str, ...] = ()


def handoff_card(note: str, topic: str) -> str:
    """The sentence to start a fresh session from a handoff note (/handoff prints it; the briefing shows it)."""
    about = f" on {topic}" if topic else ""
    return (f"Continue the work{about} from the handoff note {note}. Read it first (Goal, State, Next steps), "
            f"look at the touched files it lists, then start on the first next step.")


def brief(project: Path, session_id: str = "", *, today: dt.date | None = None, record: bool = True) -> Briefing:
    """The briefing for a session starting in `project` (see the module docstring). `record`: mark the
    card shown as picked up (the hook does; the eval and a dry run do not)."""
    project = Path(project).resolve()
    home = vault_root(project) or content_dir(project)
    today = today or dt.date.today()
    budget = MAX_TOKENS * 4
    head = "vault-index session briefing (from this project's notes; offer, do not act unasked):"
    parts: list[str] = []
    card = _newest_card(home, session_id, today)
    if card is not None:
        path, line = card
        parts.append(_cut(line, budget - len(head) - 1))
    used = len(head) + sum(len(p) + 1 for p in parts)
    shown_lessons: list[str] = []
    items = _lesson_lines(home / LESSONS, project)
    used = _section(parts, "Active lessons about files here:", items, budget - used, shown_lessons) + used
    shown_tensions: list[str] = []
    items = [(t["id"], f"- {t['id']}: `{t['a']}` vs `{t['b']}`") for t in _open_tensions(home)]
    _section(parts, "Open tensions (contradicting notes; tension_log records, vault_review shows):", items,
             budget - used, shown_tensions)
    if not parts:
        return Briefing()
    text = "\n".join([head, *parts])
    if card is not None and record and session_id:
        hook_state.mark_picked(str(card[0]), session_id)
    return Briefing(text, -(-len(text) // 4), str(card[0]) if card else None, tuple(shown_lessons),
                    tuple(shown_tensions))


def _section(parts: list[str], title: str, items: list[tuple[str, str]], room: int, shown: list[str]) -> int:
    """Append a titled list of as many items as fit in `room` characters; the characters used."""
    lines: list[str] = []
    used = len(title) + 1
    for key, line in items:
        if used + len(line) + 1 > room:
            break
        lines.append(line)
        shown.append(key)
        used += len(line) + 1
    if not lines:
        return 0
    parts.append("\n".join([title, *lines]))
    return used


def _cut(text: str, room: int) -> str:
    return text if len(text) <= room else text[: max(0, room - 1)].rstrip() + "…"


# --- 1. the handoff card ------------------------------------------------------------------------


def _newest_card(home: Path, session_id: str, today: dt.date) -> tuple[Path, str] | None:
    """(the note, its briefing line) of the newest handoff not written by this session, not picked
    up and at most CARD_DAYS old; None when there is none."""
    folder = home / HANDOFFS
    try:
        notes = [p for p in folder.glob("*.md") if p.is_file() and not p.is_symlink()]
    except OSError:
        return None
    picked = hook_state.picked_handoffs()
    found = []
    for note in notes:
        facts = _handoff_facts(note)
        if facts is None or str(note) in picked or (session_id and facts["session_id"] == session_id):
            continue
        if not 0 <= (today - facts["date"]).days <= CARD_DAYS:
            continue
        found.append((facts["date"], note.name, note, facts))
    if not found:
        return None
    _, _, note, facts = max(found, key=lambda item: (item[0], item[1]))
    shown = _shown(note, home)
    line = (f"Handoff waiting, written {facts['date'].isoformat()} by an earlier session ({shown}). If the person "
            f"continues that work: {handoff_card(shown, facts['topic'])}")
    if facts["next"]:
        line += f" Its first next step: {facts['next']}"
    return note, line


def _handoff_facts(note: Path) -> dict | None:
    """date, session_id, topic and first next step of a handoff note; None when it is not one."""
    try:
        with open(note, encoding="utf-8", errors="replace") as handle:
            text = handle.read(64 * 1024)
    except OSError:
        return None
    meta, error, body_start = split_frontmatter(text)
    if error or str(meta.get("type", "")).strip() != "handoff":
        return None
    when = _date(meta.get("date")) or _date(note.name[:10])
    if when is None:
        return None
    title = str(meta.get("title") or "")
    topic = title.split(":", 1)[1].strip() if title.lower().startswith("handoff:") else ""
    return {"date": when, "session_id": str(meta.get("session_id") or ""), "topic": topic,
            "next": _first_next_step(text.split("\n")[body_start:])}


def _date(value) -> dt.date | None:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value).strip()[:10])
    except ValueError:
        return None


def _first_next_step(lines: list[str]) -> str:
    inside = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("## "):
            inside = stripped[3:].strip().lower() == "next steps"
            continue
        if inside and stripped and not _PLACEHOLDER.match(stripped):
            step = re.sub(r"^(?:[-*]|\d+[.)])\s+", "", stripped)
            return _cut(" ".join(step.split()), NEXT_STEP_CHARS)
    return ""


def _shown(path: Path, project: Path) -> str:
    try:
        return path.relative_to(project).as_posix()
    except ValueError:
        return str(path)


# --- 2. lessons about files here ----------------------------------------------------------------


def _lesson_lines(path: Path, project: Path) -> list[tuple[str, str]]:
    """(id, line) of each active lesson naming a file present in the project, newest first."""
    try:
        active = lessons.list_lessons(path)
    except (VaultIndexError, OSError):
        return []
    if not active:
        return []
    files = _ProjectFiles(project)
    found = []
    for lesson in reversed(active):  # appended in order: the last is the newest
        words = " ".join([lesson.title, lesson.get("lesson"), lesson.get("cause"), lesson.get("detect")])
        named = [f for f in dict.fromkeys(_named_files(words)) if files.has(f)]
        if named:
            directive = " ".join((lesson.get("lesson") or lesson.title).split())
            found.append((lesson.id, f"- {lesson.id} ({', '.join(named[:3])}): {_cut(directive, 200)}"))
        if len(found) == MAX_LESSONS:
            break
    return found


def _named_files(text: str) -> list[str]:
    found = [m.strip("./") if m.startswith("./") else m for m in _BACKTICKED.findall(text)]
    found += _PATHLIKE.findall(text)
    return [f.rstrip(".,;:)") for f in found if "." in f.rsplit("/", 1)[-1] or "/" in f]


class _ProjectFiles:
    """Whether a name a lesson uses is a file of the project: a relative path that exists, or the
    name (or trailing path) of a file git lists there (a bounded walk outside git)."""

    def __init__(self, project: Path):
        self.project = project
        self._listed: set[str] | None = None
        self._names: set[str] = set()

    def has(self, name: str) -> bool:
        if os.path.isabs(name) or ".." in Path(name).parts:
            return False
        if (self.project / name).is_file():
            return True
        if self._listed is None:
            self._listed = self._list()
            self._names = {p.rsplit("/", 1)[-1] for p in self._listed}
        if "/" not in name:
            return name in self._names
        return any(p == name or p.endswith("/" + name) for p in self._listed)

    def _list(self) -> set[str]:
        if (self.project / ".git").exists():
            try:  # ls-files runs no hook, filter or fsmonitor (safe_git)
                done = subprocess.run(git_argv(self.project, "ls-files", "-z"), capture_output=True, timeout=5,
                                      check=False)
                if done.returncode == 0:
                    return set(done.stdout.decode("utf-8", "replace").split("\0")[:MAX_PROJECT_FILES]) - {""}
            except (OSError, subprocess.SubprocessError):
                pass
        found: set[str] = set()
        for folder, dirs, names in os.walk(self.project):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__")]
            base = Path(folder).relative_to(self.project).as_posix()
            found.update(n if base == "." else f"{base}/{n}" for n in names)
            if len(found) >= MAX_PROJECT_FILES:
                break
        return found


# --- 3. open tensions ---------------------------------------------------------------------------


def _open_tensions(home: Path) -> list[dict]:
    return [t for t in curation.read_tensions(home) if t["status"] == "open"][-MAX_TENSIONS:][::-1]
