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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from vault_index.engine.parse import parse_note
from vault_index.services import frontmatter as frontmatter_rules

DEFAULT_AGING_FRACTION = 0.75   # aging from 3/4 of ttl_days on (config: decay.aging_after_fraction)
OLD_DRAFT_DAYS = 30             # a draft untouched this long is reported
STAGNANT_DAYS = 60              # confidence: low, untouched this long, is reported
RECENT_WRITES = 10              # commits the dashboard lists
MAX_NOTES = 20_000              # lint and status stop walking here and say so
TENSIONS_FILE = "tensions.md"   # at the vault root: one log for every collection
MAX_TENSION_CHARS = 2000
GIT_TIMEOUT_S = 10
SKIPPED_DIRS = {".git", ".vault-index", "secrets", "node_modules"}

# check name -> severity; errors fail a lint run that was asked to fail (`fail_on`).
CHECKS = {
    "invalid_frontmatter": "error",
    "stale": "error",
    "deprecated_linked": "error",
    "orphan": "warning",
    "old_draft": "warning",
    "low_confidence": "warning",
    "unanswered_question": "warning",
}
SEVERITY_RANK = {"warning": 1, "error": 2}
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
    links: tuple[str, ...]


def note_paths(root: Path, limit: int = MAX_NOTES) -> Iterator[str]:
    """Vault-relative paths of the `.md` files, without following links or entering control folders."""
    count = 0
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d.casefold() not in SKIPPED_DIRS)
        for name in sorted(files):
            full = Path(folder) / name
            if not name.endswith(".md") or full.is_symlink():
                continue
            rel = full.relative_to(root).as_posix()
            if rel == TENSIONS_FILE:
                continue
            count += 1
            if count > limit:
                return
            yield rel


def readable_notes(writer, caller, root: Path) -> list[NoteFacts]:
    """Every note the caller may read, through the write service's read (grants, validation)."""
    facts = []
    for rel in note_paths(root):
        view = writer.read(caller, rel)
        if _is_outcome(view):
            continue  # denied, vanished meanwhile, or not a regular file: not the caller's to see
        links = parse_note(rel, view.body).links
        facts.append(NoteFacts(view.path, view.collection, view.frontmatter, tuple(view.problems),
                               view.decay, links))
    return facts


def _is_outcome(value) -> bool:
    return hasattr(value, "ok") and not hasattr(value, "body")


# --- lint ---------------------------------------------------------------------------------------


def _resolver(notes: list[NoteFacts]) -> Callable[[str], str | None]:
    """A wikilink target -> the note it names (by path without .md, or by file name), any case."""
    by_key: dict[str, str] = {}
    for note in notes:
        stem = note.path[:-3] if note.path.endswith(".md") else note.path
        by_key.setdefault(stem.casefold(), note.path)
        by_key.setdefault(stem.rsplit("/", 1)[-1].casefold(), note.path)

    def resolve(target: str) -> str | None:
        key = target.strip().removesuffix(".md").casefold()
        return by_key.get(key)

    return resolve


def _question(text) -> str:
    return " ".join(str(text).casefold().split()).rstrip("?").strip()


def lint_notes(notes: list[NoteFacts], today: dt.date) -> list[dict]:
    """Every finding as {check, severity, path, message}, in path order."""
    resolve = _resolver(notes)
    inbound: dict[str, set[str]] = {n.path: set() for n in notes}
    status = {n.path: str(n.frontmatter.get("status") or "") for n in notes}
    for note in notes:
        for target in note.links:
            found = resolve(target)
            if found and found != note.path:
                inbound[found].add(note.path)
    answered = {_question(q) for n in notes for q in _as_list(n.frontmatter.get("questions_answered"))}
    issues: list[dict] = []

    def add(check: str, path: str, message: str) -> None:
        issues.append({"check": check, "severity": CHECKS[check], "path": path, "message": message})

    for note in notes:
        fm = note.frontmatter
        if note.problems:
            fields = ", ".join(sorted({str(p.get("field", "?")) for p in note.problems}))
            add("invalid_frontmatter", note.path, f"frontmatter problems in: {fields}")
        if note.decay and note.decay["state"] == "stale":
            add("stale", note.path, f"{note.decay['age_days']} days since updated, past its ttl_days "
                                    f"of {note.decay['ttl_days']}: confirm and update it, or deprecate it")
        if status[note.path] == "deprecated":
            linking = sorted(p for p in inbound[note.path] if status[p] == "canonical")
            if linking:
                add("deprecated_linked", note.path, "deprecated but linked from canonical " + ", ".join(linking))
        if not inbound[note.path]:
            add("orphan", note.path, "no other note links here ([[...]])")
        touched = as_date(fm.get("updated")) or as_date(fm.get("created"))
        age = (today - touched).days if touched else None
        if status[note.path] == "draft" and age is not None and age > OLD_DRAFT_DAYS:
            add("old_draft", note.path, f"a draft for {age} days: promote, finish or deprecate it")
        if str(fm.get("confidence") or "").casefold() == "low" and age is not None and age > STAGNANT_DAYS:
            add("low_confidence", note.path, f"confidence low and unchanged for {age} days")
        for question in _as_list(fm.get("questions_raised")):
            if _question(question) and _question(question) not in answered:
                add("unanswered_question", note.path, f"no note answers: {str(question).strip()}")
    return sorted(issues, key=lambda i: (i["path"], i["check"]))


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
            ["git", "-C", str(root), "log", f"-n{limit * 5}", "--no-renames", "--relative", "--name-only",
             "--format=%x1e%H%x1f%aI%x1f%an <%ae>%x1f%s", "--", "."],
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


def review(writer, vault, caller, scope, *, fail_on: str = "never", lint: bool = True) -> dict:
    """The dashboard (and with `lint` the findings) over the notes the caller may read, as
    {status ok|failed, message, path, version, data}: the answer of vault_review, lint and dashboard.
    The surface checks first that the caller reads anything at all (`scope.reads_any`)."""
    today = dt.date.today()
    notes = readable_notes(writer, caller, Path(vault.root))
    tensions = [t for t in read_tensions(Path(vault.root))
                if scope.can_read(Path(vault.root) / t["a"]) and scope.can_read(Path(vault.root) / t["b"])]
    data = dashboard(notes, tensions, recent_writes(Path(vault.root), scope.can_read))
    message = f"{data['notes']} notes, {data['invalid_frontmatter']} with invalid frontmatter"
    if lint:
        issues = lint_notes(notes, today)
        data["issues"] = issues
        data["failed"] = failed(issues, fail_on)
        message += f", {len(issues)} lint findings" + (" (failed)" if data["failed"] else "")
    return {"status": "failed" if data.get("failed") else "ok", "message": message, "path": "", "version": None,
            "data": data}


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
    body = "\n".join(line.rstrip() for line in description.strip().splitlines())
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
    from vault_index.services.write import WriteOutcome  # write.py may import decay from here

    description = (description or "").strip()
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
