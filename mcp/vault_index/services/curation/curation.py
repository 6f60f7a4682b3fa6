"""Curation of a vault: decay, the advisory lint, the status dashboard and the tension log.

Everything here is advisory: lint reports, the tension log records, nothing fixes a note by
itself. Every function reads the vault through the write service's `read` (so the caller's read
grants, the tolerant frontmatter parse and the validation report are the same as `note_read`'s)
and writes only through `WriteService.update_file` (locked, atomic, committed).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vault_index.engine.parsing import links as links_rules
from vault_index.services.vault import frontmatter as frontmatter_rules
from vault_index.services.vault.safe_git import git_argv
from vault_index.services.vault.walk import MAX_NOTES, SKIPPED_DIRS, TENSIONS_FILE, note_paths  # noqa: F401 - curation.X

DEFAULT_AGING_FRACTION = 0.75   # aging from 3/4 of ttl_days on (config: decay.aging_after_fraction)
OLD_DRAFT_DAYS = 30             # a draft untouched this long is reported
STAGNANT_DAYS = 60              # confidence: low, untouched this long, is reported
RECENT_WRITES = 10              # commits the dashboard lists
MAX_NOTE_BYTES = 10_000_000  # lint reads no more of one note
MAX_TENSION_CHARS = 2000
GIT_TIMEOUT_S = 10

# check name -> severity (docs/links.md). A lint run fails (`fail_on`) on errors by default and on
# warnings too with --strict; info never fails it.
CHECKS = {
    "invalid_frontmatter": "error",
    "duplicate_name": "error",
    "unresolved_link": "warning",
    "ambiguous_link": "warning",
    "name_mismatch": "warning",
    "deprecated_linked": "warning",
    "stale": "warning",
    "old_draft": "warning",
    "low_confidence": "warning",
    "unanswered_question": "warning",
    "orphan": "info",
    "untrusted_hook": "warning",  # a declared vault hook this machine will not run (services/writes/hook_trust.py)
}
# Edge kinds that count as "still linked" for deprecated_linked: saying that a note supersedes,
# contradicts or cites an old one is how it should be retired, not a use of it.
USING_KINDS = ("wikilink", "embed", "markdown", "related")
HUB_TYPES = ("moc",)  # entry points: nothing needs to link to them, so never orphans
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
_TENSION_HEAD = re.compile(r"^## (T-(\d{4,})): `(.+?)` vs `(.+?)`\s*$", re.MULTILINE)
_TENSION_STATUS = re.compile(r"^- status: (\w+)\s*$", re.MULTILINE)


# --- decay --------------------------------------------------------------------------------------


def as_date(value) -> dt.date | None:
    """A frontmatter date (YAML date, datetime or ISO text) as a date; None when unusable."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip()[:10])
        except ValueError:
            return None
    return None


def decay(frontmatter: dict, today: dt.date, aging_after_fraction: float = DEFAULT_AGING_FRACTION) -> dict | None:
    """{"state": fresh|aging|stale, "age_days", "ttl_days"}; None without ttl_days or a date.

    One rule for every surface: the frontmatter module's (age counts from `updated`, else `created`).
    """
    return frontmatter_rules.decay(jsonable_dates(frontmatter), today, aging_after_fraction)


def jsonable_dates(fields: dict) -> dict:
    """YAML dates as ISO text, the form the frontmatter module and the index hold them in."""
    return {k: v.isoformat() if isinstance(v, dt.date) else v for k, v in fields.items()}


def aging_fraction(vault) -> float:
    return float((vault.config.get("decay") or {}).get("aging_after_fraction") or DEFAULT_AGING_FRACTION)


def indexed_decay(store, path: str, today: dt.date, fraction: float) -> dict | None:
    """Decay of an indexed file from the frontmatter the index holds (search hits show it inline)."""
    record = store.file_record(path)
    return decay(record["frontmatter"], today, fraction) if record else None


# --- walking the vault ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NoteFacts:
    path: str                 # vault-relative, posix
    collection: str
    frontmatter: dict
    problems: tuple
    decay: dict | None
    links: tuple  # engine.links.Link (a bare string is read as a wikilink on line 1)
    title: str = ""
    head: tuple[str, ...] = ()  # the frontmatter's lines, to point at a field's line


def readable_notes(writer, caller, root: Path) -> list[NoteFacts]:
    """Every note the caller may read, through the write service's read (grants, validation)."""
    facts = []
    for rel in note_paths(root):
        view = writer.read(caller, rel)
        if _is_outcome(view):
            continue  # denied, vanished meanwhile, or not a regular file: not the caller's to see
        text = _note_text(root, rel, view.version) or view.body
        start = links_rules.body_start(text)
        head = tuple(text.split("\n", start)[:start])
        links = tuple(links_rules.extract(text, view.frontmatter, start))
        title = links_rules.note_title(rel, view.frontmatter, text, start)
        facts.append(NoteFacts(view.path, view.collection, view.frontmatter, tuple(view.problems),
                               view.decay, links, title, head))
    return facts


def _note_text(root: Path, rel: str, version: str) -> str | None:
    """The note's whole text (for line numbers), only if it is the very file the checked read saw.

    Trigger: lint re-opened each note by name with open(), after the write service's checked read:
    a note swapped meanwhile for a symlink (to a file outside the vault) or a FIFO was followed,
    or blocked the run (issue 22). Outcome: the same checked walk as the read (no link followed,
    no FIFO or hard link read), and the bytes must carry the version the read returned; anything
    else is None (the caller falls back to the read's own body).
    """
    from vault_index.engine.files import fileio
    from vault_index.errors import VaultIndexError

    parts = tuple(rel.split("/"))
    try:
        folder = fileio.open_folder(root, parts[:-1])
        try:
            data, _ = fileio.read_current(folder, parts[-1], rel)
        finally:
            os.close(folder)
    except (OSError, VaultIndexError):
        return None
    if data is None or fileio.file_version(data) != version:
        return None
    return data[:MAX_NOTE_BYTES].decode("utf-8", errors="replace")


def _is_outcome(value) -> bool:
    return hasattr(value, "ok") and not hasattr(value, "body")


# --- lint ---------------------------------------------------------------------------------------


def _links_of(note: NoteFacts) -> list[links_rules.Link]:
    return [link if isinstance(link, links_rules.Link) else links_rules.Link(str(link), "wikilink", 1)
            for link in note.links]


def _field_line(note: NoteFacts, field: str) -> int:
    """The file line of a frontmatter field (1 when it is absent: the note's first line)."""
    return next((i + 1 for i, text in enumerate(note.head) if text.startswith(f"{field}:")), 1)


def resolve_links(notes: list[NoteFacts]) -> dict[str, list[tuple[links_rules.Link, links_rules.Resolution]]]:
    """Each note's links with their resolution, by the index's own rule (engine/parsing/links.py)."""
    lookup = links_rules.memory_lookup(
        (n.path, links_rules.note_names(n.path, n.frontmatter, n.title)) for n in notes)
    return {n.path: [(link, links_rules.resolve(link.target, n.path, "", lookup)) for link in _links_of(n)]
            for n in notes}


def lint_notes(notes: list[NoteFacts], today: dt.date) -> list[dict]:
    """Every finding as {check, severity, path, line, message}, in path then line order."""
    resolved = resolve_links(notes)
    inbound: dict[str, set[str]] = {n.path: set() for n in notes}
    using: dict[str, set[str]] = {n.path: set() for n in notes}
    status = {n.path: str(n.frontmatter.get("status") or "") for n in notes}
    for source, pairs in resolved.items():
        for link, found in pairs:
            if found.target and found.target != source:
                inbound[found.target].add(source)
                if link.kind in USING_KINDS:
                    using[found.target].add(source)
    answered = {_question(q) for n in notes for q in _as_list(n.frontmatter.get("questions_answered"))}
    names: dict[str, list[NoteFacts]] = {}
    for note in notes:
        canonical = note.frontmatter.get("name") or note.frontmatter.get("title")
        if isinstance(canonical, str) and canonical.strip():
            names.setdefault(links_rules.name_key(canonical), []).append(note)
    issues: list[dict] = []

    def add(check: str, path: str, message: str, line: int = 1) -> None:
        issues.append({"check": check, "severity": CHECKS[check], "path": path, "line": line, "message": message})

    for key, same in names.items():
        for note in same if len(same) > 1 else ():
            others = ", ".join(n.path for n in same if n is not note)
            field = "name" if note.frontmatter.get("name") else "title"
            add("duplicate_name", note.path, f"{field} '{key}' is also the name of {others}", _field_line(note, field))
    for note in notes:
        _lint_one(note, resolved[note.path], inbound, using, status, answered, today, add)
    return sorted(issues, key=lambda i: (i["path"], i["line"], i["check"]))


def _lint_one(note, pairs, inbound, using, status, answered, today, add) -> None:
    fm = note.frontmatter
    for found in note.problems:
        field = str(found.get("field", "frontmatter"))
        add("invalid_frontmatter", note.path, f"{found.get('message') or field} (rule: {found.get('rule', '?')})",
            _field_line(note, field.split(".")[0]))
    for link, found in pairs:
        if found.status == "ambiguous":
            add("ambiguous_link", note.path, f"[[{link.target}]] ({link.kind}) could be any of: "
                + ", ".join(found.candidates) + " (write the path to choose one)", link.line)
        elif found.status != "resolved":
            add("unresolved_link", note.path, f"[[{link.target}]] ({link.kind}) names no note", link.line)
    name = fm.get("name")
    stem = links_rules.file_key(note.path)
    if isinstance(name, str) and name.strip() and links_rules.name_key(name) != stem:
        add("name_mismatch", note.path, f"name '{name}' differs from the file name '{stem}' (rename one)",
            _field_line(note, "name"))
    if note.decay and note.decay["state"] == "stale":
        add("stale", note.path, f"{note.decay['age_days']} days since updated, past its ttl_days "
                                f"of {note.decay['ttl_days']}: confirm and update it, or deprecate it",
            _field_line(note, "ttl_days"))
    if status[note.path] == "deprecated":
        linking = sorted(p for p in using[note.path] if status[p] == "canonical")
        if linking:
            add("deprecated_linked", note.path, "deprecated but linked from canonical " + ", ".join(linking),
                _field_line(note, "status"))
    if not inbound[note.path] and fm.get("type") not in HUB_TYPES:
        add("orphan", note.path, "no other note links here")
    touched = as_date(fm.get("updated")) or as_date(fm.get("created"))
    age = (today - touched).days if touched else None
    if status[note.path] == "draft" and age is not None and age > OLD_DRAFT_DAYS:
        add("old_draft", note.path, f"a draft for {age} days: promote, finish or deprecate it",
            _field_line(note, "status"))
    if str(fm.get("confidence") or "").casefold() == "low" and age is not None and age > STAGNANT_DAYS:
        add("low_confidence", note.path, f"confidence low and unchanged for {age} days",
            _field_line(note, "confidence"))
    for question in _as_list(fm.get("questions_raised")):
        if _question(question) and _question(question) not in answered:
            add("unanswered_question", note.path, f"no note answers: {str(question).strip()}",
                _field_line(note, "questions_raised"))


def _question(text) -> str:
    return " ".join(str(text).casefold().split()).rstrip("?").strip()


def failed(issues: list[dict], fail_on: str) -> bool:
    """True when a finding reaches `fail_on` ("error" or "warning"); "never" never fails."""
    threshold = SEVERITY_RANK.get(fail_on)
    return threshold is not None and any(SEVERITY_RANK[i["severity"]] >= threshold for i in issues)


def _as_list(value) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


# --- status dashboard ---------------------------------------------------------------------------


def dashboard(notes: list[NoteFacts], tensions: list[dict], recent: list[dict]) -> dict:
    """Counts per collection and status, invalid frontmatter, decay spread, open tensions, writes."""
    per_collection: dict[str, Counter] = {}
    for note in notes:
        key = str(note.frontmatter.get("status") or "none")
        per_collection.setdefault(note.collection or "", Counter())[key] += 1
    spread = Counter((n.decay or {}).get("state", "none") for n in notes)
    return {
        "notes": len(notes),
        "collections": {name: dict(sorted(c.items())) for name, c in sorted(per_collection.items())},
        "invalid_frontmatter": sum(1 for n in notes if n.problems),
        "decay": {state: spread.get(state, 0) for state in ("fresh", "aging", "stale", "none")},
        "open_tensions": sum(1 for t in tensions if t["status"] == "open"),
        "recent_writes": recent,
    }


def recent_writes(root: Path, can_read: Callable[[str], bool], limit: int = RECENT_WRITES) -> list[dict]:
    """The last commits that touched notes (.md) the caller may read (git log; [] outside a repository).

    `--relative` and the pathspec `.` keep the log to the vault's own files with paths relative to
    its root, also when the vault is a folder inside a larger repository.
    """
    try:
        proc = subprocess.run(
            git_argv(root, "log", f"-n{limit * 5}", "--no-renames", "--relative",
                     "--name-only", "--format=%x1e%H%x1f%aI%x1f%an <%ae>%x1f%s", "--", "."),
            capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if proc.returncode != 0:
        return []
    found = []
    for record in proc.stdout.split("\x1e")[1:]:
        head, _, names = record.partition("\n")
        commit, when, author, subject = (head.split("\x1f") + ["", "", "", ""])[:4]
        paths = [p for p in names.split("\n") if p.endswith(".md") and can_read(str(root / p))]
        if paths:
            found.append({"commit": commit, "date": when, "author": author, "message": subject, "paths": paths})
        if len(found) >= limit:
            break
    return found


# --- review: the dashboard and the lint over the caller's notes ---------------------------------


# `lint` on a plain notes folder (no .vault-index/config.yaml) says so: its notes are read without
# the curated schema's required fields and types (services/writes/notes.read_view).
PLAIN_NOTICE = ("not a curated vault (no .vault-index/config.yaml): notes are checked as plain notes (links, "
                "names, the shared fields they set), not for the curated schema's required fields and types "
                "(`vault-index init` makes a curated vault)")


def review(writer, vault, caller, scope, *, fail_on: str = "never", lint: bool = True) -> dict:
    """The dashboard (and with `lint` the findings) over the notes the caller may read, as
    {status ok|failed, message, path, version, data}: the answer of vault_review, lint and dashboard.
    The surface checks first that the caller reads anything at all (`scope.reads_any`)."""
    today = dt.date.today()
    notes = readable_notes(writer, caller, Path(vault.root))
    curated = vault.config_path is not None
    tensions = [t for t in read_tensions(Path(vault.root))
                if scope.can_read(Path(vault.root) / t["a"]) and scope.can_read(Path(vault.root) / t["b"])]
    data = dashboard(notes, tensions, recent_writes(Path(vault.root), scope.can_read))
    message = f"{data['notes']} notes, {data['invalid_frontmatter']} with invalid frontmatter"
    data["curated"] = curated
    if not curated:
        message = f"{PLAIN_NOTICE}; {message}"
    if lint:
        issues = lint_notes(notes, today) + hook_issues(vault)
        data["issues"] = issues
        data["failed"] = failed(issues, fail_on)
        message += f", {len(issues)} lint findings" + (" (failed)" if data["failed"] else "")
    return {"status": "failed" if data.get("failed") else "ok", "message": message, "path": "", "version": None,
            "data": data}


def hook_issues(vault) -> list[dict]:
    """A lint finding per declared hook that will not run on this machine (not trusted, or changed)."""
    from vault_index.services.writes import hook_trust

    return [{"check": "untrusted_hook", "severity": CHECKS["untrusted_hook"], "path": state.path, "line": 1,
             "message": f"not run on writes: {state.problem or 'not trusted here (new or changed content)'}; "
                        f"review it, then `vault-index trust {vault.root}`"}
            for state in hook_trust.declared(vault) if not state.trusted]


# --- tension log --------------------------------------------------------------------------------


def parse_tensions(text: str) -> list[dict]:
    """The tensions recorded in the log: {id, a, b, status}, in file order."""
    heads = list(_TENSION_HEAD.finditer(text))
    found = []
    for index, head in enumerate(heads):
        end = heads[index + 1].start() if index + 1 < len(heads) else len(text)
        status = _TENSION_STATUS.search(text, head.end(), end)
        found.append({"id": head.group(1), "a": head.group(3), "b": head.group(4),
                      "status": status.group(1) if status else "open"})
    return found


def read_tensions(root: Path) -> list[dict]:
    path = root / TENSIONS_FILE
    try:
        if path.is_symlink() or not path.is_file():
            return []
        return parse_tensions(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return []


def tension_entry(old: str | None, a: str, b: str, description: str, who: str, now: dt.datetime) -> str:
    """The log's new text: the old text plus one `## T-NNNN` section (numbered under the lock)."""
    text = old if old and old.strip() else (
        "# Tensions\n\nContradictions between notes, recorded by `tension_log` / `vault-index tension`. "
        "Recording resolves nothing: change `status: open` to `resolved` by hand once settled.\n"
    )
    numbers = [int(m.group(2)) for m in _TENSION_HEAD.finditer(text)]
    tension_id = f"T-{max(numbers, default=0) + 1:04d}"
    # Trigger: a description line such as "## T-0009: `x` vs `y`" or "- status: resolved" was
    # read back as an entry of its own, or as this entry's status (issue 22). Outcome: the
    # description is a block quote (every line starts "> "), which neither pattern matches, and
    # `who` is one line.
    body = "\n".join(f"> {line.rstrip()}".rstrip() for line in description.strip().splitlines())
    who = " ".join(str(who).split())
    section = (
        f"\n## {tension_id}: `{a}` vs `{b}`\n\n- status: open\n- logged: {now.isoformat(timespec='seconds')}\n"
        f"- by: {who}\n\n{body}\n"
    )
    return text.rstrip("\n") + "\n" + section


def log_tension(writer, vault, caller, a: str, b: str, description: str, *,
                request_id: str | None = None, clock: Callable[[], dt.datetime] | None = None):
    """Record a contradiction between notes `a` and `b` in TENSIONS_FILE.

    The caller must read both notes (else the not-found answer, the same as for a missing note)
    and write the collection of at least one: recording is a write to the shared log.
    Returns the write service's outcome (its `message` names the tension id).
    """
    from vault_index.services.writes.safe_text import text_problem
    from vault_index.services.writes.write_types import WriteOutcome  # write.py may import decay from here

    description = (description or "").strip()
    if problem := text_problem(description, one_line=False):
        return WriteOutcome("invalid", TENSIONS_FILE, f"the description {problem}; write plain text",
                            problems=({"field": "description", "rule": "text", "message": problem},))
    if not description or len(description) > MAX_TENSION_CHARS:
        return WriteOutcome("invalid", TENSIONS_FILE, f"describe the contradiction in 1 to {MAX_TENSION_CHARS} "
                                                      "characters", problems=({"field": "description",
                                                                               "rule": "length",
                                                                               "message": "empty or too long"},))
    views = []
    for path in (a, b):
        view = writer.read(caller, path)
        if _is_outcome(view):
            return view
        views.append(view)
    if views[0].path == views[1].path:
        return WriteOutcome("invalid", TENSIONS_FILE, "a tension needs two different notes",
                            problems=({"field": "b", "rule": "distinct", "message": "same note as a"},))
    grants = vault.grants(caller.role)
    if not any(grants.can("write", v.collection) for v in views):
        return WriteOutcome("denied", TENSIONS_FILE, "recording a tension needs write access to the "
                                                     "collection of one of the two notes")
    now = (clock or (lambda: dt.datetime.now(dt.timezone.utc)))()
    who = caller.identity + (f" ({caller.agent})" if caller.agent else "")
    numbered: list[str] = []

    def change(old: str | None) -> str:
        new = tension_entry(old, views[0].path, views[1].path, description, who, now)
        numbered.append(parse_tensions(new)[-1]["id"])
        return new

    outcome = writer.update_file(caller, TENSIONS_FILE, change, why=f"tension: {views[0].path} vs {views[1].path}",
                                 request_id=request_id, collection_check=False)
    if outcome.status == "written" and numbered:
        from dataclasses import replace

        outcome = replace(outcome, message=f"recorded {numbered[-1]} in {TENSIONS_FILE}")
    return outcome
