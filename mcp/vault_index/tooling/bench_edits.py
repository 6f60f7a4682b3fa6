"""`vault-index bench`, edits part: from a note edit to that edit found by search, with the
server running and vectors live (ADR 0010, docs/bench.md).

The real server (`python -m vault_index serve`, shipped MiniLM) is spawned through the MCP SDK
stdio client on a small vault indexed with that model; one hybrid search loads its model. Then,
per edit: a unique word is written into a note, the PostToolUse hook is spawned as Claude Code
spawns it (it hands the path to the server over the index's socket), and `search_notes` is
called until the note comes back for that word. Two clocks start at the hook's spawn: the hook's
own exit, and the first search answer that holds the edited note.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

EDIT_RUNS, EDIT_RUNS_QUICK = 12, 6
POLL_TIMEOUT_S = 30.0
VAULT_FILES = 8


def bench_edits(args, workdir: Path, pct) -> dict:
    """pct: seconds -> p50/p95 dict."""
    import anyio

    from vault_index.config import Settings
    from vault_index.engine import indexer
    from vault_index.engine.models import Models
    from vault_index.engine.store import Store
    from vault_index.services.edit_queue import socket_path
    from vault_index.tooling.bench_hooks import SCRIPTS, edit_payload

    if not (SCRIPTS / "reindex_hook.py").is_file():
        return {"unavailable": f"hook scripts not found in {SCRIPTS}"}
    models = Models("shipped:minilm", "none", Settings.from_env().model_cache, rerank=False)
    embedder = models.embedder()
    if embedder is None:
        return {"unavailable": models.embed_error}
    root, db = workdir / "edit-vault", workdir / "edit.db"
    for f in range(VAULT_FILES):
        path = root / f"e{f}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Edit note {f}\n\n## Part\n\ngarden sensor battery notes {f}\n", encoding="utf-8")
    store = Store(db)
    indexer.sync(store, models, [str(root)])
    store.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "CLAUDE_"))}
    env.update(VAULT_INDEX_DB=str(db), VAULT_EMBED_MODEL="shipped:minilm", VAULT_RERANK="0", HF_HUB_OFFLINE="1")
    for key in ("VAULT_MODEL_CACHE",):
        if os.environ.get(key):
            env[key] = os.environ[key]
    runs = EDIT_RUNS_QUICK if getattr(args, "quick", False) else EDIT_RUNS
    with open(workdir / "edit-server-stderr.log", "w") as errlog:
        timings = anyio.run(_session, root, env, runs, errlog, edit_payload, SCRIPTS / "reindex_hook.py")
    store = Store(db)
    missing = len(store.chunks_missing_vectors(embedder.fingerprint))
    store.close()
    return {"runs": runs, "hook": pct(timings["hook"]), "edit_to_found": pct(timings["found"]),
            "found": f"{len(timings['found'])}/{runs}", "socket_used": timings["socket"],
            "chunks_missing_vectors_after": missing, "socket_path_bytes": len(str(socket_path(db)))}


async def _session(root: Path, env: dict, runs: int, errlog, edit_payload, hook_script: Path) -> dict:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "vault_index", "serve"], env=env)
    hook_times, found_times, socket_seen = [], [], False
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("search_notes", {"query": "garden sensor", "mode": "hybrid", "limit": 3})
            socket_seen = Path(env["VAULT_INDEX_DB"] + ".sock").exists()
            for n in range(runs):
                path = root / f"e{n % VAULT_FILES}.md"
                marker = f"quillmark{n}zed"
                path.write_text(path.read_text(encoding="utf-8") + f"\nedited {marker}\n", encoding="utf-8")
                payload = edit_payload(root, path, "notes", "notes")
                hook_done: list[float] = []
                t0 = time.perf_counter()
                proc = subprocess.Popen([sys.executable, str(hook_script)], stdin=subprocess.PIPE,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
                waiter = threading.Thread(target=_stamp_exit, args=(proc, payload, hook_done), daemon=True)
                waiter.start()
                while time.perf_counter() - t0 < POLL_TIMEOUT_S:
                    result = await session.call_tool(
                        "search_notes", {"query": marker, "mode": "hybrid", "limit": 3})
                    if _has(result, path):
                        found_times.append(time.perf_counter() - t0)
                        break
                waiter.join(timeout=POLL_TIMEOUT_S)
                if hook_done:
                    hook_times.append(hook_done[0] - t0)
    return {"hook": hook_times, "found": found_times, "socket": socket_seen}


def _stamp_exit(proc: subprocess.Popen, payload: str, out: list[float]) -> None:
    try:
        proc.communicate(payload.encode(), timeout=POLL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        return
    out.append(time.perf_counter())


def _has(result, path: Path) -> bool:
    data = getattr(result, "structuredContent", None) or {}
    if not data:
        try:
            data = json.loads(result.content[0].text)
        except (IndexError, AttributeError, ValueError):
            return False
    return any(Path(hit.get("path", "")).name == path.name for hit in data.get("hits", []))


def render(e: dict | None) -> str:
    if not e or "runs" not in e:
        why = (e or {}).get("unavailable") or (e or {}).get("error")
        return f"edit to search (server running, vectors live): {why}"
    pair = lambda d: f"{d['p50_ms']}/{d['p95_ms']}" if d and "p50_ms" in d else "-"  # noqa: E731
    return (f"edit to search, server running with the shipped MiniLM ({e['runs']} edits, ms p50/p95):\n"
            f"  PostToolUse hook, spawn to exit (hands the path to the server)  {pair(e['hook'])}\n"
            f"  hook spawn to the edit found by search_notes                   {pair(e['edit_to_found'])}"
            f"  (found {e['found']}; socket used: {e['socket_used']}; "
            f"chunks left without vectors: {e['chunks_missing_vectors_after']})")
