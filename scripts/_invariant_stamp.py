"""Skip the slow invariants at session start when nothing they read changed since they last passed.

Trigger: the SessionStart hook ran every check at the start of every session, and the server
launch alone spawns a Python process that imports the MCP SDK (1-8 s on a busy machine).
Why: those checks read a handful of files; when none of them changed since a run in which the
check passed, running it again can only repeat the same "ok".
Outcome: each skippable check names its inputs; a stamp in the data folder keeps, per project,
a fingerprint (path, size, mtime in ns, plus the environment and interpreter) of those inputs
taken when the check last passed. A matching fingerprint answers "ok (unchanged since ...)"
without running the check; any change, a failed or warned run, or a missing stamp runs it.
Only the hook uses the stamp: `invariants.py` by hand always runs everything.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from _invariant_wiring import Context, Result

STAMP_VERSION = 1
STAMP_NAME = "invariants-stamp.json"
# Environment that changes what a check sees (the server's index, models, graph, project).
ENV_PREFIXES = ("VAULT_", "CLAUDE_PLUGIN_")


def stamp_path(ctx: Context) -> Path:
    """One stamp file per data folder; entries inside are keyed by project."""
    from vault_index.config import index_home

    base = ctx.plugin_data or index_home()
    return base / STAMP_NAME


def _stat(path: Path) -> list:
    try:
        info = path.stat()
    except (OSError, ValueError):
        return [str(path), None]
    return [str(path), info.st_size, info.st_mtime_ns]


def _package_files() -> list[Path]:
    """The vault_index sources the server would import (edits to them change what launches)."""
    import vault_index

    return sorted(Path(vault_index.__file__).resolve().parent.rglob("*.py"))


def _launch_inputs(ctx: Context) -> list[Path]:
    _, where = ctx.server
    files = [Path(where.split(" (`claude mcp add`")[0]), *_package_files()]  # Claude Code's config file itself
    try:
        command, _ = ctx.launch
    except (KeyError, TypeError, AttributeError):
        return files
    files += [Path(part) for part in command if os.path.isabs(part)]
    if ctx.plugin_data:
        files.append(ctx.plugin_data / "install-stamp.json")
    return files


def _budget_inputs(ctx: Context) -> list[Path]:
    from _invariant_content import always_loaded

    roots = [ctx.project / "CLAUDE.md", ctx.project / ".claude" / "CLAUDE.md", ctx.project / "CLAUDE.local.md"]
    found, _ = always_loaded(ctx.project)
    return [*roots, *found]


def _golden_inputs(ctx: Context) -> list[Path]:
    golden = ctx.project / "eval" / "golden.jsonl"
    files = [golden]
    try:
        lines = golden.read_text(encoding="utf-8").splitlines()
    except (OSError, ValueError):
        return files
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, dict):
            continue
        for label in [item.get("file"), *(item.get("also") or [])]:
            path = label.get("file") if isinstance(label, dict) else label
            if isinstance(path, str):
                files.append(ctx.project / path)
    return sorted(set(files))


def _graph_inputs(ctx: Context) -> list[Path]:
    return [ctx.memory_file]


# check function name -> its inputs. Checks not listed here always run (they are fast, or they
# walk the notes themselves, like the index freshness check).
INPUTS: dict[str, Callable[[Context], list[Path]]] = {
    "check_mcp_launch": _launch_inputs,
    "check_context_budget": _budget_inputs,
    "check_golden": _golden_inputs,
    "check_graph": _graph_inputs,
}


def fingerprint(name: str, ctx: Context) -> str | None:
    """A hash of everything `name` reads, or None when the check has no declared inputs."""
    inputs = INPUTS.get(name)
    if inputs is None:
        return None
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(ENV_PREFIXES))
    parts = {"version": STAMP_VERSION, "check": name, "python": _stat(Path(sys.executable)), "env": env,
             "project": str(ctx.project), "files": [_stat(p) for p in inputs(ctx)]}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def load(ctx: Context) -> dict:
    try:
        data = json.loads(stamp_path(ctx).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    entry = data.get(str(ctx.project)) if isinstance(data, dict) else None
    return entry if isinstance(entry, dict) else {}


def save(ctx: Context, passed: dict[str, str]) -> None:
    """Record the fingerprints of the checks that passed (atomic replace; a failure is ignored:
    the next session simply runs the checks again)."""
    path = stamp_path(ctx)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        data = data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        data = {}
    data[str(ctx.project)] = {**passed, "_at": time.time()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


def skipped(name: str, since: float) -> Result:
    check_id = name.removeprefix("check_").replace("_", "-")
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(since)) if since else "an earlier session"
    return Result(check_id, "ok", f"unchanged since it passed ({when}); not run again")
