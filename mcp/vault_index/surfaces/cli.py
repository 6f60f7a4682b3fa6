"""`vault-index`: with no command it serves MCP over stdio; otherwise a terminal CLI.

Data goes to stdout, progress and messages to stderr. `--json` output is documented in
docs/cli.md and kept stable for scripts.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import asdict
from pathlib import Path

from vault_index import __version__
from vault_index.config import Settings
from vault_index.errors import UsageError, VaultIndexError
from vault_index.surfaces.cli_common import (
    Progress,
    _json,
    _say,
    add_subquery_flags,
    adopt,
    also_line,
    counted,
    result_json,
    role_filters,
    subqueries_from,
)
from vault_index.surfaces.cli_files import add_parsers as add_file_parsers
from vault_index.surfaces.cli_files import print_sources
from vault_index.surfaces.cli_graph import add_parsers as add_graph_parsers
from vault_index.surfaces.cli_http import add_bench_options, add_serve_options
from vault_index.surfaces.cli_http import add_parsers as add_token_parsers
from vault_index.surfaces.cli_links import add_parsers as add_link_parsers
from vault_index.surfaces.cli_trust import add_parsers as add_trust_parsers
from vault_index.surfaces.cli_ui import add_parsers as add_ui_parsers
from vault_index.surfaces.cli_ui import why_lines
from vault_index.surfaces.cli_vault import add_parsers as add_vault_parsers

BARE_HINT = ("vault-index: serving MCP over stdio for an agent (an MCP client starts it this way); "
             "Ctrl-C stops. For the terminal commands: vault-index --help")


def cmd_index(app, args) -> int:
    if args.name is not None and len(args.paths) != 1:
        raise UsageError("--name names one source: give exactly one PATH with it")
    if args.checkout and (args.name is None or len(args.paths) != 1):
        raise UsageError("--checkout joins one folder to a source: give exactly one PATH and --name NAME")
    if not args.paths:  # walkthrough L: in a fresh project it re-synced nothing, the project's docs/ unregistered
        adopt(app, args)
    progress = Progress(not args.silent)
    try:
        report = app.index(args.paths or None, progress, name=args.name, checkout=args.checkout)
    except KeyboardInterrupt:
        progress.close()
        # Files are swapped in one transaction each and vectors committed in batches, so nothing
        # done so far is lost; the next run skips it and embeds only what is missing.
        print("\ninterrupted: what was indexed and embedded so far is kept; "
              "run `vault-index index` again to finish", file=sys.stderr)
        return 130
    data = asdict(report)
    if args.json:
        print(_json(data))
    else:
        print(
            f"indexed {counted(report.indexed, 'file')}, {report.unchanged} unchanged, {report.removed} removed"
            + (f", {report.stale} older than the version another checkout indexed" if report.stale else "")
            + f"; {counted(report.chunks_embedded, 'chunk')} embedded in {report.embed_seconds:.1f} s "
            f"(total {report.seconds:.1f} s)"
        )
        if not report.vector_used:
            _say(args, f"note: no vectors ({app.models.embed_error}); keyword search still works")
        for path, message in report.problems:
            _say(args, f"  {path}: {message}")
        for notice in report.notices:
            _say(args, notice)
        scopes = app.store.source_scopes()
        for raw in args.paths or []:
            path = str(Path(raw).expanduser().resolve())
            if path in scopes:
                whose = f"the workspace {scopes[path]}" if scopes[path] else "personal: seen in every project"
                _say(args, f"{path}: {whose} (docs/adr/0020)")
    return 0


def cmd_search(app, args) -> int:
    from vault_index.services.search.search import Filters
    from vault_index.surfaces.cli_common import typed_path
    from vault_index.surfaces.notices import print_notices

    adopt(app, args)
    filters = role_filters(app, Filters(args.path, tuple(args.tag or ()), args.status, args.collection))
    queries = (line.strip() for line in sys.stdin) if args.query == "-" else [args.query]
    batch = args.query == "-"
    subqueries = subqueries_from(args)
    if batch and subqueries is not None:
        raise UsageError("sub-query flags belong to one question; not with '-' (one query per line)")
    for query in queries:
        if batch and not query:
            continue
        result = app.search(query, args.mode, args.n, filters, args.explain, source=args.source,
                            per_note=args.per_note, subqueries=subqueries)
        shown = result_json(result, args.explain)
        if args.why:  # the inspector's answer for that note (services/why.py)
            shown["why"] = app.why(query, typed_path(app, args.why), mode=args.mode, limit=args.n, filters=filters,
                                   source=args.source, per_note=args.per_note)
        if args.json or batch:
            print(_json(shown), flush=True)
            continue
        print_notices(result.notices, app.settings.model_cache, args.silent)
        if not result.hits:
            _say(args, "no hits")
        elif result.confidence is not None:
            _say(args, f"confidence {result.confidence:.2f}" + ("" if result.relevant else ": nothing relevant"))
        for number, (hit, item) in enumerate(zip(result.hits, shown["hits"], strict=True), start=1):
            print(f"{number:2}. {hit.path}:{hit.line_start}-{hit.line_end}  {hit.score:.4f}")
            print(f"    {hit.heading}" + (f"  [{hit.status}]" if hit.status else ""))
            snippet = " ".join(hit.snippet.split())
            print(f"    {snippet[:200]}{'…' if len(snippet) > 200 else ''}")
            if hit.more:
                print(f"    {also_line(item['also'], hit.more)}")
            if args.explain:
                print(f"    explain: {_json(hit.explain)}")
        if args.why:
            print("\n".join(why_lines(shown["why"])))
    return 0


def cmd_get(app, args) -> int:
    from vault_index.surfaces.cli_common import typed_path

    note = app.get_note(typed_path(app, args.path), args.start, args.lines)
    if args.json:
        print(_json(note))
    else:
        sys.stdout.write(note["content"] + "\n")
        if note["truncated"]:
            _say(args, f"(cut at line {note['line_end']} of {note['total_lines']}; use --start)")
    return 0


def cmd_sources(app, args) -> int:
    adopt(app, args, embed=False)
    sources = app.sources()
    if args.json:
        print(_json(sources))
    elif not sources:
        _say(args, "no sources yet: `vault-index index PATH` adds one")
    else:
        print_sources(sources)
    return 0


def cmd_remove(app, args) -> int:
    removed = app.remove(args.path)
    print(_json({"removed_files": removed}) if args.json else f"removed {args.path} ({counted(removed, 'file')})")
    return 0


def cmd_status(app, args) -> int:
    adopt(app, args, embed=False)
    status = app.status(probe_models=True)
    status["notices"] = [*status["notices"], *_hook_notices(app)]
    if args.json:
        print(_json(status))
        return 0
    print(f"index     {status['db']} ({status['db_bytes'] / 1e6:.1f} MB)")
    print(f"workspace {status['workspace']['sees']}")
    print(f"content   {counted(len(status['sources']), 'source')}, {counted(status['files'], 'file')}, "
          f"{counted(status['chunks'], 'chunk')}")
    pending = status["vectors_pending"]
    # walkthrough H: it did not say what embeds them
    waiting = (f", {counted(pending, 'chunk')} waiting for vectors (a running server embeds them; "
               "`vault-index index` now)") if pending else ""
    unused = f", not used: {status['embed_off_reason']}" if status["embed_off"] else ""
    print(f"vectors   {status['vectors']} ({status['embed_model'] or 'none'}){waiting}{unused}, "
          f"backend {status['vector_backend']}")
    state = status["rerank_state"]
    print(f"rerank    {state}" + (f" ({status['rerank_model']})" if state == "on" else ""))
    for problem in status["problems"]:
        print(f"problem   {problem['path']}: {problem['message']}")
    for notice in status["notices"]:  # rebuilt after damage, read-only: said every time it holds
        print(f"notice    {notice}")
    return 0


def _hook_notices(app) -> list[str]:
    """Hooks of the working vault that writes will not run (untrusted or changed): status says so."""
    from vault_index.services.writes import hook_trust

    try:
        return hook_trust.untrusted_notices(app.vault(None))
    except (VaultIndexError, OSError):
        return []


def cmd_migrate(app, args) -> int:
    """Copy the SQLite index (VAULT_INDEX_DB) into an empty PostgreSQL database (ADR 0017)."""
    from vault_index.engine.stores.store_contract import open_store
    from vault_index.engine.stores.urls import is_postgres_url, redact

    settings = Settings.from_env()
    if not is_postgres_url(args.to):
        raise UsageError(f"--to must be a postgresql:// URL (got {redact(args.to)!r})")
    if not settings.db_path.is_file():
        raise UsageError(f"there is no SQLite index at {settings.db_path} to copy; "
                         "VAULT_INDEX_DB names the one to migrate")
    from vault_index.engine.stores.migrate_store import copy_index, describe

    source = open_store(settings.db_path)
    try:
        target = open_store(settings.db_path, args.to)
        try:
            copied = copy_index(source, target)
        finally:
            target.close()
    finally:
        source.close()
    print(_json(copied) if args.json else describe(copied, str(settings.db_path), redact(args.to)))
    return 0


def cmd_upgrade(app, args) -> int:
    """Bring earlier versions' per-project indexes and vault sources into the one index (ADR 0020)."""
    from vault_index.services.upgrade import upgrade

    said = upgrade(app)
    if args.json:
        print(_json({"moved": said}))
    for line in said if not args.json else []:
        print(line)
    if not said and not args.json:
        _say(args, "upgrade: nothing to move")
    return 0


def cmd_eval(app, args) -> int:
    if args.suite:
        from vault_index.tooling.suite import run_suite

        return run_suite(args)
    from vault_index.tooling.evaluation import run_eval

    return run_eval(app, args)


def cmd_bench(app, args) -> int:
    if args.postgres:
        from vault_index.tooling.bench_postgres import run_pg_bench

        return run_pg_bench(args)
    if args.http:
        from vault_index.tooling.bench_http import run_http_bench

        return run_http_bench(args)
    if args.links:
        from vault_index.tooling.bench_links import run_links_bench

        return run_links_bench(args)
    if args.write:
        from vault_index.tooling.bench_write import run_write_bench

        return run_write_bench(args)
    from vault_index.tooling.bench import run_bench

    return run_bench(args)


def cmd_serve(app, args) -> int:
    if getattr(args, "http", None):
        from vault_index.surfaces.cli_http import cmd_serve_http

        return cmd_serve_http(args)
    from vault_index.surfaces.server import serve_stdio

    serve_stdio(args.memory_file, watch=getattr(args, "watch", False), role=getattr(args, "role", None),
                vault_root=getattr(args, "vault", None))
    return 0


def cmd_watch(app, args) -> int:
    import threading

    from vault_index.services.app import App
    from vault_index.services.watch import Watcher

    def report(kind: str, path: str) -> None:
        if not args.silent or kind == "error":
            print(f"{kind}: {path}", file=sys.stderr, flush=True)

    watcher = Watcher(App.open, on_change=report)
    stop = threading.Event()
    worker = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    worker.start()
    if watcher.ready.wait(timeout=600) and worker.is_alive():
        _say(args, "watching the registered sources; Ctrl-C stops")
    try:
        while worker.is_alive():
            worker.join(timeout=0.5)
    except KeyboardInterrupt:
        stop.set()
        worker.join(timeout=10)
    stats = watcher.stats
    _say(args, f"re-indexed {stats.reindexed}, removed {stats.removed}, full syncs {stats.syncs}, "
               f"errors {len(stats.errors)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from vault_index.services.search.search import DEFAULT_MODE, MODES, RERANK_MODE

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    common.add_argument("-s", "--silent", action="store_true", help="no progress or notes on stderr")
    # Trigger: argparse lets a subcommand's default overwrite the same option given before it.
    # Why: `vault-index --memory-file X serve` must keep X.
    # Outcome: the subcommands' copy of the option has no default (SUPPRESS).
    memory_option = argparse.ArgumentParser(add_help=False)
    memory_option.add_argument("--memory-file", metavar="PATH", default=argparse.SUPPRESS,
                               help="the memory graph file (default $VAULT_MEMORY_FILE or ~/.mcp-memory/memory.jsonl)")
    parser = argparse.ArgumentParser(
        prog="vault-index",
        description="Hybrid keyword + vector search over markdown notes. "
        "With no command, serves MCP over stdio.",
    )
    parser.add_argument("--version", action="version", version=f"vault-index {__version__}")
    parser.add_argument("--memory-file", metavar="PATH", default=None,
                        help="the memory graph file (default $VAULT_MEMORY_FILE or ~/.mcp-memory/memory.jsonl)")
    parser.add_argument("--watch", action="store_true",
                        help="with no command: serve MCP and re-index source files that change on disk")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("index", parents=[common], help="add folders/files as sources and sync them")
    p.add_argument("paths", nargs="*", help="folders or files; none re-syncs every source")
    p.add_argument("--name", help="name the one source given (default: its folder's name)")
    p.add_argument("--checkout", action="store_true",
                   help="with --name: the folder is another checkout of the source of that name (a team "
                        "vault cloned on several machines or folders): its notes are stored once")
    p.set_defaults(run=cmd_index)

    p = sub.add_parser("search", parents=[common], help="search the index ('-' reads queries from stdin)")
    p.add_argument("query", help="the question; '-' reads one query per line and prints JSON lines")
    p.add_argument("-n", type=int, default=10, help="number of hits (1-100, default 10)")
    p.add_argument("--mode", choices=MODES, default=None,
                   help=f"default {DEFAULT_MODE} ({RERANK_MODE} with VAULT_RERANK=1)")
    p.add_argument("--explain", action="store_true", help="each stage's rank and score per hit")
    p.add_argument("--why", metavar="PATH", help="why this note ranks where it does, or not at all")
    p.add_argument("--chunks", dest="per_note", action="store_false",
                   help="one hit per matching chunk (default: one per note, its other matched sections listed)")
    p.add_argument("--per-note", dest="per_note", action="store_true", help=argparse.SUPPRESS)  # the default now
    p.add_argument("--path", help="only files under this path prefix")
    p.add_argument("--source", help="only files of the source with this name (`sources` lists them)")
    p.add_argument("--tag", action="append", help="only notes with this tag (repeatable)")
    p.add_argument("--status", help="only notes with this frontmatter status")
    p.add_argument("--collection", help="only notes with this frontmatter collection")
    add_subquery_flags(p)
    p.set_defaults(run=cmd_search)

    p = sub.add_parser("get", parents=[common], help="print a note inside a registered source")
    p.add_argument("path")
    p.add_argument("--start", type=int, default=1, help="first line (1-based)")
    p.add_argument("--lines", type=int, default=2000, help="how many lines (max 2000)")
    p.set_defaults(run=cmd_get)

    p = sub.add_parser("sources", parents=[common], help="list registered sources")
    p.set_defaults(run=cmd_sources)
    p = sub.add_parser("remove", parents=[common], help="unregister a source and drop its files")
    p.add_argument("path", help="the source's path or name (a checkout's path: that checkout only)")
    p.set_defaults(run=cmd_remove)
    p = sub.add_parser("status", parents=[common], help="index state, models, vector backend, problems")
    p.set_defaults(run=cmd_status)

    p = sub.add_parser("migrate", parents=[common],
                       help="copy the SQLite index into an empty PostgreSQL database (vectors too, no re-embedding)")
    p.add_argument("--to", required=True, metavar="URL", help="postgresql://user:password@host/database")
    p.set_defaults(run=cmd_migrate)
    p = sub.add_parser("upgrade", parents=[common],
                       help="move earlier versions' per-project indexes into the one index (says what moved)")
    p.set_defaults(run=cmd_upgrade)
    p = sub.add_parser("eval", parents=[common], help="score retrieval on the golden set")
    p.add_argument("--golden", default="eval/golden.jsonl")
    p.add_argument("--vault", default="example-vault", help="folder the golden labels point into")
    p.add_argument("--modes", default="all", help="'all' or comma-separated modes")
    p.add_argument("--baseline", help="fail (exit 1) if a hybrid metric drops > 0.03 below this file")
    p.add_argument("--save", help="write the scores to this file (a new baseline)")
    p.add_argument("--by-kind", action="store_true", help="also print tables per question kind")
    p.add_argument("--subqueries", action="store_true",
                   help="also run each mode with the golden questions' agent sub-queries (rows '<mode> +sub')")
    p.add_argument("--suite", help="a suite file (eval/suite.json): several corpora in one run")
    p.add_argument("--fast", action="store_true", help="with --suite: each corpus's CI subset only")
    p.add_argument("--prompts", help="with --suite: what the prompt hook injects for these unrelated prompts "
                                     "(eval/prompts/unrelated.jsonl) and for each golden question")
    p.add_argument("--lockbox", action="store_true",
                   help="with --suite: score the lockbox corpora too (once, at the end: eval/LOCKBOX.md)")
    p.add_argument("--store", metavar="URL",
                   help="run on PostgreSQL: postgresql://... of a server; each corpus gets its own database "
                        "vault_eval_<corpus>, filled from the SQLite eval cache when new (docs/postgres.md)")
    p.add_argument("--parity", metavar="FILE",
                   help="fail (exit 1) if a file ndcg@5 (keyword, vector, hybrid) differs by more than 0.005 "
                        "from this saved report (--save of the same eval on the other store)")
    p.set_defaults(run=cmd_eval)

    p = sub.add_parser("bench", parents=[common], help="speed and memory benchmark (reports, never fails)")
    p.add_argument("--sizes", help="chunk counts of the synthetic vaults (default 1000,10000,100000; "
                                   "with --postgres 100000,1000000)")
    p.add_argument("--queries", type=int, default=200, help="queries per mode and size")
    p.add_argument("--quick", action="store_true", help="sizes 1000,10000 and fewer queries")
    p.add_argument("--write", action="store_true",
                   help="instead: one note write through the running server, per stage (docs/bench.md)")
    p.add_argument("--writes", type=int, default=50, help="with --write: how many writes (default 50)")
    add_bench_options(p)
    p.add_argument("--million", action="store_true",
                   help="also kNN at 1M vectors (exact against IVF) and hybrid search at 1M chunks (tens of minutes)")
    p.add_argument("--million-chunks", type=int, default=None,
                   help="with --million: chunks of the hybrid part's synthetic index (default 1,000,000)")
    p.add_argument("--prompt-chunks", type=int, default=None,
                   help="hooks part: chunks of the prompt hook's synthetic project (default 10000, --quick 1000)")
    p.add_argument("--parts", help="only these parts, comma-separated: sizes, embedder, footprint, weights, edits, "
                                   "hooks, graph (default all)")
    p.add_argument("--links", action="store_true",
                   help="instead: the link graph at 10k notes / 50k links: backlinks, neighbors, lint")
    p.add_argument("--postgres", metavar="URL",
                   help="instead: PostgreSQL beside SQLite on the same synthetic data (bulk load, HNSW build, "
                        "recall@10, hybrid p95, size); URL of a server, one database per size (docs/postgres.md)")
    p.add_argument("--keep", action="store_true", help="with --postgres: keep the bench databases")
    p.add_argument("--reuse", action="store_true", help="with --postgres: search a database --keep kept "
                   "(same size, HNSW built; kept again) instead of loading and building it again")
    p.set_defaults(run=cmd_bench)

    add_vault_parsers(sub, common)
    add_link_parsers(sub, common)

    add_graph_parsers(sub, common, memory_option)

    p = sub.add_parser("watch", parents=[common], help="re-index files changed on disk (editor, git pull) until Ctrl-C")
    p.set_defaults(run=cmd_watch)

    p = sub.add_parser("serve", parents=[memory_option], help="serve MCP over stdio (the default with no command)")
    p.add_argument("--watch", action="store_true", default=argparse.SUPPRESS,
                   help="also re-index files of the sources that change on disk while serving")
    p.add_argument("--role", help="the role of every request (default $VAULT_ROLE, else the config's local_role)")
    p.add_argument("--vault", metavar="DIR", help="the vault (default $CLAUDE_PROJECT_DIR, else the working folder)")
    add_serve_options(p)
    p.set_defaults(run=cmd_serve)
    add_token_parsers(sub, common)
    add_trust_parsers(sub, common)
    add_ui_parsers(sub, common)
    add_file_parsers(sub, common)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        from vault_index.surfaces.server import serve_stdio

        if sys.stdin.isatty():
            # A person typed it; an MCP client never gives the server a terminal on stdin.
            print(BARE_HINT, file=sys.stderr, flush=True)
        serve_stdio()
        return 0
    args = build_parser().parse_args(argv)
    args.memory_file = Path(args.memory_file or Settings.from_env().memory_file).expanduser()
    if not getattr(args, "command", None):  # only top-level options, e.g. --memory-file: serve
        args.command, args.run = "serve", cmd_serve
    if os.environ.get("NO_COLOR") is not None:
        pass  # output is plain text already; honoured by never emitting colour
    from vault_index.services.app import App

    try:
        # eval and bench open their own indexes; serve opens one inside the server.
        # graph commands read the memory file only.
        quiet = ("bench", "serve", "eval", "watch", "token", "migrate", "trust")
        app = None if args.command in quiet else App.open(start=getattr(args, "vault", None))
        try:
            return args.run(app, args)
        finally:
            if app is not None:
                app.close()
    except VaultIndexError as exc:
        print(f"vault-index: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
