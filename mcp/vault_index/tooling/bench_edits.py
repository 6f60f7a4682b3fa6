"""`vault-index bench`, edits part: from a note edit to that edit found by search, with the
server running and vectors live (ADR 0010, docs/bench.md).

The real server (`python -m vault_index serve`, shipped MiniLM) is spawned through the MCP SDK
stdio client on a small vault indexed with that model; one hybrid search loads its model. Then,
per edit: a unique word is written into a note, the PostToolUse hook is spawned as Claude Code
spawns it (it hands the path to the server over the index's socket), and `search_notes` is
called until the note comes back for that word. Two clocks start at the hook's spawn: the hook's
own exit, and the first search answer that holds the edited note. Before each edit the bench
spawns `python -c pass` once: the floor under the hook, measured in the same loop (the machine is
shared, so read the hook against it, and the load average beside both). Afterwards the same kind
of edit is re-indexed in this process with the model loaded, and searched, so the found time can
be split into the hook, the server's re-index and the search.
"""

from __future__ import annotations

import dataclasses
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
    from vault_index.engine.embedding.models import Models
    from vault_index.engine.stores.store import Store
    from vault_index.services.writes.edit_queue import socket_path
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
    load_before = _loadavg()
    with open(workdir / "edit-server-stderr.log", "w") as errlog:
        timings = anyio.run(_session, root, env, runs, errlog, edit_payload, SCRIPTS / "reindex_hook.py")
    load_after = _loadavg()
    store = Store(db)
    missing = len(store.chunks_missing_vectors(embedder.fingerprint))
    store.close()
    in_process = _in_process(root, db, models, runs)
    hook, floor = pct(timings["hook"]), pct(timings["floor"])
    ratio = round(hook["p95_ms"] / floor["p95_ms"], 2) if hook.get("p95_ms") and floor.get("p95_ms") else None
    return {"runs": runs, "hook": hook, "python_floor": floor, "hook_over_floor_p95": ratio,
            "edit_to_found": pct(timings["found"]), "hook_exit_to_found": pct(timings["after_hook"]),
            "reindex_in_process": pct(in_process["reindex"]), "search_after_edit": pct(in_process["search"]),
            "found": f"{len(timings['found'])}/{runs}", "socket_used": timings["socket"],
            "chunks_missing_vectors_after": missing, "socket_path_bytes": len(str(socket_path(db))),
            "loadavg_before": load_before, "loadavg_after": load_after}


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _in_process(root: Path, db: Path, models, runs: int) -> dict:
    """The server's share, without the socket: re-index one edited note with the model loaded,
    then the first hybrid search that must find it (it refreshes the in-memory vectors)."""
    from vault_index.config import Settings
    from vault_index.services.app import App

    app = App.open(dataclasses.replace(Settings.from_env(), db_path=db), models=models)
    reindex, search = [], []
    try:
        app.search("garden sensor", mode="hybrid", limit=3)
        for n in range(runs):
            path = root / f"e{n % VAULT_FILES}.md"
            path.write_text(path.read_text(encoding="utf-8") + f"\nagain inproc{n}mark\n", encoding="utf-8")
            t0 = time.perf_counter()
            app.reindex_file(str(path))
            t1 = time.perf_counter()
            app.search(f"inproc{n}mark", mode="hybrid", limit=3)
            reindex.append(t1 - t0)
            search.append(time.perf_counter() - t1)
    finally:
        app.close()
    return {"reindex": reindex, "search": search}


async def _session(root: Path, env: dict, runs: int, errlog, edit_payload, hook_script: Path) -> dict:
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "vault_index", "serve"], env=env)
    hook_times, found_times, after_hook, floor_times, socket_seen = [], [], [], [], False
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
                t_floor = time.perf_counter()
                subprocess.run([sys.executable, "-c", "pass"], env=env, check=False)
                floor_times.append(time.perf_counter() - t_floor)
                hook_done: list[float] = []
                t0 = time.perf_counter()
                proc = subprocess.Popen([sys.executable, str(hook_script)], stdin=subprocess.PIPE,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
                waiter = threading.Thread(target=_stamp_exit, args=(proc, payload, hook_done), daemon=True)
                waiter.start()
                # Claude Code waits for a PostToolUse hook before the agent's next step, so the
                # first search comes after the hook exits: searching while it runs would time the
                # hook against a server busy with searches no session sends at that moment.
                await anyio.to_thread.run_sync(waiter.join, POLL_TIMEOUT_S)
                while time.perf_counter() - t0 < POLL_TIMEOUT_S:
                    result = await session.call_tool(
                        "search_notes", {"query": marker, "mode": "hybrid", "limit": 3})
                    if _has(result, path):
                        found_times.append(time.perf_counter() - t0)
                        break
                waiter.join(timeout=POLL_TIMEOUT_S)
                if hook_done:
                    hook_times.append(hook_done[0] - t0)
                    if found_times and len(found_times) == n + 1:
                        after_hook.append(max(0.0, t0 + found_times[-1] - hook_done[0]))
    return {"hook": hook_times, "found": found_times, "after_hook": after_hook, "floor": floor_times,
            "socket": socket_seen}


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
    return (f"edit to search, server running with the shipped MiniLM ({e['runs']} edits, ms p50/p95; "
            f"load {e.get('loadavg_before')} -> {e.get('loadavg_after')}):\n"
            f"  PostToolUse hook, spawn to exit (hands the path to the server)  {pair(e['hook'])}"
            f"  ({e.get('hook_over_floor_p95')}x the floor at p95)\n"
            f"  python -c pass, same loop (the floor)                          {pair(e.get('python_floor'))}\n"
            f"  hook spawn to the edit found by search_notes                   {pair(e['edit_to_found'])}"
            f"  (found {e['found']}; socket used: {e['socket_used']}; "
            f"chunks left without vectors: {e['chunks_missing_vectors_after']})\n"
            f"  hook exit to the edit found                                    {pair(e.get('hook_exit_to_found'))}\n"
            f"  in process, model loaded: re-index the edited note             {pair(e.get('reindex_in_process'))}\n"
            f"  in process: the next hybrid search (refreshes vectors)         {pair(e.get('search_after_edit'))}")
