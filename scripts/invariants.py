#!/usr/bin/env python3
"""Check that every pipeline of the bundle still reaches its consumer; fast enough for SessionStart.

    python scripts/invariants.py            # a table for a person; exit 1 when a check fails
    python scripts/invariants.py --json     # the same for scripts
    python scripts/invariants.py --hook     # SessionStart: silent when all is well, else a short
                                            # report as additionalContext; always exit 0. The
                                            # session briefing rides along (briefing.py)

Two layouts are checked. In a clone (project mode) the wiring is .mcp.json and
.claude/settings.json, as setup.py writes them. As a Claude Code plugin (CLAUDE_PLUGIN_ROOT is
set) it is the plugin's own .claude-plugin/plugin.json and hooks/hooks.json. Lessons, decision
records, the golden set and CLAUDE.md are looked up in the project folder either way.

Each check answers ok, warn or fail with one line of detail and, unless ok, what to do. Warnings
are states that degrade answers but break nothing (a stale index, a large CLAUDE.md). The checks
live in _invariant_wiring.py (server, hooks) and _invariant_content.py (index, graph, golden set,
lessons, CLAUDE.md); this file runs them and formats the answer.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from _hooklib import ensure_package, read_payload

ensure_package()

import _invariant_stamp as stamp  # noqa: E402
import briefing  # noqa: E402
from _invariant_content import (  # noqa: E402
    check_context_budget,
    check_golden,
    check_graph,
    check_graph_sources,
    check_index_fresh,
    check_lessons_adrs,
    check_sources,
)
from _invariant_wiring import Context, Result, check_hooks, check_mcp_config, check_mcp_launch  # noqa: E402
from vault_index.config import project_dir  # noqa: E402

CHECKS: list[Callable[[Context], Result]] = [
    check_mcp_config, check_mcp_launch, check_hooks, check_sources, check_index_fresh,
    check_graph, check_graph_sources, check_golden, check_lessons_adrs, check_context_budget,
]


def _timed(check: Callable[[Context], Result], ctx: Context) -> Result:
    started = time.perf_counter()
    try:
        result = check(ctx)
    except Exception as exc:  # noqa: BLE001 - a broken check is a failed check, not a crash
        name = check.__name__.removeprefix("check_").replace("_", "-")
        result = Result(name, "fail", f"the check itself crashed: {type(exc).__name__}: {exc}",
                        "report this; the other checks still ran")
    result.seconds = round(time.perf_counter() - started, 3)
    return result


def run_checks(ctx: Context, checks: list[Callable[[Context], Result]] | None = None,
               *, use_stamp: bool = False) -> list[Result]:
    """Every check; the server launch (the slow one, ~1 s) runs beside the others.

    With `use_stamp` (the SessionStart hook), a check whose inputs did not change since it last
    passed is answered from the stamp instead of run (_invariant_stamp.py)."""
    checks = list(checks or CHECKS)
    if not use_stamp:
        return _run(ctx, checks)
    before = stamp.load(ctx)
    prints = {c.__name__: stamp.fingerprint(c.__name__, ctx) for c in checks}
    fresh = [c for c in checks if prints[c.__name__] is None or before.get(c.__name__) != prints[c.__name__]]
    ran = {c.__name__: r for c, r in zip(fresh, _run(ctx, fresh), strict=True)}
    results = [ran.get(c.__name__) or stamp.skipped(c.__name__, before.get("_at", 0)) for c in checks]
    passed = {c.__name__: prints[c.__name__] for c, r in zip(checks, results, strict=True)
              if prints[c.__name__] and r.status == "ok"}
    if passed != {k: v for k, v in before.items() if k != "_at"} or fresh:
        stamp.save(ctx, passed)
    return results


def _run(ctx: Context, checks: list[Callable[[Context], Result]]) -> list[Result]:
    slow = [c for c in checks if c is check_mcp_launch]
    box: dict[str, Result] = {}
    if slow:
        # Trigger: the launch check imports the MCP SDK client on its thread while the other checks
        # import the index code here. Why: two threads importing one module graph for the first time
        # can be handed a half-initialised module ("partially initialized module 'typing'"), which
        # crashed the sources check under load. Outcome: what the fast checks need is imported first.
        import typing  # noqa: F401

        import vault_index.engine.files.sources  # noqa: F401
        import vault_index.engine.stores.store  # noqa: F401
    threads = [threading.Thread(target=lambda c=c: box.__setitem__(c.__name__, _timed(c, ctx))) for c in slow]
    for thread in threads:
        thread.start()
    results = {c.__name__: _timed(c, ctx) for c in checks if c not in slow}
    for thread in threads:
        thread.join()
    results.update(box)
    return [results[c.__name__] for c in checks]


# --- output ------------------------------------------------------------------------------------


def table(ctx: Context, results: list[Result], seconds: float, note: str) -> str:
    lines = [f"vault-index invariants ({ctx.mode} mode, project {ctx.project})"]
    if note:
        lines.append(f"  note  {note}")
    for r in results:
        lines.append(f"  {r.status.upper() if r.status != 'ok' else 'ok':5} {r.id:15} {r.detail}")
        if r.status != "ok" and r.fix:
            lines.append(f"  {'':5} {'':15} fix: {r.fix}")
    counts = {s: sum(r.status == s for r in results) for s in ("ok", "warn", "fail")}
    lines.append(f"{len(results)} checks in {seconds:.2f} s: "
                 f"{counts['ok']} ok, {counts['warn']} warn, {counts['fail']} fail")
    return "\n".join(lines)


# Trigger: plugin users were told to run `python scripts/invariants.py`, `vault-index index PATH`
# or scripts/learn.py; a plugin has no such paths in their project and no vault-index on PATH.
# Why: advice that cannot be followed is noise at the top of every session.
# Outcome: in plugin mode each such phrase is replaced by what a plugin user can do.
PLUGIN_ADVICE = (
    ("`python scripts/invariants.py`", "`python3 \"$CLAUDE_PLUGIN_ROOT/scripts/plugin_run.py\" invariants`"),
    ("`vault-index index PATH`", "/vault-index:ingest PATH"),
    ("`vault-index remove PATH`", "ask Claude to remove the source (remove_source)"),
    ("scripts/learn.py / scripts/adr.py", "/vault-index:learn or /vault-index:adr"),
    ("run `python3 setup.py` to add the hooks", "reinstall the plugin"),
    ("run `python3 setup.py`", "reinstall the plugin"),
)


def advice(text: str, ctx: Context | None) -> str:
    """`text` with clone-only commands replaced by their plugin equivalents in plugin mode."""
    if ctx is None or ctx.mode != "plugin":
        return text
    for clone_only, plugin in PLUGIN_ADVICE:
        text = text.replace(clone_only, plugin)
    return text.replace("$CLAUDE_PLUGIN_ROOT", str(ctx.plugin_root))  # a person's shell does not set it


def hook_text(results: list[Result], note: str, ctx: Context | None = None) -> str:
    bad = [r for r in results if r.status != "ok"]
    lines = [note] if note else []
    if bad:
        lines.append(f"vault-index invariants: {len(bad)} of {len(results)} checks need attention "
                     "(tell the user; `python scripts/invariants.py` shows all):")
        lines += [f"- {r.status} {r.id}: {r.detail}" + (f". Fix: {r.fix}" if r.fix else "") for r in bad]
    return advice("\n".join(lines), ctx)


def make_context(args, payload: dict) -> Context:
    root = args.plugin_root or os.environ.get("CLAUDE_PLUGIN_ROOT")
    plugin_root = Path(root).resolve() if root else None
    data = os.environ.get("CLAUDE_PLUGIN_DATA") or str(Path.home() / ".mcp-memory" / "plugin-data")
    project = Path(args.project).resolve() if args.project else project_dir(payload.get("cwd") or None)
    return Context(project=project, plugin_root=plugin_root, plugin_data=Path(data) if plugin_root else None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--hook", action="store_true", help="SessionStart hook: JSON on stdin, silent when all pass")
    mode.add_argument("--json", action="store_true", help="machine-readable result")
    parser.add_argument("--project", help="project folder (default: CLAUDE_PROJECT_DIR, the hook's cwd, or .)")
    parser.add_argument("--no-stamp", action="store_true",
                        help="with --hook: run every check even when its inputs did not change since it passed")
    parser.add_argument("--plugin-root", help="check a plugin layout rooted here (default: CLAUDE_PLUGIN_ROOT)")
    args = parser.parse_args(argv)
    if args.hook:
        payload = read_payload()
        try:
            answer = hook_answer(args, payload)
        except Exception as exc:  # noqa: BLE001 - the hook must never fail a session start
            answer = {"systemMessage": f"vault-index: the invariants could not run ({exc})",
                      "hookSpecificOutput": {"hookEventName": "SessionStart",
                                             "additionalContext": f"vault-index invariants could not run: {exc}"}}
        # Trigger: the briefing needs a SessionStart hook, and the invariants already are one.
        # Why: a second entry would cost every session start another interpreter and package import,
        # and installs wired before the briefing existed would not get it until setup ran again.
        # Outcome: the briefing rides in this process, computed apart so either failing leaves the other.
        answer = briefing.merge(answer, briefing.hook_answer(payload, Path(args.project) if args.project else None))
        if answer:
            print(json.dumps(answer))
        return 0
    started = time.perf_counter()
    note = os.environ.get("VAULT_INDEX_SETUP_NOTE", "")
    ctx = make_context(args, {})
    results = run_checks(ctx)
    seconds = time.perf_counter() - started
    failed = any(r.status == "fail" for r in results)
    if args.json:
        print(json.dumps({"ok": not failed, "mode": ctx.mode, "project": str(ctx.project), "note": note,
                          "seconds": round(seconds, 3), "checks": [asdict(r) for r in results]}, indent=2))
    else:
        print(table(ctx, results, seconds, note))
    return 1 if failed else 0


def hook_answer(args, payload: dict) -> dict | None:
    """SessionStart: nothing when every check passes; else context for the model and a line for the person."""
    note = os.environ.get("VAULT_INDEX_SETUP_NOTE", "")
    ctx = make_context(args, payload)
    results = run_checks(ctx, use_stamp=not args.no_stamp)
    text = hook_text(results, note, ctx)
    if not text:
        return None
    bad = [r.id for r in results if r.status != "ok"]
    shown = advice(f"vault-index: {', '.join(bad)} need{'s' if len(bad) == 1 else ''} attention "
                   "(`python scripts/invariants.py`)", ctx) if bad else f"vault-index: {note}"
    return {"systemMessage": shown, "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}


if __name__ == "__main__":
    raise SystemExit(main())
