"""Helpers every CLI module shares: JSON output, progress on stderr, the local reader's filters,
and the outcome -> exit code table of the vault commands.

Below cli.py and its command modules (cli_vault, cli_edit, cli_graph), which all import from here.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from vault_index.errors import NotFoundError, UsageError, WriteBusyError

# Outcome status -> exit code; the codes are the exception tree's where one exists (docs/cli.md).
# denied and not_found share one code: a caller without read learns nothing about existence.
STALE_EXIT = 11  # after the index codes 7-9 and WriteFailedError (10)
LINT_FAILED_EXIT = 1
OUTCOME_EXIT = {
    "ok": 0, "written": 0, "unchanged": 0,
    "invalid": UsageError.exit_code, "refused": UsageError.exit_code, "conflict": UsageError.exit_code,
    "denied": NotFoundError.exit_code, "not_found": NotFoundError.exit_code,
    "locked": WriteBusyError.exit_code, "stale": STALE_EXIT, "failed": LINT_FAILED_EXIT,
}
MAX_BODY_BYTES = 1_000_000



def _json(data) -> str:
    return json.dumps(data, ensure_ascii=False, default=str)


PLAIN_PROGRESS_SECONDS = 10.0  # off a terminal (CI logs, setup's output): one progress line this often
PLAIN_FORMAT = "{desc}: {n_fmt}/{total_fmt}{unit} ({percentage:.0f}%), {elapsed} elapsed, about {remaining} left"
PHASE_UNITS = {"scan": " files", "embed": " chunks"}
QUIET_SCAN_SECONDS = 2.0  # Progress(quiet_scan=True): a scan done sooner says nothing


def drawable_terminal(stream) -> bool:
    """A terminal a bar can be drawn on: a tty 0 columns wide (the pty `script` opens from a non-tty)
    made tqdm draw nothing at all, so it gets plain lines, as a log does."""
    try:
        return stream.isatty() and os.get_terminal_size(stream.fileno()).columns > 0
    except (OSError, ValueError, AttributeError):  # no descriptor, or its size cannot be asked
        return False


class Progress:
    """Index progress on stderr, never stdout: a tqdm bar with an ETA on a terminal, else a plain
    line every PLAIN_PROGRESS_SECONDS and one at each phase's end (logs must not sit silent).

    Called as the indexer's callback `(phase, done, total)`; phase "wait" (total 0) says the run
    waits for another index run's embedding.
    """

    def __init__(self, enabled: bool, stream=None, quiet_scan: bool = False):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        # the scan before status, sources or search: said only when it lasts (each ran one per call)
        self.quiet_scan = quiet_scan
        self.tty = drawable_terminal(self.stream)
        self._bar = None
        self._phase: str | None = None
        self._started = self._last_line = 0.0
        import time

        self._made, self._last_call = time.monotonic(), 0.0

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if phase == "wait":
            self.stream.write("another `vault-index index` is embedding into this index; waiting for it "
                              "(what it embeds is not embedded twice)\n")
            self.stream.flush()
            return
        if total <= 0:
            return
        import time

        from tqdm import tqdm

        now = time.monotonic()
        if phase != self._phase:
            self.close()
            # The indexer reports a phase first after its first batch: the phase began at the
            # previous report (or when this display was made), so the rate and the ETA count from there.
            started = self._last_call or self._made
            self._phase, self._started, self._last_line = phase, started, now
            quiet = self.quiet_scan and phase == "scan"
            if self.tty:
                self._bar = tqdm(total=total, desc=phase, unit=PHASE_UNITS.get(phase, ""), file=self.stream,
                                 leave=not quiet, dynamic_ncols=True, mininterval=0,
                                 delay=QUIET_SCAN_SECONDS if quiet else 0)
                self._bar.start_t = self._bar.last_print_t = time.time() - (now - started)
        self._last_call = now
        if self._bar is not None:
            self._bar.update(done - self._bar.n)
        elif done == 0:  # a phase's start, before its first batch: a log shows the work began
            self.stream.write(f"{phase}: 0/{total}{PHASE_UNITS.get(phase, '')}, started\n")
            self.stream.flush()
        elif done >= total and self.quiet_scan and phase == "scan" and now - self._started < QUIET_SCAN_SECONDS:
            pass  # a quick scan: the command's own line says what it indexed, if anything
        elif done >= total or now - self._last_line >= PLAIN_PROGRESS_SECONDS:
            self._last_line = now
            line = tqdm.format_meter(done, total, now - self._started, prefix=phase,
                                     unit=PHASE_UNITS.get(phase, ""), bar_format=PLAIN_FORMAT)
            self.stream.write(line + "\n")
            self.stream.flush()
        if done >= total:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar, self._phase = None, None


def counted(n: int, noun: str) -> str:
    """`1 chunk`, `2 chunks`: a count with its noun in the number it takes ("1 chunks" was printed)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _say(args, message: str) -> None:
    if not getattr(args, "silent", False):
        print(message, file=sys.stderr)


def also_line(also: list[dict], more: int) -> str:
    """A per-note hit's other matched sections in one line: `also: Setup 12-20, 41-50; Usage 31-40 (+2 more)`.
    Parts of one long section share its heading (walkthrough G: `Setup 12-20; Setup 41-50`)."""
    ranges: dict[str, list[str]] = {}
    for section in also:
        ranges.setdefault(section["heading"] or "(top)", []).append(f"{section['line_start']}-{section['line_end']}")
    named = "; ".join(f"{heading} {', '.join(spans)}" for heading, spans in ranges.items())
    rest = more - len(also)
    return f"also: {named}" + (f" (+{rest} more)" if rest > 0 else "")


def role_filters(app, filters):
    """`filters` with the local person's read grants, as the stdio server applies them (VAULT_ROLE,
    else the config's local_role); a role that reads nothing is refused as the server refuses it."""
    from vault_index.services.access.access import granted_filters
    from vault_index.surfaces.callers import local_read_scope
    from vault_index.surfaces.denied import denied_text

    caller, scope = local_read_scope(app)
    if not scope.reads_any:
        from vault_index.errors import NotFoundError

        raise NotFoundError(denied_text(caller, "read"))
    return granted_filters(filters, scope)


def _open(app, args):
    """(vault, caller) for the local person; `app` is the one main() opened."""
    from vault_index.surfaces.callers import cli_caller

    vault = app.vault(Path(args.vault).expanduser() if args.vault else None)
    return vault, cli_caller(vault, args.role)


def _placed(app, args, for_write: bool = False):
    """(vault, caller, path in that vault) for the note `args.path` names, as MCP's note tools place
    it (ToolContext.who_at): a note in a visible source outside this vault or project (the person's
    own notes, from a project) is read and written in that source's folder. Walkthrough I: `read
    notes/backups.md` in a project was refused as leading out of it, where note_read answered."""
    from vault_index.services import boundary
    from vault_index.surfaces.callers import cli_caller

    vault, caller = _open(app, args)
    path = typed_path(app, args.path, vault.root, for_write=for_write)
    if args.vault or not Path(path).is_absolute() or app.workspace.kind == "vault":
        return vault, caller, path
    holder = boundary.source_folder(app, path)
    if holder is None:
        return vault, caller, path  # the write service refuses it as outside the vault
    other = app.vault(holder)
    return other, cli_caller(other, args.role), Path(path).relative_to(holder).as_posix()


def _finish(args, out: dict) -> int:
    """Print the answer (JSON or a line for a person) and return its exit code."""
    if args.json:
        print(_json(out))
    else:
        stream = sys.stdout if out["status"] in ("ok", "written", "unchanged") else sys.stderr
        print(outcome_line(out["status"], out["message"]), file=stream)
        if out["status"] in ("written", "unchanged") and out.get("version"):
            print(f"version {out['version']}", file=stream)  # what --base-version of the next step takes
        for item in (out.get("data") or {}).get("problems") or []:
            print(f"  {item.get('field', '')}: {item.get('message', '')}", file=sys.stderr)
        for notice in (out.get("data") or {}).get("notices") or []:
            print(f"  note: {notice}", file=sys.stderr)
    return OUTCOME_EXIT.get(out["status"], 1)


def outcome_line(status: str, message: str) -> str:
    """The line a person reads: `status: message`, or the message alone when it already says the
    status ("drafts/x.md written", not "written: drafts/x.md written")."""
    return message if status in re.findall(r"[\w-]+", message.casefold()) else f"{status}: {message}"


def _note(args, message: str) -> None:
    if not getattr(args, "silent", False):
        print(message, file=sys.stderr, flush=True)


def _read_text(value: str | None, file: str | None) -> str | None:
    if file is not None:
        try:
            if file == "-":
                raw = sys.stdin.buffer.read(MAX_BODY_BYTES + 1)
            else:
                with open(file, "rb") as handle:  # a FIFO is fine here: `--file <(command)`
                    raw = handle.read(MAX_BODY_BYTES + 1)
            if len(raw) > MAX_BODY_BYTES:
                raise UsageError(f"the text is over {MAX_BODY_BYTES:,} bytes")
            return raw.decode("utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read {file}: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise UsageError(f"{file} is not UTF-8 text") from exc
    return value


def add_subquery_flags(parser) -> None:
    """`--keywords`, `--paraphrase`, `--hypothetical`: the agent sub-queries of `search` and `recall`."""
    parser.add_argument("--keywords", action="append", metavar="TERMS",
                        help="keyword forms the notes may use (repeatable; keyword side)")
    parser.add_argument("--paraphrase", action="append", metavar="TEXT",
                        help="the question said another way (repeatable; both sides)")
    parser.add_argument("--hypothetical", action="append", metavar="TEXT",
                        help="a short passage as the answer might read (vector side)")


def subqueries_from(args):
    """The SubQueries of `add_subquery_flags`, or None; UsageError past the bounds."""
    from vault_index.services.search.subqueries import sub_queries

    return sub_queries(args.keywords, args.paraphrase, args.hypothetical)


def typed_path(app, raw: str, root: str | Path | None = None, for_write: bool = False) -> str:
    """A path typed at the terminal, found as every tool finds it (services/boundary.resolve): where
    one stands first, then the vault or project folder `root`, the workspace's folder, a source. Inside
    `root` it is answered relative to it (what the write service takes); a path the boundary does not
    find goes on as typed, so the command's own answer for a missing note is given."""
    from vault_index.errors import AmbiguousPathError, VaultIndexError
    from vault_index.services import boundary

    here = Path(raw).expanduser()
    if not here.is_absolute() and here.exists():
        raw = str(here.resolve())
    try:
        found = boundary.resolve(app, raw, base=root, for_write=for_write)
    except AmbiguousPathError:
        raise
    except VaultIndexError:
        return raw
    inside = boundary.real(root) if root is not None else None
    if inside is not None and found != inside and found.is_relative_to(inside):
        return found.relative_to(inside).as_posix()
    return str(found)


def result_json(result, explain: bool = False) -> dict:
    from vault_index.services.search.per_note import section_dict

    hits = []
    for hit in result.hits:
        item = {key: getattr(hit, key) for key in ("path", "heading", "line_start", "line_end", "score", "snippet")}
        item["status"] = hit.status
        if hit.more:  # one hit per note: its other matched sections, the first few of them named
            item["more"], item["also"] = hit.more, [section_dict(section) for section in hit.also]
        if explain:
            item["explain"] = hit.explain
        hits.append(item)
    return {"query": result.query, "mode": result.mode, "vector_used": result.vector_used,
            "reranked": result.reranked, "confidence": result.confidence, "relevant": result.relevant,
            "notices": list(result.notices), "hits": hits}


def adopt(app, args, embed: bool = True) -> None:
    """The terminal sees what the agent in this folder sees: the project's own docs/ and notes/
    are brought up to date first (ADR 0020), with progress on stderr while it embeds (issue 39:
    a first search sat silent for two minutes). `embed=False` (status, sources): keywords only,
    no hidden work; what waits for vectors is reported instead."""
    report = app.adopt_workspace(Progress(not args.silent, quiet_scan=True), embed=embed)
    if report is not None and (report.indexed or report.chunks_embedded):  # the embedding catches up anywhere
        # those that waited included; "indexed 0 notes" is left out (walkthrough H)
        said = [f"indexed {counted(report.indexed, 'note')}"] if report.indexed else []
        said += [f"embedded {counted(report.chunks_embedded, 'chunk')}"] if report.chunks_embedded else []
        _say(args, f"{'; '.join(said)} of {app.workspace.describe()}")
