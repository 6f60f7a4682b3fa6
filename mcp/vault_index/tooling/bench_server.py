"""`vault-index bench`, part two: server start-up measurements and the plain-text report.

Server start-up: spawn to handshake and to first answers, against a bare MCPServer.

Both servers are spawned with this interpreter through the real MCP SDK stdio client, alternately,
REPEATS times each; the report takes medians. The server's memory is read from /proc (Linux).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPEATS = 5
PAUSE_S = 0.5  # between spawns: the previous server has exited and the CPUs are quiet
HEAVY_MODULES = ("numpy", "onnxruntime", "fastembed", "tokenizers", "sqlite_vec", "yaml", "pathspec")
BARE_SERVER = """\
from mcp.server import MCPServer

server = MCPServer("bare")


@server.tool()
def ping() -> str:
    \"\"\"Answer pong.\"\"\"
    return "pong"


server.run("stdio")
"""
PROBE_MODULES = """\
import json, sys, time
t0 = time.perf_counter()
from vault_index.services.app import App
from vault_index.surfaces.server import build_server
t1 = time.perf_counter()
app = App.open()
build_server(app)
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "build_s": t2 - t1,
                  "loaded": {m: m in sys.modules for m in sys.argv[1:]}}))
"""


def _server_env(db: Path) -> dict[str, str]:
    env = {"VAULT_INDEX_DB": str(db), "VAULT_EMBED_MODEL": "shipped:minilm", "HF_HUB_OFFLINE": "1",
           "PYTHONUNBUFFERED": "1"}
    for key in ("XDG_CACHE_HOME", "VAULT_MODEL_CACHE", "VAULT_RERANK", "VAULT_RERANK_MODEL", "VIRTUAL_ENV"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    return env


def _children() -> set[int]:
    pids: set[int] = set()
    try:
        for task in os.listdir("/proc/self/task"):
            text = Path(f"/proc/self/task/{task}/children").read_text()
            pids.update(int(p) for p in text.split())
    except OSError:
        pass
    return pids


def _memory_mb(pids: set[int]) -> dict:
    """VmHWM (peak) and VmRSS of the spawned server, if exactly one new child is found."""
    if len(pids) != 1:
        return {}
    out = {}
    try:
        for line in Path(f"/proc/{next(iter(pids))}/status").read_text().splitlines():
            key = line.split(":")[0]
            if key in ("VmHWM", "VmRSS"):
                out["peak_rss_mb" if key == "VmHWM" else "rss_mb"] = round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return out


async def _spawn(args: list[str], env: dict, calls: list[tuple[str, dict]], errlog) -> dict:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    before = _children()
    # as Claude Code starts it: CLAUDE_PROJECT_DIR set and the project as the working folder
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=env.get("CLAUDE_PROJECT_DIR"))
    out: dict = {}
    t0 = time.perf_counter()
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            out["initialize_s"] = time.perf_counter() - t0
            spawned = _children() - before
            out["memory_at_handshake"] = _memory_mb(spawned)
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                out[f"{arguments.get('mode', name)}_first_answer_s"] = time.perf_counter() - t0
                if result.is_error:
                    out["error"] = str(result.content)[:300]
            out["memory_after_calls"] = _memory_mb(spawned)
    return out


def bench_server(workdir: Path, db: Path, args) -> dict:
    import anyio

    bare = workdir / "bare_server.py"
    bare.write_text(BARE_SERVER, encoding="utf-8")
    env = _server_env(db)
    project = workdir / "project"  # a project folder of its own (no docs/ or notes/: nothing to adopt)
    project.mkdir(exist_ok=True)
    env["CLAUDE_PROJECT_DIR"] = str(project)
    query = {"query": "deploy cache rollback", "limit": 8}
    calls = [("search_notes", {**query, "mode": "keyword"}), ("search_notes", {**query, "mode": "hybrid"})]
    runs: dict[str, list[dict]] = {"vault-index": [], "bare": []}
    with open(workdir / "server-stderr.log", "w") as errlog:
        for _ in range(REPEATS):
            runs["vault-index"].append(anyio.run(_spawn, ["-m", "vault_index", "serve"], env, calls, errlog))
            time.sleep(PAUSE_S)
            runs["bare"].append(anyio.run(_spawn, [str(bare)], env, [("ping", {})], errlog))
            time.sleep(PAUSE_S)

    def median(name: str, key: str) -> float | None:
        values = [r[key] for r in runs[name] if key in r]
        return round(statistics.median(values) * 1000, 1) if values else None

    vault_ms, bare_ms = median("vault-index", "initialize_s"), median("bare", "initialize_s")
    last = runs["vault-index"][-1]
    return {
        "repeats": REPEATS, "db": "the smallest synthetic vault (keyword index; no vectors for the real model)",
        "vault_initialize_ms": vault_ms, "bare_initialize_ms": bare_ms,
        "ratio": round(vault_ms / bare_ms, 2) if vault_ms and bare_ms else None,
        "vault_first_keyword_answer_ms": median("vault-index", "keyword_first_answer_s"),
        "vault_first_hybrid_answer_ms": median("vault-index", "hybrid_first_answer_s"),
        "bare_first_tool_answer_ms": median("bare", "ping_first_answer_s"),
        "vault_initialize_all_ms": [round(r["initialize_s"] * 1000, 1) for r in runs["vault-index"]],
        "bare_initialize_all_ms": [round(r["initialize_s"] * 1000, 1) for r in runs["bare"]],
        "vault_memory_at_handshake": last.get("memory_at_handshake"),
        "vault_memory_after_hybrid": last.get("memory_after_calls"),
        "bare_memory_at_handshake": runs["bare"][-1].get("memory_at_handshake"),
        "call_error": next((r["error"] for r in runs["vault-index"] if "error" in r), None),
        "modules_after_build": _probe_modules(env),
        "slowest_imports": _import_times(env),
    }


def _probe_modules(env: dict) -> dict:
    """Which heavy modules a process holds after importing the server module and building it."""
    done = subprocess.run([sys.executable, "-c", PROBE_MODULES, *HEAVY_MODULES], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or done.returncode}
    data = json.loads(done.stdout.strip().splitlines()[-1])
    return {"import_ms": round(data["import_s"] * 1000, 1), "build_ms": round(data["build_s"] * 1000, 1),
            "loaded": data["loaded"]}


def _import_times(env: dict, top: int = 6) -> list[tuple[str, float]]:
    """Import time (ms, self time summed per top-level package) of the server module: -X importtime."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import vault_index.surfaces.server"],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    totals: dict[str, float] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        own, _, name = line[len("import time:"):].split("|")
        root = name.strip().split(".")[0]
        totals[root] = totals.get(root, 0.0) + int(own) / 1000
    return sorted(((k, round(v, 1)) for k, v in totals.items()), key=lambda kv: -kv[1])[:top]


# --- plain-text report -------------------------------------------------------------------------


def render(r: dict, targets: dict) -> str:
    """The whole result as plain text: one column per vault size, then embedder and server."""
    meta, sizes = r["meta"], [s for s in r["sizes"] if "chunks" in s]
    lines = [f"vault-index bench: python {meta['python']}, {meta['cpus']} CPUs, sqlite {meta['sqlite']}, "
             f"numpy {meta['numpy']}, {meta['queries_per_mode']} queries per mode, {meta['total_s']} s",
             f"vector side: {meta['vector_side']}",
             f"load average at start {meta.get('loadavg_start')}, at end {meta.get('loadavg_end')} "
             f"(other work on the machine skews every number)", ""]
    get = lambda d, *keys: _dig(d, keys)  # noqa: E731
    pair = lambda d: f"{d['p50_ms']}/{d['p95_ms']}" if d and "p50_ms" in d else (d or {}).get("unavailable", "-")  # noqa: E731
    rows = [
        ("chunks (files)", lambda s: f"{s['chunks']:,} ({s['files']:,})"),
        ("index, keyword path  s", lambda s: s["index_s"]),
        ("  files/s", lambda s: s["index_files_per_s"]),
        ("  chunks/s", lambda s: s["index_chunks_per_s"]),
        ("re-sync, nothing changed  s", lambda s: s["resync_unchanged_s"]),
        ("write stand-in vectors  s", lambda s: s["vectors_write_s"]),
        ("index file (WAL)  MB", lambda s: f"{s['db_mb']} ({s['wal_mb']})"),
        ("re-index 1 edited file  ms p50/max*", lambda s: _p50max(get(s, "reindex", "with_vectors"))),
        ("  keyword only  ms p50/max*", lambda s: _p50max(get(s, "reindex", "keyword_only"))),
        ("  next hybrid search  ms p50/max*", lambda s: _p50max(get(s, "reindex", "first_hybrid_search_after_edit"))),
        ("vector matrix cold load  ms", lambda s: s["vector_cold_load_ms"]),
    ]
    rows += [(f"search {m}  ms p50/p95", lambda s, m=m: pair(get(s, "search", m)))
             for m in ("keyword", "vector", "hybrid")]
    rows.append(("search hybrid+rerank  ms p50/p95", lambda s: pair(get(s, "search", "hybrid+rerank"))
                 if get(s, "search", "hybrid+rerank") else "unavailable"))
    rows += [("floor: kNN + 1 FTS5 query  ms p50/p95", lambda s: pair(get(s, "floor"))),
             ("hybrid p95 / floor p95", lambda s: get(s, "hybrid_floor_ratio")),
             ("kNN top-50 numpy  ms p50/p95", lambda s: pair(get(s, "knn", "numpy"))),
             ("kNN top-50 sqlite-vec  ms p50/p95", lambda s: pair(get(s, "knn", "sqlite-vec"))),
             ("  sqlite-vec top-10 = numpy", lambda s: get(s, "knn", "sqlite-vec", "top10_agreement_with_numpy")),
             ("bench process peak RSS  MB", lambda s: s["peak_rss_mb"])]
    width = max(len(name) for name, _ in rows) + 2
    lines.append("size".ljust(width) + "".join(f"{s['size']:>18,}" for s in sizes))
    for name, cell in rows:
        values = [_cell(cell, s) for s in sizes]
        if any(len(v) > 17 for v in values):  # long text (an "unavailable" reason): once
            lines.append(name.ljust(width) + values[0])
        else:
            lines.append(name.ljust(width) + "".join(f"{v:>18}" for v in values))
    lines += [f"size {s['size']:,}: {s['error']}" for s in r["sizes"] if "error" in s]
    lines.append("* re-index: median and max of 5 edits; 'next hybrid search' includes reloading the vector matrix")
    lines.append(f"floor: numpy kNN plus one FTS5 query per question, timed in this run; target hybrid p95 "
                 f"<= {targets.get('hybrid_floor_ratio_at_100k', 2.5)} x floor p95 at 100k chunks")
    rr = r.get("reranker") or {}
    lines.append(f"reranker: {rr.get('model', rr.get('unavailable') or rr.get('error'))}")
    lines += ["", "real embedder sample (indexing overhead = (end-to-end - raw embed) / raw embed):"]
    e = r.get("embedder") or {}
    if "overhead_pct" in e:
        lines += [f"  model {e['model']}, {e['chunks']} chunks, mean {e['mean_tokens']} tokens, best of {e['repeats']}",
                  f"  raw embed_documents  {e['raw_embed_s']} s  ({e['raw_chunks_per_s']} chunks/s)",
                  f"  indexer end to end   {e['end_to_end_s']} s  ({e['end_to_end_chunks_per_s']} chunks/s; "
                  f"embedding inside it {e['embed_time_inside_indexer_s']} s)",
                  f"  overhead             {e['overhead_pct']} %  (target < {targets['index_overhead_pct']:g} %); "
                  f"within one run (end to end vs its own embedding time) {e.get('overhead_same_run_pct')} %"]
    else:
        lines.append(f"  unavailable: {e.get('unavailable') or e.get('error')}")
    lines += ["", f"server start-up (median of {get(r, 'server', 'repeats') or '-'} spawns, MCP SDK stdio client):"]
    v = r.get("server") or {}
    if "vault_initialize_ms" in v:
        mods = get(v, "modules_after_build", "loaded") or {}
        lines += [f"  vault-index serve: spawn -> initialize {v['vault_initialize_ms']} ms; first keyword answer "
                  f"{v['vault_first_keyword_answer_ms']} ms; first hybrid answer (loads the model) "
                  f"{v['vault_first_hybrid_answer_ms']} ms",
                  f"  bare MCPServer:    spawn -> initialize {v['bare_initialize_ms']} ms; first tool answer "
                  f"{v['bare_first_tool_answer_ms']} ms",
                  f"  ratio {v['ratio']}x (target <= {targets['server_start_ratio']:g}x); all runs "
                  f"{v['vault_initialize_all_ms']} vs {v['bare_initialize_all_ms']}",
                  f"  server RSS MB: handshake {v['vault_memory_at_handshake']}, after hybrid "
                  f"{v['vault_memory_after_hybrid']}; bare {v['bare_memory_at_handshake']}",
                  f"  in a fresh process: import server module {get(v, 'modules_after_build', 'import_ms')} ms, "
                  f"App.open + build_server {get(v, 'modules_after_build', 'build_ms')} ms",
                  "  heavy modules after import + build_server: "
                  + (", ".join(f"{m} {'loaded' if on else 'not loaded'}" for m, on in mods.items()) or "-"),
                  f"  import self-time by package (ms): {v['slowest_imports']}"]
        if v.get("call_error"):
            lines.append(f"  tool call error: {v['call_error']}")
    else:
        lines.append(f"  unavailable: {v.get('error')}")
    lines += ["", "targets: " + "; ".join(_verdicts(r, targets))]
    return "\n".join(lines)


def _dig(d, keys):
    for key in keys:
        d = d.get(key) if isinstance(d, dict) else None
    return d


def _cell(fn, s) -> str:
    try:
        value = fn(s)
    except (KeyError, TypeError):
        value = "-"
    return "-" if value is None else str(value)


def _p50max(d) -> str:
    return f"{d['p50_ms']:.0f}/{max(d['p50_ms'], d['p95_ms']):.0f}" if d and "p50_ms" in d else "-"


def _verdicts(r: dict, targets: dict) -> list[str]:
    out = []
    big = next((s for s in r["sizes"] if s.get("size") == 100000 and "search" in s), None)
    p95 = _dig(big, ("search", "hybrid", "p95_ms")) if big else None
    out.append(f"hybrid p95 at 100k {'not measured' if p95 is None else p95} ms "
               f"({'-' if p95 is None else 'met' if p95 < targets['hybrid_p95_ms_at_100k'] else 'missed'})")
    floor = big.get("hybrid_floor_ratio") if big else None
    limit = targets.get("hybrid_floor_ratio_at_100k", 2.5)
    out.append(f"hybrid p95 / floor p95 at 100k {'not measured' if floor is None else floor}x "
               f"({'-' if floor is None else 'met' if floor <= limit else 'missed'})")
    pct = _dig(r, ("embedder", "overhead_pct"))
    out.append(f"indexing overhead {'-' if pct is None else pct} % "
               f"({'-' if pct is None else 'met' if pct < targets['index_overhead_pct'] else 'missed'})")
    ratio = _dig(r, ("server", "ratio"))
    out.append(f"server start ratio {'-' if ratio is None else ratio}x "
               f"({'-' if ratio is None else 'met' if ratio <= targets['server_start_ratio'] else 'missed'})")
    return out
