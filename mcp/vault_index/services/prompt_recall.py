"""Prompt-time recall: which notes the UserPromptSubmit hook adds to a prompt, if any.

One function decides, `select(app, prompt, already)`, and every caller goes through it: the running
server when the hook asks it over the index socket (hybrid, with its loaded model), the hook itself
when no server answers (keywords only), and the eval, which measures exactly what the hook would
inject. The stages, in order:
1. skip what is not a question to the notes: a slash command, an empty prompt, a prompt about the
   code at hand (pasted output, a file path, an error, "this function", an instruction; prompt_form.py);
2. App.search of the prompt, one hit per note, in the app's workspace (and the caller's grants);
3. nothing at all unless the answer's confidence clears the threshold (services/search/confidence.py):
   "nothing relevant" is the common answer and the hook then stays silent;
4. the answer's first MAX_NOTES notes, minus those already injected in this session (none when
   the first was: the confidence is the first note's);
5. a short text (display path with line, heading, a line or two of snippet) cut to MAX_TOKENS.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the hook imports this module for Injection alone: the App stays unloaded
    from vault_index.services.app import App
    from vault_index.services.search.search import Filters

# At most this many notes a prompt, and this many tokens in all (counted as characters / 4, the
# same rough count the budget is stated in): a prompt's context must stay small beside the prompt.
MAX_NOTES = 3
MAX_TOKENS = 250
SNIPPET_CHARS = 200  # "one or two lines" of a note
HYBRID, KEYWORD = "hybrid", "keyword"  # the server's mode (reranking would cost the hook ~100 ms), the fallback's
# Trigger: only the first hit's relevance is calibrated; later hits ride on it.
# Why: a prompt whose first note clears the threshold often has its answer spread over two or three
# notes (a decision and the lesson it led to). Outcome: the first MAX_NOTES notes of a confident
# answer; nothing from a later page (a note injected before is dropped, not replaced by the 4th).


@dataclass(frozen=True)
class Recalled:
    """One injected note: where it is (absolute and as shown), its line, heading and a snippet."""

    path: str
    display: str
    line: int
    heading: str
    snippet: str


@dataclass(frozen=True)
class Injection:
    """What the hook adds: `text` is the additionalContext, "" (with no notes) when it stays silent.
    `confidence` is the answer's, also when nothing is injected (None: no model, or no search)."""

    notes: tuple[Recalled, ...] = ()
    text: str = ""
    tokens: int = 0
    confidence: float | None = None
    mode: str = ""
    reason: str = ""  # why it is silent: "slash command", "nothing relevant", "already injected", ...
    signals: dict = field(default_factory=dict, compare=False)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Injection:
        """The server's answer, read back by the hook; anything malformed is an empty Injection."""
        try:
            notes = tuple(Recalled(str(n["path"]), str(n["display"]), int(n["line"]), str(n["heading"]),
                                   str(n["snippet"])) for n in data.get("notes") or ())
            confidence = data.get("confidence")
            return cls(notes, str(data.get("text") or ""), int(data.get("tokens") or 0),
                       float(confidence) if isinstance(confidence, (int, float)) else None,
                       str(data.get("mode") or ""), str(data.get("reason") or ""))
        except (TypeError, KeyError, ValueError, AttributeError):
            return cls(reason="malformed answer")


def tokens(text: str) -> int:
    """The rough count the budget is in: characters / 4, rounded up."""
    return -(-len(text) // 4)


def wanted(prompt: str) -> bool:
    """Whether a prompt is searched at all: not a slash command, not empty. Short acknowledgements
    ("ok", "thanks") are searched: the confidence says no to them, not a word list."""
    text = (prompt or "").strip()
    return bool(text) and not text.startswith("/")


def select(app: App, prompt: str, already: set[str] | frozenset[str] = frozenset(), *, mode: str = HYBRID,
           filters: Filters | None = None, root: Path | None = None) -> Injection:
    """What the prompt hook would inject for `prompt` on `app` (see the module docstring).

    `already`: absolute paths injected earlier in the session; `filters`: the caller's read grants;
    `root`: what display paths are relative to (default: the workspace's folder, else the project)."""
    if not wanted(prompt):
        return Injection(reason="not a question to the notes")
    from vault_index.services.prompt_form import at_hand

    if why := at_hand(prompt):
        return Injection(reason=f"about the code at hand ({why})")
    from vault_index.services.search.query import MAX_QUERY_CHARS

    result = app.search(prompt.strip()[:MAX_QUERY_CHARS], mode=mode, limit=MAX_NOTES, filters=filters,
                        per_note=True)
    base = dict(confidence=result.confidence, mode=result.mode, signals=result.signals)
    if not result.hits:
        return Injection(reason="no hits", **base)
    if not result.relevant:
        return Injection(reason="nothing relevant", **base)
    # Trigger: with the first note injected earlier, the others went in under its confidence (0.95
    # for two unrelated notes; walkthrough C). Why: the confidence judges the first hit only.
    # Outcome: silent then; a later note injected before is dropped, the first still leads.
    if result.hits[0].path in already:
        return Injection(reason="already injected", **base)
    fresh = [hit for hit in result.hits[:MAX_NOTES] if hit.path not in already]
    root = root or app.workspace.root or _project()
    notes = tuple(Recalled(hit.path, _display(hit.path, root), hit.line_start, hit.heading, _lines(hit.snippet))
                  for hit in fresh)
    # as search says it: chunks still waiting for vectors were ranked by their keywords alone (walkthrough G)
    pending = any(n.startswith("keyword-only") or " no vector" in n for n in result.notices)
    kept, text = render(notes, result.confidence, pending)
    return Injection(kept, text, tokens(text), **base)


def render(notes: tuple[Recalled, ...], confidence: float | None,
           pending: bool = False) -> tuple[tuple[Recalled, ...], str]:
    """(the notes that fit, the additionalContext), within MAX_TOKENS: a note that does not fit whole
    is cut to what is left, and one with no room left for a snippet is dropped."""
    # the confidence is the first note's (the one it judges); the others are only the next nearest
    sure = (f"confidence {confidence:.2f} for the first" + ("; the others are the next nearest" if len(notes) > 1
            else "") + "; ") if confidence is not None else ""
    # walkthrough H: "some notes" read oddly with every chunk waiting; the search's notice says how many
    waiting = "notes still waiting for vectors were ranked by keywords alone; " if pending else ""
    head = (f"vault-index: notes that may answer this prompt ({sure}{waiting}open one with get_note before "
            "relying on it):")
    budget = MAX_TOKENS * 4
    lines, kept = [head], []
    for note in notes:
        line = f"- {note.display}:{note.line} ({note.heading}): {note.snippet}"
        room = budget - len("\n".join(lines)) - 1
        if len(line) > room:
            prefix = line[: len(line) - len(note.snippet)]
            if room - len(prefix) < 40:  # not even a few words of it: leave the note out
                break
            line = line[: room - 1].rstrip() + "…"
        lines.append(line)
        kept.append(note)
    if not kept:
        return (), ""
    return tuple(kept), "\n".join(lines)


def _lines(snippet: str) -> str:
    """A line or two of a snippet: its words on one line, cut at SNIPPET_CHARS on a word."""
    text = " ".join(snippet.split())
    if len(text) <= SNIPPET_CHARS:
        return text
    cut = text.rfind(" ", 0, SNIPPET_CHARS)
    return text[: cut if cut > SNIPPET_CHARS // 2 else SNIPPET_CHARS].rstrip(" ,;:") + "…"


def _display(path: str, root: Path | None) -> str:
    try:
        return Path(path).relative_to(root).as_posix() if root is not None else path
    except ValueError:
        return path


def _project() -> Path:
    from vault_index.config import project_dir

    return project_dir()
