"""Shared plumbing for the Claude Code hook scripts: tolerant input, exit 0, transcript reading.

Stdlib only at import time. A hook pays interpreter start-up on every tool call or prompt, so
the `vault_index` package (and through it yaml, pathspec, later numpy and the models) is imported
only by the script that needs it, and only once it knows there is work to do.

Hook input (one JSON object on stdin) and output (one JSON object on stdout, exit 0) follow
Claude Code's hooks reference; the transcript is the session's JSONL file, one record a line,
read from its end (docs/hooks.md in this repo lists the fields used and where they come from).
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _hookio import NOTE_SUFFIXES, ROOT, ensure_package, read_payload, run, text, warn  # noqa: E402, F401

DEFAULT_THRESHOLD = 450_000
HANDOFF_CONFIG = Path(".claude") / "handoff.json"
HANDOFF_DIR = Path("docs") / "handoffs"
# Trigger: the guard runs before every prompt and reads the transcript each time.
# Why: long sessions reach tens of MB; parsing all of it costs seconds, while the latest usage
# and the recent requests sit in the last few hundred KB.
# Outcome: read a tail; widen it only when the tail holds no answer (one huge tool result).
TAIL_BYTES = 4 * 1024 * 1024
MAX_TAIL_BYTES = 64 * 1024 * 1024
EDIT_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
REQUEST_CHARS = 300
# User lines that are not something the person asked: command plumbing, reminders, interrupts.
_NOISE_PREFIXES = ("<local-command-stdout>", "<local-command-stderr>", "<system-reminder>",
                   "[Request interrupted", "Caveat: The messages below")
_COMMAND = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>\s*(.*?)\s*</command-args>", re.S)


def project_dir(payload: dict) -> Path:
    """Where docs/ and .claude/ live: $CLAUDE_PROJECT_DIR, else the payload's cwd, else ours."""
    for candidate in (os.environ.get("CLAUDE_PROJECT_DIR", ""), text(payload, "cwd")):
        if candidate:
            return Path(candidate)
    return Path.cwd()


def content_dir(project: Path) -> Path:
    """Where handoffs and snapshots go for `project` (vault_index.config.content_dir): the project
    itself, or the personal folder when the project is a clone of vault-index."""
    ensure_package()
    from vault_index.config import content_root

    return content_root(project)


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")


def read_threshold(project: Path) -> int:
    """threshold_tokens from <project>/.claude/handoff.json; the default when missing or bad."""
    try:
        data = json.loads((project / HANDOFF_CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return DEFAULT_THRESHOLD
    value = data.get("threshold_tokens") if isinstance(data, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return DEFAULT_THRESHOLD


def read_settings(project: Path) -> tuple[dict, str | None]:
    """Every hook setting of <project>/.claude/handoff.json with its default where missing or wrong,
    and what is wrong with the file (vault_index.services.hook_state; stdlib only)."""
    ensure_package()
    from vault_index.services.hook_state import read_settings as read

    return read(project)


def settings_notice(problem: str | None, session_id: str) -> str:
    """What to tell the person about a broken settings file, once a session ("" otherwise)."""
    if not problem:
        return ""
    from vault_index.services.hook_state import say_once

    if not say_once(session_id, "settings"):
        return ""
    return f"vault-index: {problem}; the hooks use their defaults until it is fixed."


# --- transcript ------------------------------------------------------------------------------


def _tail_lines(path: Path, max_bytes: int) -> tuple[list[bytes], bool]:
    """The complete lines in the file's last max_bytes, and whether that is the whole file."""
    if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or /dev/zero would block or never end
        raise OSError(f"{path} is not a regular file")
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        start = max(0, size - max_bytes)
        handle.seek(start)
        data = handle.read()
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first one is cut
    return lines, start == 0


def _windows(path: Path) -> Iterator[tuple[list[bytes], bool]]:
    window = TAIL_BYTES
    while True:
        lines, whole = _tail_lines(path, window)
        yield lines, whole
        if whole or window >= MAX_TAIL_BYTES:
            return
        window *= 4


def _parse(raw: bytes) -> dict | None:
    try:
        record = json.loads(raw)
    except ValueError:  # includes UnicodeDecodeError
        return None
    except RecursionError:  # thousands of nested [ or {: read it with the deep parts cut off
        record = _parse_clamped(raw)
    return record if isinstance(record, dict) else None


# A JSON string (escapes included) or a bracket: what the depth clamp steps through.
_JSON_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
CLAMP_DEPTH = 32  # a record's fields sit at depth 3; tool inputs may nest a little more


def _parse_clamped(raw: bytes) -> dict | None:
    """Parse a line whose nesting is too deep for json, each part below CLAMP_DEPTH as null.

    Trigger: a tool input nested thousands deep inside an assistant record. Why: dropping the
    whole line skipped that message's usage, and the guard fell back to an older, smaller size
    (it failed open). Outcome: the record keeps its type, flags and usage.
    """
    pieces, depth, kept_until, cut_from = [], 0, 0, -1
    for token in _JSON_TOKEN.finditer(raw):
        char = token.group()[:1]
        if char == b'"':
            continue
        if char in b"[{":
            depth += 1
            if depth == CLAMP_DEPTH + 1:
                cut_from = token.start()
        else:
            if depth == CLAMP_DEPTH + 1 and cut_from >= 0:
                pieces += [raw[kept_until:cut_from], b"null"]
                kept_until, cut_from = token.end(), -1
            depth -= 1
    pieces.append(raw[kept_until:])
    try:
        record = json.loads(b"".join(pieces))
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def read_records(path: str | Path, max_bytes: int = TAIL_BYTES) -> list[dict]:
    """Parsed records of the transcript's tail, oldest first; unparseable lines skipped."""
    try:
        lines, _ = _tail_lines(Path(path), max_bytes)
    except (OSError, ValueError):
        return []
    return [r for r in (_parse(raw) for raw in lines if raw.strip()) if r is not None]


def _message(record: dict) -> dict:
    message = record.get("message")
    return message if isinstance(message, dict) else {}


def _count(usage: dict, key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def context_of(record: dict) -> int | None:
    """Context tokens of one main-chain assistant record, None if it is not one with usage.

    The prompt the model saw is input + cache_creation + cache_read tokens; output tokens are
    the reply. Sidechain (subagent) records have their own, smaller context; "<synthetic>"
    records (errors, interrupts) carry zeros.
    """
    if record.get("type") != "assistant" or record.get("isSidechain") is True:
        return None
    message = _message(record)
    usage = message.get("usage")
    if not isinstance(usage, dict) or message.get("model") == "<synthetic>":
        return None
    total = sum(_count(usage, k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    return total or None


def is_compaction(record: dict) -> bool:
    """The marker Claude Code writes when it compacts: the context after it starts small."""
    return (record.get("type") == "system" and record.get("subtype") == "compact_boundary") or (
        record.get("type") == "user" and record.get("isCompactSummary") is True)


def context_tokens(records: list[dict]) -> int | None:
    """Context size from parsed records (oldest first): the latest main-chain message's usage.

    One API message is written as several lines (one per content block) that repeat its
    message.id and usage, so the size is taken from one message, never summed over lines.
    A compaction after the latest message resets the size to 0.
    """
    latest: int | None = None
    for record in records:
        if is_compaction(record):
            latest = 0
        else:
            tokens = context_of(record)
            latest = latest if tokens is None else tokens
    return latest


# Keys of the record itself, found by plain byte search (memchr-fast). Inside a JSON string every
# quote is escaped, so `usage":` (a quote right after the word) never occurs in quoted text: a
# tool result that mentions usage or compaction (\"usage\": ...) is never parsed. Both the compact
# (`"usage":{`) and the spaced (`"usage": {`) serialisations match.
_USAGE_KEY = b'"usage":'
_COMPACTION_KEYS = (b'compact_boundary"', b'"isCompactSummary":')
# Claude Code writes isSidechain as a record's second key (after parentUuid): looked for in the
# head only, so a tool input that carries the same key further on cannot hide a main-chain line.
RECORD_HEAD_BYTES = 160
_SIDECHAIN_KEYS = (b'"isSidechain":true', b'"isSidechain": true')
SCAN_BLOCK_BYTES = 1024 * 1024
STRADDLE_BYTES = 64  # a key cut by a block boundary is found in this much of either side


def _marked(data: bytes) -> bool:
    """Whether `data` holds a usage or compaction key of a record (not text quoted in one)."""
    return _USAGE_KEY in data or any(key in data for key in _COMPACTION_KEYS)


def _lines_backwards(path: Path, max_bytes: int) -> Iterator[bytes]:
    """The file's complete lines that hold a marker, newest first, read in blocks from its end.

    At most max_bytes are read. Only blocks that hold a marker are split into lines; a line
    longer than a block is joined once, from its pieces, and only when it holds a marker.
    """
    # O_NONBLOCK: opening a FIFO for reading would wait for a writer; checked after opening.
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with open(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # a FIFO or /dev/zero never ends
            raise OSError(f"{path} is not a regular file")
        end = handle.seek(0, os.SEEK_END)
        floor, position = max(0, end - max_bytes), end
        pending: list[bytes] = []  # pieces of the line that continues past the block read last
        pending_marked = False
        while position > floor:
            start = max(floor, position - SCAN_BLOCK_BYTES)
            handle.seek(start)
            block = handle.read(position - start)
            position = start
            straddle = _marked(block[-STRADDLE_BYTES:] + pending[0][:STRADDLE_BYTES]) if pending else False
            cut = block.find(b"\n")
            if cut < 0:
                pending.insert(0, block)
                pending_marked = pending_marked or straddle or _marked(block)
                continue
            if pending_marked or straddle or _marked(block[cut + 1:]):
                for line in reversed((block[cut + 1:] + b"".join(pending)).split(b"\n")):
                    if _marked(line):
                        yield line
            pending = [block[:cut]]
            pending_marked = _marked(block[:cut])
        if floor == 0 and pending_marked:
            yield b"".join(pending)  # the file's first line is complete


def latest_context_tokens(path: str | Path) -> int | None:
    """Context size of the session now, from the transcript's end; None when unknown.

    Streams the file backwards and parses only lines whose own keys (not quoted text) hold a
    usage block or a compaction marker, so the cost follows the distance to the latest
    message, not the transcript's size (bench: `vault-index bench`, hooks part).
    """
    try:
        for raw in _lines_backwards(Path(path), MAX_TAIL_BYTES):
            if any(key in raw for key in _COMPACTION_KEYS):
                record = _parse(raw)
                if record is not None and is_compaction(record):
                    return 0
            if _USAGE_KEY not in raw or any(key in raw[:RECORD_HEAD_BYTES] for key in _SIDECHAIN_KEYS):
                continue  # subagents' lines (often most of a long tail) are skipped unparsed
            record = _parse(raw)
            tokens = context_of(record) if record is not None else None
            if tokens is not None:
                return tokens
    except (OSError, ValueError):
        return None
    return None


def _request_text(record: dict) -> str:
    """What the person typed in one user record, "" for tool results and plumbing."""
    if record.get("type") != "user" or record.get("isSidechain") is True:
        return ""
    if record.get("isMeta") is True or record.get("isCompactSummary") is True:
        return ""
    content = _message(record).get("content")
    if isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return ""
        content = "\n".join(text(b, "text") for b in content if isinstance(b, dict) and b.get("type") == "text")
    if not isinstance(content, str):
        return ""
    content = content.strip()
    command = _COMMAND.search(content)
    if command:  # a slash command is recorded as tags: show it as it was typed
        args = _COMMAND_ARGS.search(content)
        content = f"{command.group(1)} {args.group(1) if args else ''}".strip()
    if not content or content.startswith(_NOISE_PREFIXES):
        return ""
    line = " ".join(content.split())
    return line if len(line) <= REQUEST_CHARS else line[: REQUEST_CHARS - 3] + "..."


def recent_requests(path: str | Path, n: int = 10) -> list[str]:
    """The last n things the person asked in the main chain, oldest first."""
    found: list[str] = []
    try:
        for lines, _whole in _windows(Path(path)):
            found = []
            for raw in reversed(lines):
                if b'"user"' not in raw:
                    continue
                record = _parse(raw)
                request = _request_text(record) if record is not None else ""
                if request:
                    found.append(request)
                    if len(found) == n:
                        return found[::-1]
    except (OSError, ValueError):
        return found[::-1]
    return found[::-1]


def touched_files(path: str | Path, max_bytes: int = MAX_TAIL_BYTES) -> list[str]:
    """Files written or edited in the session (subagents included), most recent last, unique."""
    order: dict[str, None] = {}
    try:
        lines, _ = _tail_lines(Path(path), max_bytes)
    except (OSError, ValueError):
        return []
    for raw in lines:
        if b'"tool_use"' not in raw or (b'"file_path"' not in raw and b'"notebook_path"' not in raw):
            continue
        record = _parse(raw)
        content = _message(record).get("content") if record is not None and record.get("type") == "assistant" else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "tool_use" or block.get("name") not in EDIT_TOOLS:
                continue
            target = text(block.get("input"), "file_path") or text(block.get("input"), "notebook_path")
            if target:
                order.pop(target, None)
                order[target] = None
    return list(order)


# --- handoff notes ---------------------------------------------------------------------------


def handoff_for_session(project: Path, session_id: str) -> Path | None:
    """An existing handoff note (docs/handoffs/*.md) whose frontmatter names this session."""
    if not session_id:
        return None
    folder = project / HANDOFF_DIR
    try:
        candidates = sorted(folder.glob("*.md"), reverse=True)
    except OSError:
        return None
    wanted = re.compile(rf"^session_id:\s*[\"']?{re.escape(session_id)}[\"']?\s*$", re.M)
    for note in candidates:
        if not note.is_file():  # a folder or FIFO named *.md
            continue
        try:
            with open(note, encoding="utf-8", errors="replace") as handle:
                head = handle.read(2048)
        except OSError:
            continue
        if head.startswith("---") and wanted.search(head.split("\n---", 1)[0]):
            return note
    return None


def note_head(title: str, date: str, session_id: str, kind: str, **extra: str) -> list[str]:
    """Frontmatter and title of a handoff note (the guard finds a session's note by session_id)."""
    fields = [f"title: {json.dumps(title)}", f"date: {date}", f"session_id: {json.dumps(session_id or 'unknown')}",
              f"type: {kind}", *(f"{key}: {json.dumps(value)}" for key, value in extra.items())]
    return ["---", *fields, "---", f"# {title}", ""]


def shown_path(path: str | Path, project: Path) -> str:
    """A path relative to the project when it is inside it (notes stay portable), else as given."""
    try:
        return Path(path).resolve().relative_to(project.resolve()).as_posix()
    except (OSError, ValueError):
        return str(path)


def activity_markdown(transcript: str, project: Path, n_requests: int = 10) -> str:
    """The "Recent requests" and "Touched files" sections, taken from the transcript."""
    requests = [redact(r) for r in recent_requests(transcript, n_requests)] if transcript else []
    files = touched_files(transcript) if transcript else []
    lines = ["## Recent requests", ""]
    lines += [f"{i}. {r}" for i, r in enumerate(requests, 1)] or ["(none found in the transcript)"]
    lines += ["", "## Touched files", ""]
    lines += [f"- {shown_path(f, project)}" for f in files] or ["(none found in the transcript)"]
    return "\n".join(lines) + "\n"


def redact(text: str) -> str:
    """`text` with credentials replaced (detect-secrets, through the package; docs/hooks.md)."""
    if not text:
        return text
    ensure_package()
    from vault_index.services.writes.redact import redact as redact_text

    return redact_text(text)


def create_unique(folder: Path, stem: str, content: str, project: Path | None = None) -> Path:
    """Write folder/stem.md, or stem-2.md, stem-3.md ... : an existing note is never replaced.

    Written through the write service (lazily imported: only a hook that writes pays for it), so a
    docs/handoffs that is a symlink out of `project`, a FIFO named like the note or a control folder
    is refused with a clear message. The session's own notes are not role-checked (the local person
    writes them), but every path rule holds.
    """
    ensure_package()
    from vault_index.services.vault.vault import Vault
    from vault_index.services.writes.write import Caller, WriteService, require_ok, writer_for_file

    writer = WriteService(Vault.open(project)) if project is not None else writer_for_file(folder / f"{stem}.md")
    caller = Caller.local(writer.vault, agent="claude-code-hook")
    for n in range(1, 1000):
        path = folder / (f"{stem}.md" if n == 1 else f"{stem}-{n}.md")
        # commit=False: a snapshot or handoff holds session text; it is the person's to commit, never ours
        outcome = writer.update_file(caller, str(path), lambda _old: content, why=f"handoff note {path.name}",
                                     exclusive=True, collection_check=False, operation="handoff", commit=False)
        if outcome.status != "stale":
            require_ok(outcome)
            return path
    raise FileExistsError(f"{folder}/{stem}.md and 998 numbered variants all exist; remove some")
