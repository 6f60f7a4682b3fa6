"""`vault-index read|write|append|promote|deprecate|tension|lint|provenance|dashboard|init` (and cli_edit.py's).

Thin commands over the same functions the MCP tools call (the write service through the App,
services/curation/curation.py, services/curation/scaffold.py). The caller is the local person (surfaces/callers.py)
with the agent claim "cli". `--json` prints the MCP tools' own shape (`status`, `message`, `path`,
`version`, `data`), documented in docs/cli.md. Every answer that is not a bug is a status with an
exit code from `OUTCOME_EXIT`, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from vault_index.errors import NotFoundError, UsageError
from vault_index.surfaces.cli_common import (
    OUTCOME_EXIT,
    _finish,
    _json,
    _note,
    _open,
    _placed,
    _read_text,
)
from vault_index.surfaces.cli_edit import add_parsers as add_edit_parsers
from vault_index.surfaces.outcomes import absolute


def _frontmatter_args(args) -> dict | None:
    """`--frontmatter JSON` and `--set key=value` (YAML scalar values), merged; None when neither."""
    import yaml

    fields: dict = {}
    if getattr(args, "frontmatter", None):
        try:
            fields = json.loads(args.frontmatter)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--frontmatter is not JSON: {exc}") from exc
        if not isinstance(fields, dict):
            raise UsageError("--frontmatter must be a JSON object")
    for item in getattr(args, "set", None) or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set needs KEY=VALUE, got {item!r}")
        fields[key.strip()] = _scalar(value, yaml)
    return fields or None


def _scalar(value: str, yaml):
    """A `--set` value as YAML would read it (numbers, lists, null), dates as ISO text, and the
    raw text when it is not valid YAML (a stray bracket is still a title)."""
    import datetime as dt

    if not value.strip():
        return None
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        return value
    return parsed.isoformat() if isinstance(parsed, dt.date) else parsed


def cmd_read(app, args) -> int:
    from vault_index.surfaces.outcomes import is_outcome, jsonable, outcome_dict

    vault, caller, path = _placed(app, args)
    view = app.writer(vault).read(caller, path)
    if is_outcome(view):
        return _finish(args, outcome_dict(view))
    data = {"collection": view.collection, "frontmatter": view.frontmatter, "body": view.body,
            "problems": list(view.problems), "decay": view.decay}
    out = {"status": "ok", "message": f"read {view.path}", "path": absolute(vault.root, view.path),
           "version": view.version, "data": jsonable(data)}
    if args.json:
        print(_json(out))
    else:
        from vault_index.services.vault import frontmatter

        sys.stdout.write(frontmatter.render(view.frontmatter, view.body))
        print(f"version {view.version}" + (f", decay {view.decay['state']}" if view.decay else ""), file=sys.stderr)
        for item in view.problems:
            print(f"  problem: {item.get('field', '')}: {item.get('message', '')}", file=sys.stderr)
    return 0


def _write(app, args, op: str, **fields) -> int:
    from vault_index.services.access.access import unindexed_notice
    from vault_index.services.writes.write import WriteRequest
    from vault_index.surfaces.outcomes import outcome_dict

    vault, caller, path = _placed(app, args, for_write=True)  # every form a tool takes (issue 39)
    request = WriteRequest(op=op, path=path, base_version=getattr(args, "base_version", None),
                           request_id=getattr(args, "request_id", None), **fields)
    out = outcome_dict(app.writer(vault).write(caller, request))
    out["path"] = absolute(vault.root, out["path"])  # the one form every tool answers (issue 39)
    if out["status"] == "written" and (notice := unindexed_notice(app, out["path"])):
        out["data"]["notices"] = [*out["data"].get("notices", []), notice]
    _list_hints(out, getattr(args, "set", None))
    return _finish(args, out)


def _list_hints(out: dict, set_items: list[str] | None) -> None:
    """Trigger: `--set sources=guide` for a list field. Why: the schema's "'guide' is not of type
    'array'" did not say how to give a list on the command line. Outcome: that problem names the
    JSON form with the value given, `--set 'sources=["guide"]'`."""
    given = {key.strip(): value for key, sep, value in (item.partition("=") for item in set_items or []) if sep}
    for problem in (out.get("data") or {}).get("problems") or []:
        field = problem.get("field")
        if field in given and "'array'" in str(problem.get("message", "")):
            example = json.dumps([given[field]] if given[field].strip() else [], ensure_ascii=False)
            problem["message"] += f"; {field} is a list: write it as JSON, --set '{field}={example}'"


def cmd_write(app, args) -> int:
    text = _read_text(args.body, args.file)
    fields = _frontmatter_args(args)
    if args.file is not None and text is not None and text.startswith("---"):
        # Trigger: `--file note.md` of a whole note. Why: people write notes in an editor,
        # frontmatter and all. Outcome: its frontmatter joins the fields; --set wins.
        from vault_index.services.vault import frontmatter

        parsed, body, problems = frontmatter.parse(text)
        fields, text = {**parsed, **(fields or {})}, body
    op = "replace" if args.base_version else "create"
    return _write(app, args, op, body=text, frontmatter=fields, reason=args.reason)


def cmd_append(app, args) -> int:
    return _write(app, args, "append", body=_read_text(args.body, args.file), reason=args.reason)


def cmd_promote(app, args) -> int:
    return _write(app, args, "promote", reason=args.reason)


def cmd_deprecate(app, args) -> int:
    return _write(app, args, "deprecate", reason=args.reason, superseded_by=args.superseded_by)


def cmd_tension(app, args) -> int:
    from vault_index.services.curation import curation
    from vault_index.surfaces.outcomes import outcome_dict

    vault, caller = _open(app, args)
    outcome = curation.log_tension(app.writer(vault), vault, caller, args.a, args.b, args.description,
                                   request_id=args.request_id)
    return _finish(args, outcome_dict(outcome))


def _review(app, args, lint: bool, fail_on: str) -> dict:
    from vault_index.services.access.access import scope_for
    from vault_index.services.curation import curation
    from vault_index.surfaces.denied import denied_outcome

    vault, caller = _open(app, args)
    scope = scope_for(vault, vault.grants(caller.role))
    if not scope.reads_any:
        return denied_outcome(caller)
    return curation.review(app.writer(vault), vault, caller, scope, fail_on=fail_on, lint=lint)


def cmd_lint(app, args) -> int:
    fail_on = "warning" if args.strict else args.fail_on
    if args.path:
        args.vault = args.path
    out = _review(app, args, True, fail_on)
    if args.json or out["status"] == "denied":
        return _finish(args, out)
    if not out["data"]["curated"]:
        from vault_index.services.curation.curation import PLAIN_NOTICE

        _note(args, f"note: {PLAIN_NOTICE}")  # up front: why findings differ from a vault's
    issues = out["data"]["issues"]
    for issue in issues:  # path:line: the form editors and CI logs turn into a jump to the line
        print(f"{issue['path']}:{issue['line']}: {issue['severity']} {issue['check']}: {issue['message']}")
    print(f"{len(issues)} findings" + (" (failed)" if out["data"]["failed"] else ""), file=sys.stderr)
    return OUTCOME_EXIT[out["status"]]


def cmd_dashboard(app, args) -> int:
    out = _review(app, args, False, "never")
    if args.json or out["status"] == "denied":
        return _finish(args, out)
    data = out["data"]
    print(f"notes               {data['notes']}")
    for name, counts in data["collections"].items():
        print(f"  {name or '(root)':18}" + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print(f"invalid frontmatter {data['invalid_frontmatter']}")
    print("decay               " + ", ".join(f"{k} {v}" for k, v in data["decay"].items()))
    print(f"open tensions       {data['open_tensions']}")
    writes = data["recent_writes"]
    print(f"recent writes       {len(writes)}" + (" (newest first)" if writes else ""))
    for write in writes:
        print(f"  {write['date'][:19]}  {write['author']}  {write['message']}")
    return 0


def cmd_provenance(app, args) -> int:
    from vault_index.surfaces.outcomes import is_outcome, jsonable, outcome_dict

    vault, caller, path = _placed(app, args)  # every form; a missing note is not found (exit 3), not silence
    found = app.writer(vault).history(caller, path)
    if is_outcome(found):
        return _finish(args, outcome_dict(found))
    out = {"status": "ok", "message": f"{len(found)} write{'' if len(found) == 1 else 's'}",
           "path": absolute(vault.root, path), "version": None, "data": {"history": jsonable(found)}}
    if not found and not Path(out["path"]).is_file():
        raise NotFoundError(f"no note {args.path} in {vault.root} or a source this workspace sees")
    if args.json:
        print(_json(out))
        return 0
    if not found:
        _note(args, f"no commit holds {out['path']} yet (a new or uncommitted note)")
    for entry in found:
        print(f"{entry.get('date', '')[:19]}  {str(entry.get('commit', ''))[:12]}  {entry.get('operation') or '-'}"
              f"  {entry.get('author', '')}  agent {entry.get('agent') or '-'}, role {entry.get('role') or '-'}"
              f"  {entry.get('why') or entry.get('subject', '')}")
    return 0


def cmd_init(app, args) -> int:
    from vault_index.services.curation.scaffold import scaffold

    result = scaffold(Path(args.dir))
    if not args.no_index:
        # The same progress as `index` (stderr): a run waiting for another index's embedding says so.
        from vault_index.surfaces.cli_common import Progress

        progress = Progress(not args.silent)
        try:
            report = app.index([result["root"]], progress)
        finally:
            progress.close()
        result["indexed"] = report.indexed
    if args.json:
        print(_json(result))
    else:
        print(f"vault ready at {result['root']}: {len(result['created'])} files, commit {result['commit'] or 'none'}")
        for notice in result["notices"]:
            print(f"note: {notice}", file=sys.stderr)
    return 0


def add_parsers(sub, common: argparse.ArgumentParser) -> None:
    """The curated-vault commands on the top-level subparsers `sub`."""
    who = argparse.ArgumentParser(add_help=False)
    who.add_argument("--vault", metavar="DIR", help="the vault (default $CLAUDE_PROJECT_DIR, else the working folder)")
    who.add_argument("--role", help="act as this role (default $VAULT_ROLE, else the config's local_role)")
    parents = [common, who]
    retry = argparse.ArgumentParser(add_help=False)
    retry.add_argument("--request-id", help="a retry with the same id writes nothing twice")
    retry.add_argument("--base-version", help="the version you read (`read --json`); a changed note is refused")

    p = sub.add_parser("read", parents=parents, help="a vault note with frontmatter, problems, decay and version")
    p.add_argument("path")
    p.set_defaults(run=cmd_read)

    p = sub.add_parser("write", parents=[*parents, retry],
                       help="create a note (or replace it, with --base-version); never sets canonical")
    p.add_argument("path")
    p.add_argument("--body", help="the body text (a replace without --body/--file keeps the body; --body '' "
                   "empties it)")
    p.add_argument("--file", help="read the body (or a whole note with frontmatter) from a file; '-' is stdin")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="a frontmatter field (repeatable); a list as JSON: --set 'tags=[\"a\", \"b\"]'")
    p.add_argument("--frontmatter", metavar="JSON", help="frontmatter fields as a JSON object")
    p.add_argument("--reason", help="why, for the commit message")
    p.set_defaults(run=cmd_write)

    p = sub.add_parser("append", parents=[*parents, retry], help="append a markdown section to a note")
    p.add_argument("path")
    p.add_argument("--body", help="the section to add")
    p.add_argument("--file", help="read the section from a file; '-' is stdin")
    p.add_argument("--reason", help="why, for the commit message")
    p.set_defaults(run=cmd_append)

    p = sub.add_parser("promote", parents=[*parents, retry],
                       help="draft -> canonical (promote grant, complete frontmatter)")
    p.add_argument("path")
    p.add_argument("--reason", help="why, for the commit message")
    p.set_defaults(run=cmd_promote)

    p = sub.add_parser("deprecate", parents=[*parents, retry], help="mark a note deprecated (reason required)")
    p.add_argument("path")
    p.add_argument("--reason", required=True, help="why it no longer holds")
    p.add_argument("--superseded-by", help="the note that replaces it")
    p.set_defaults(run=cmd_deprecate)

    add_edit_parsers(sub, parents, retry)  # prepend, replace-section, find-replace, move, recent (cli_edit.py)

    p = sub.add_parser("tension", parents=parents, help="record a contradiction between two notes (tensions.md)")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("description", help="how the two notes contradict")
    p.add_argument("--request-id", help="a retry with the same id writes nothing twice")
    p.set_defaults(run=cmd_tension)

    p = sub.add_parser("lint", parents=parents,
                       help="check the vault against its spec and links (exit 1 on errors; --strict: on warnings)")
    p.add_argument("path", nargs="?", help="the vault's folder (same as --vault)")
    p.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    p.add_argument("--fail", action="store_true", help=argparse.SUPPRESS)  # the default now; kept for old scripts
    p.add_argument("--fail-on", choices=("never", "warning", "error"), default="error",
                   help="exit 1 when a finding is this severe (default error)")
    p.set_defaults(run=cmd_lint)

    p = sub.add_parser("provenance", parents=parents, help="the write history of one note (from git)")
    p.add_argument("path")
    p.set_defaults(run=cmd_provenance)

    p = sub.add_parser("dashboard", parents=parents,
                       help="vault health: notes per collection and status, invalid frontmatter, decay, "
                       "tensions, recent writes")
    p.set_defaults(run=cmd_dashboard)

    p = sub.add_parser("init", parents=[common], help="scaffold a new vault in DIR (config, roles, notes, git, index)")
    p.add_argument("dir")
    p.add_argument("--no-index", action="store_true", help="do not index the new vault")
    p.set_defaults(run=cmd_init)
