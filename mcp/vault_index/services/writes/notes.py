"""How a note's new text is composed for each operation, under the write service's lock.

create / replace / append / promote / deprecate each turn (old text, old version, request) into
the new text or an outcome (stale, invalid, not_found). The rules:

- versions: replace, promote and deprecate must name the version they were composed against
  (`base_version`); append may omit it (it adds to whatever is there and overwrites nothing);
  a mismatch is `stale` with the current version;
- `write` may keep a note canonical but never make it canonical or deprecated (promote and
  deprecate do that); the frontmatter `collection` must equal the note's folder;
- `created` is kept (a caller may only repair a missing or impossible one), `updated`/`updated_by`
  stamped; unknown fields are kept, order is stable;
- transform hooks, then the schema, then validator hooks: all problems come back at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from vault_index.engine.files import fileio
from vault_index.errors import UnsafePathError
from vault_index.services.vault import frontmatter as fm
from vault_index.services.vault.vault import not_visible
from vault_index.services.writes import write_hooks
from vault_index.services.writes.note_limits import MAX_BODY_CHARS, body_problems  # noqa: F401 - notes.MAX_BODY_CHARS

if TYPE_CHECKING:
    from vault_index.services.writes.write import WriteService
    from vault_index.services.writes.write_types import Caller, Target, WriteOutcome, WriteRequest

PROTECTED = ("created", "updated", "updated_by")  # stamped by the service, never taken from a caller


def compose(service: WriteService, caller: Caller, request: WriteRequest, target: Target, old: str | None,
            version: str | None, alive=lambda: None) -> str | WriteOutcome:
    from vault_index.services.writes.write_types import WriteOutcome

    op = request.op
    if op == "create" and old is not None:
        return WriteOutcome("stale", target.rel, f"{target.rel} already exists (version {version}); read it and "
                            "replace it naming that version", version=version,
                            result={"base_version": request.base_version})
    if op != "create" and old is None:
        return WriteOutcome("not_found", target.rel, not_visible(target.rel))
    if op in ("replace", "promote", "deprecate") and not request.base_version:
        return _invalid(target, [fm.problem("base_version", "required", f"{op} must name the version it was "
                                            "composed against (read the note first)")], version)
    if request.base_version and request.base_version != version:
        return WriteOutcome("stale", target.rel, f"{target.rel} changed since version {request.base_version} (now "
                            f"{version}); read it again and redo the change", version=version,
                            result={"base_version": request.base_version})
    if service.vault.config_path is None:  # a person's own folder: only what the operation names changes
        return _plain(service, request, target, old, version)
    old_fields, old_body, unreadable = fm.parse(old) if old is not None else ({}, "", [])
    # Trigger: the note's frontmatter cannot be read (bad YAML, aliases, too long). Why: append,
    # promote and deprecate keep the old fields, and an unreadable block would be dropped without
    # a word. Outcome: refused until it is fixed; a replace states every field and may repair it.
    if unreadable and op != "replace":
        return _invalid(target, [*unreadable, fm.problem("frontmatter", "unreadable", "fix the note's frontmatter "
                                                         "(or replace it whole) before this change")], version)
    old_fields, _ = fm.coerce(old_fields)
    fields, body, problems = _apply(service, request, target, old_fields, old_body)
    stamp = service.clock().isoformat()
    fields["created"] = _created(old_fields.get("created"), (request.frontmatter or {}).get("created"), stamp)
    fields["updated"] = stamp
    fields["updated_by"] = f"agent:{caller.agent}" if caller.agent else caller.identity
    fields.setdefault("status", "draft")
    if "title" not in fields or not fields["title"]:
        fields["title"] = _title_from(body, target.parts[-1])
    for name, spec in service.vault.config["schema_extensions"].items():
        if name not in fields and "default" in spec:
            fields[name] = spec["default"]
    context = {"path": target.rel, "operation": op, "collection": target.collection, "body": body}
    hooks_run = op in ("create", "replace", "append")
    # Trigger: promote and deprecate are narrow status changes the service controls end to end.
    # Why: a vault hook written for content edits could block retiring a wrong note.
    # Outcome: hooks run for create, replace and append only (as in Daftari).
    if hooks_run:
        fields, hook_problems = write_hooks.run_phase(service.vault, "pre_write_transform", fields, context, alive)
        problems += hook_problems
        for name in PROTECTED:  # a transform may not forge the stamps
            fields[name] = {"created": fields.get("created"), "updated": stamp,
                            "updated_by": f"agent:{caller.agent}" if caller.agent else caller.identity}[name]
    problems += _rules(fields, old_fields, target, op)
    problems += fm.validate(fields, service.vault.schema_for(fields))
    if hooks_run:
        problems += write_hooks.run_phase(service.vault, "pre_write", fields, context, alive)[1]
    if problems:
        return _invalid(target, problems, version)
    extensions = list(service.vault.config["schema_extensions"])
    return fm.render(fm.ordered(fields, old_fields.keys(), extensions), body)


def _plain(service: WriteService, request: WriteRequest, target: Target, old: str | None,
           version: str | None) -> str | WriteOutcome:
    """A write in a folder with no vault config (a person's notes, a project's docs): no stamps, no
    schema, no collection field; the frontmatter's text is kept but for the fields the caller names.

    Trigger: append stamped the curated vault's fields into a person's note, overwrote their
    `collection:` and dropped their YAML comments (issue 36). Why: those notes never agreed to the
    curated schema (ADR 0022). Outcome: create and replace set the fields given (None removes one),
    append adds its section after the body in the note's own line endings, promote and deprecate
    set the status fields they name; the text checks (no NUL, size) still hold.
    """
    from vault_index.services.vault.frontmatter_text import newline_of, set_fields

    op = request.op
    head, old_body = _split_head(old or "")
    changes: dict = {}
    problems: list[dict] = []
    if op in ("create", "replace"):
        body = old_body if op == "replace" and request.body is None else request.body or ""
        changes = {str(k): v for k, v in (request.frontmatter or {}).items() if str(k) not in PROTECTED}
        old_fields = fm.parse(old or "")[0]
        # the lifecycle holds here too: canonical only through promote, a declared collection is the folder
        problems += _rules({**old_fields, **changes}, old_fields, target, op)
        kept = (None, target.collection, old_fields.get("collection"))  # the person's own value may be restated
        if "collection" in changes and changes["collection"] not in kept:
            problems.append(fm.problem("collection", "path_collection", f"collection {changes['collection']!r} "
                                       f"differs from the note's folder {target.collection or '(root)'!r}"))
    elif op == "append":
        newline = newline_of(old or "")
        section = (request.body or "").strip("\r\n").replace("\r\n", "\n").replace("\n", newline)
        if not section.strip():
            problems.append(fm.problem("body", "required", "append needs a section of text to add"))
        body = (old_body.rstrip("\r\n") + newline * 2 if old_body.strip() else old_body) + section + newline
    else:  # promote, deprecate: the checks of a vault, and only their own fields set
        old_fields, _ = fm.coerce(fm.parse(old or "")[0])
        fields, body, problems = _apply(service, request, target, dict(old_fields), old_body)
        changes = {k: fields.get(k) for k in ("status", "deprecation_reason", "superseded_by")
                   if fields.get(k) != old_fields.get(k)}
    if changes and fm.parse(old or "")[2]:
        problems.append(fm.problem("frontmatter", "unreadable", "fix the note's frontmatter before changing its "
                                   "fields"))
    problems += body_problems(body)
    if problems:
        return _invalid(target, problems, version)
    return set_fields(head, changes) + body


def _split_head(text: str) -> tuple[str, str]:
    """(the frontmatter block's exact text, the body): head + body == text."""
    _, body = fm.split(text)
    return text[:len(text) - len(body)], body


def _apply(service: WriteService, request: WriteRequest, target: Target, old_fields: dict,
           old_body: str) -> tuple[dict, str, list[dict]]:
    """(fields, body, problems) after the operation, before stamps and validation."""
    problems: list[dict] = []
    fields = dict(old_fields)
    body = old_body
    op = request.op
    if op in ("create", "replace"):
        # Trigger: `write --base-version V --set k=v` (no --body) emptied the note and said written.
        # Outcome: a replace without a body keeps the old one; body "" is the explicit way to empty it.
        body = old_body if op == "replace" and request.body is None else request.body or ""
        for name, value in (request.frontmatter or {}).items():
            if name in PROTECTED:
                continue
            if value is None:
                fields.pop(name, None)
            else:
                fields[str(name)] = value
        if "collection" in (request.frontmatter or {}) and request.frontmatter["collection"] != target.collection:
            problems.append(fm.problem("collection", "path_collection", f"collection "
                                       f"{request.frontmatter['collection']!r} differs from the note's folder "
                                       f"{target.collection or '(root)'!r}; a note's collection is where it lies"))
    elif op == "append":
        section = (request.body or "").strip("\n")
        if not section.strip():
            problems.append(fm.problem("body", "required", "append needs a section of text to add"))
        body = (old_body.rstrip("\n") + "\n\n" if old_body.strip() else "") + section + "\n"
    elif op == "promote":
        if old_fields.get("status", "draft") != "draft":
            problems.append(fm.problem("status", "draft_only", f"only a draft can be promoted; this note is "
                                       f"{old_fields.get('status')}"))
        problems += fm.promote_problems(old_fields, [n for n, s in service.vault.config["schema_extensions"].items()
                                                     if s.get("required")])
        problems += _promote_body_and_links(service, old_fields, old_body)
        fields["status"] = "canonical"
    elif op == "deprecate":
        if not (request.reason or "").strip():
            problems.append(fm.problem("reason", "required", "deprecate needs the reason the note no longer holds"))
        else:
            fields["deprecation_reason"] = " ".join(request.reason.split())
        if request.superseded_by:
            found = _existing_note(service, request.superseded_by)
            if found is None:
                problems.append(fm.problem("superseded_by", "exists", f"{request.superseded_by} is not a note in this "
                                           "vault"))
            else:
                fields["superseded_by"] = found
        fields["status"] = "deprecated"
    problems += body_problems(body)
    if target.collection:  # the folder decides; a declared other collection was reported above
        fields["collection"] = target.collection
    else:
        fields.pop("collection", None)
    return fields, body, problems


def _promote_body_and_links(service: WriteService, fields: dict, body: str) -> list[dict]:
    """A canonical note says something, and a superseded_by it carries must name a note that exists.

    Trigger: promote made an empty note canonical, and one whose superseded_by named nothing.
    """
    found = []
    if not body.strip():
        found.append(fm.problem("body", "complete", "the body is empty; write the note before promoting it"))
    successor = fields.get("superseded_by")
    if successor not in (None, "", []):
        if not isinstance(successor, str) or _existing_note(service, successor) is None:
            found.append(fm.problem("superseded_by", "exists", f"superseded_by {successor!r} is not a note in this "
                                    "vault; fix or clear it before promoting"))
    return found


def _created(old, given, stamp: str) -> str:
    """The note's creation date: kept when it is a real date; else the caller's (a repair); else today.

    Trigger: a hand-edited note with created: 2024-02-30 could never be written again (the field is
    protected, and validation refuses the impossible date).
    Outcome: only a missing or impossible date may be set by the caller; the old value stays in git.
    """
    for value in (old, given):
        if isinstance(value, str) and _real_date(value):
            return value
    return stamp


def _real_date(value: str) -> bool:
    import datetime as dt

    try:
        dt.date.fromisoformat(value)
    except ValueError:
        return False
    return len(value) == 10


def _rules(fields: dict, old_fields: dict, target: Target, op: str) -> list[dict]:
    """Lifecycle and collection rules the schema cannot say."""
    found = []
    old_status = old_fields.get("status")
    status = fields.get("status")
    if op in ("create", "replace", "append") and status != old_status:
        if status == "canonical":
            found.append(fm.problem("status", "promote_only", "a write may not make a note canonical; write it as "
                                    "a draft, then promote it (needs the promote grant)"))
        elif status == "deprecated":
            found.append(fm.problem("status", "deprecate_only", "a write may not deprecate a note; use deprecate "
                                    "with a reason"))
    return found


def _invalid(target: Target, problems: list[dict], version: str | None) -> WriteOutcome:
    from vault_index.services.writes.write_types import WriteOutcome

    unique = list({(p["field"], p["rule"], p["message"]): p for p in problems}.values())
    fields = ", ".join(dict.fromkeys(p["field"] for p in unique))
    return WriteOutcome("invalid", target.rel, f"{target.rel} was not written: {len(unique)} problem(s) in {fields}",
                        version=version, problems=tuple(unique))


def _existing_note(service: WriteService, path: str) -> str | None:
    """The vault-relative path of an existing regular note, or None."""
    try:
        parts = fileio.real_parts(service.vault.root, path)
        folder = fileio.open_folder(service.vault.root, parts[:-1])
    except (UnsafePathError, OSError):
        return None
    try:
        data, _ = fileio.read_current(folder, parts[-1])
    except (UnsafePathError, OSError):
        return None
    finally:
        import os

        os.close(folder)
    return "/".join(parts) if data is not None else None


def _title_from(body: str, name: str) -> str:
    for line in body.splitlines():
        if line.startswith("# ") and line[2:].strip():
            return line[2:].strip()[:300]
    return Path(name).stem.replace("-", " ").replace("_", " ").strip() or "Untitled"


def read_view(service: WriteService, caller: Caller, path: str):
    """A note with its frontmatter, validation report, decay and version (the tolerant read)."""
    import os

    from vault_index.services.writes.write_types import NoteView, WriteOutcome

    target, refusal = service.authorize(caller, path, "read")
    if refusal:
        return refusal
    try:
        folder = fileio.open_folder(service.vault.root, target.parts[:-1])
    except FileNotFoundError:
        return WriteOutcome("not_found", target.rel, not_visible(target.rel))
    except UnsafePathError as exc:
        return WriteOutcome("refused", target.rel, str(exc))
    try:
        data, _ = fileio.read_current(folder, target.parts[-1], target.rel)
    except UnsafePathError as exc:
        return WriteOutcome("refused", target.rel, str(exc))
    finally:
        os.close(folder)
    if data is None:
        return WriteOutcome("not_found", target.rel, not_visible(target.rel))
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")  # as the index reads it (utf-8-sig)
    fields, body, problems = fm.parse(text)
    fields, coerced = fm.coerce(fields)
    if service.vault.config_path is not None:
        problems += coerced + fm.validate(fields, service.vault.schema_for(fields))
    else:
        # Trigger: note_read of a plain project's note listed title, created and updated as missing
        # and `type: meeting` as not a type (issue 39), as lint once did (issue 21). Why: a folder
        # without .vault-index/config.yaml never agreed to the curated schema. Outcome: no required
        # fields and no curated types there; the shared fields it sets (`status: final`, a date) are
        # still checked against the core schema, and lint and note_read give the same answer.
        problems += coerced + [p for p in fm.validate(fields, service.vault.schema_for({}))
                               if p.get("rule") != "required" and p.get("field") != "type"]
    decay = fm.decay(fields, service.clock(), service.vault.config["decay"]["aging_after_fraction"])
    return NoteView(target.rel, target.collection, fields, body, fileio.file_version(data), tuple(problems), decay)


def annotate(service: WriteService, request: WriteRequest, outcome: WriteOutcome) -> WriteOutcome:
    """The outcome with what the caller must know beyond the status: hooks that did not run here."""
    from dataclasses import replace

    from vault_index.services.writes import hook_trust

    if request.op == "promote" and outcome.status == "written" and outcome.path.split("/")[0] == "drafts":
        # promote changes the status only; the file stays where it is, and saying so beats a surprise
        moved = ("promoted in place: the note is canonical but still in drafts/ (promote never moves a file); "
                 "move it to its collection if readers of that collection should see it")
        return replace(outcome, notices=(*outcome.notices, moved))
    if request.op not in hook_trust.HOOK_OPS or outcome.status in ("denied", "refused", "not_found"):
        return outcome
    if not any(service.vault.config["hooks"].get(phase) for phase in ("pre_write_transform", "pre_write")):
        return outcome
    extra = tuple(hook_trust.untrusted_notices(service.vault))
    return replace(outcome, notices=(*outcome.notices, *extra)) if extra else outcome
