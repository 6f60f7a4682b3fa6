"""`vault-index bench --http`: load on loopback through the real HTTP server, beside stdio.

A fresh vault of NOTES synthetic notes is indexed; `vault-index serve --http` runs as a process
(rate limit off: the bench is the only client) and CLIENTS SDK clients connect at once, half in
the handshake era and half in the 2026-07-28 era. Together they run SEARCHES `search_notes` calls
and WRITES `note_write` creates (each of its own note, spread through the run). Then:
- errors: any tool error, transport error or write that was not `written`;
- lost writes: notes the server said it wrote that are not on disk with their text;
- latency: search p50/p95 under load (per era), one HTTP client alone, and the stdio server with
  one client on the same index in the same run (the figure docs/bench.md puts beside it).
It reports; it never fails on speed. Search mode defaults to keyword with no embedding model, so
the figure is the transport and the index, not the model (`--search-mode`/VAULT_EMBED_MODEL change it).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vault_index.tooling.bench_write import percentile

DEFAULT_CLIENTS = 32
DEFAULT_SEARCHES = 20_000
DEFAULT_WRITES = 500
DEFAULT_NOTES = 300
SOLO_SEARCHES = 300  # one client alone, HTTP and stdio: the like-for-like latency
TIMEOUT_S = 1800  # the whole load phase; a hang ends the bench with an error, never a stuck terminal
WORDS = ("brake", "groove", "sensor", "battery", "probe", "garden", "soil", "compost", "sourdough", "starter",
         "runbook", "deploy", "rollback", "latency", "index", "vector", "keyword", "lesson", "decision", "review")
MODERN = "2026-07-28"


def _note(i: int, rng: random.Random) -> str:
    body = " ".join(rng.choice(WORDS) for _ in range(60))
    return f"# Note {i}\n\n{body}\n"


def _queries(rng: random.Random, count: int) -> list[str]:
    return [" ".join(rng.sample(WORDS, 2)) for _ in range(count)]


def _cli() -> list[str]:
    cli = Path(sys.executable).parent / "vault-index"
    return [str(cli)] if cli.exists() else [sys.executable, "-m", "vault_index"]


def _prepare(workdir: Path, notes: int, embed_model: str) -> tuple[Path, dict]:
    rng = random.Random(12)
    vault = workdir / "vault"
    (vault / "notes").mkdir(parents=True)
    for i in range(notes):
        (vault / "notes" / f"n{i:04d}.md").write_text(_note(i, rng), encoding="utf-8")
    env = {**os.environ, "VAULT_INDEX_DB": str(workdir / "index.db"), "VAULT_EMBED_MODEL": embed_model,
           "VAULT_RERANK": "0", "HF_HUB_OFFLINE": "1", "VAULT_MEMORY_FILE": str(workdir / "memory.jsonl"),
           "CLAUDE_PROJECT_DIR": str(vault)}
    env.pop("VAULT_ROLE", None)
    subprocess.run([*_cli(), "index", str(vault), "-s"], env=env, cwd=vault, check=True, timeout=TIMEOUT_S,
                   capture_output=True)
    return vault, env


async def _client_run(url, token, mode, queries, writes, search_mode, results):
    stack, client = await open_client(url, token, mode)
    async with stack:
        every = max(1, len(queries) // max(1, len(writes))) if writes else 0
        pending = list(writes)
        for number, query in enumerate(queries):
            started = time.perf_counter()
            try:
                found = await client.call_tool("search_notes", {"query": query, "mode": search_mode, "limit": 5})
                if found.is_error:
                    results["errors"].append(f"search: {found.content[0].text if found.content else '?'}")
                else:
                    results["latency"][mode].append((time.perf_counter() - started) * 1000)
            except Exception as exc:  # noqa: BLE001 - counted, the bench goes on
                results["errors"].append(f"search: {type(exc).__name__}: {exc}")
            if pending and every and number % every == every - 1:
                await _write(client, pending.pop(0), results)
        for path in pending:
            await _write(client, path, results)


async def _write(client, path: str, results) -> None:
    try:
        args = {"op": "create", "path": path, "body": f"# {path}\n\nload {path}\n",
                "frontmatter": {"title": path, "status": "draft"}}
        answer = await client.call_tool("note_write", args)
        out = answer.structured_content or {}
        if out.get("status") == "written":
            results["written"].append(path)
        else:
            results["errors"].append(f"write {path}: {out.get('status')}: {out.get('message')}")
    except Exception as exc:  # noqa: BLE001
        results["errors"].append(f"write {path}: {type(exc).__name__}: {exc}")


async def _load(url, token, clients, queries, writes, search_mode):
    import anyio

    results = {"errors": [], "written": [], "latency": {"legacy": [], MODERN: []}}
    with anyio.fail_after(TIMEOUT_S):
        async with anyio.create_task_group() as group:
            for c in range(clients):
                mode = "legacy" if c % 2 == 0 else MODERN
                group.start_soon(_client_run, url, token, mode, queries[c::clients], writes[c::clients],
                                 search_mode, results)
    return results


async def _solo_http(url, token, queries, search_mode):
    results = {"errors": [], "written": [], "latency": {"legacy": [], MODERN: []}}
    await _client_run(url, token, "legacy", queries, [], search_mode, results)
    return results["latency"]["legacy"], results["errors"]


async def _solo_stdio(env, vault, queries, search_mode):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    cli = _cli()
    params = StdioServerParameters(command=cli[0], args=[*cli[1:], "serve"], env=env, cwd=str(vault))
    latencies, errors = [], []
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for query in queries:
                started = time.perf_counter()
                found = await session.call_tool("search_notes", {"query": query, "mode": search_mode, "limit": 5})
                if found.is_error:
                    errors.append("stdio search error")
                else:
                    latencies.append((time.perf_counter() - started) * 1000)
    return latencies, errors


async def open_client(url: str, token: str, mode: str):
    """An SDK client (mode legacy, auto or 2026-07-28) with a bearer header: (exit stack, client)."""
    import contextlib

    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from mcp import Client

    stack = contextlib.AsyncExitStack()
    http = await stack.enter_async_context(create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}))
    client = await stack.enter_async_context(Client(streamable_http_client(url, http_client=http), mode=mode))
    return stack, client


@contextlib.contextmanager
def running_server(env: dict, vault: Path, *args: str):
    """`vault-index serve --http` on a free loopback port; yields its /mcp URL; stopped at exit."""
    import socket
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen([*_cli(), "serve", "--http", f"127.0.0.1:{port}", *args], env=env, cwd=vault,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the HTTP server exited with {process.returncode}")
            try:
                urllib.request.urlopen(base + "/.well-known/oauth-protected-resource/mcp", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the HTTP server did not answer within 60 s") from None
                time.sleep(0.2)
        yield base + "/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


def _stats(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": round(statistics.median(values), 2), "p95": round(percentile(values, 0.95), 2)}


def bench_http(clients: int = DEFAULT_CLIENTS, searches: int = DEFAULT_SEARCHES, writes: int = DEFAULT_WRITES,
               notes: int = DEFAULT_NOTES, search_mode: str = "keyword", embed_model: str | None = None,
               solo: int = SOLO_SEARCHES, workdir: Path | None = None) -> dict:
    """Run the load; {"meta", "latency", "errors", "lost_writes", "seconds"}."""
    import anyio

    from vault_index.services.access.tokens import TokenStore, credentials_dir

    workdir = workdir or Path(tempfile.mkdtemp(prefix="vault-index-bench-http-"))
    embed_model = embed_model or os.environ.get("VAULT_BENCH_EMBED_MODEL") or "none"
    vault, env = _prepare(workdir, notes, embed_model)
    token, _ = TokenStore(credentials_dir(workdir / "index.db")).new("owner", "bench", vault=vault)
    rng = random.Random(7)
    queries = _queries(rng, searches)
    paths = [f"bench/w{i:05d}.md" for i in range(writes)]

    with running_server(env, vault, "--rate", "0") as url:
        solo_http, solo_http_errors = anyio.run(_solo_http, url, token, queries[:solo], search_mode)
        started = time.perf_counter()
        results = anyio.run(_load, url, token, clients, queries, paths, search_mode)
        seconds = time.perf_counter() - started
    solo_stdio, solo_stdio_errors = anyio.run(_solo_stdio, env, vault, queries[:solo], search_mode)
    lost = [p for p in results["written"] if not (vault / p).is_file() or f"load {p}" not in (vault / p).read_text()]
    everything = results["latency"]["legacy"] + results["latency"][MODERN]
    return {
        "meta": {"clients": clients, "searches": searches, "writes": writes, "notes": notes,
                 "search_mode": search_mode, "embed_model": embed_model, "cpus": os.cpu_count(),
                 "loadavg": _loadavg(), "eras": "half legacy (2025-11-25), half 2026-07-28"},
        "latency": {"http_load": _stats(everything), "http_load_legacy": _stats(results["latency"]["legacy"]),
                    "http_load_modern": _stats(results["latency"][MODERN]), "http_one_client": _stats(solo_http),
                    "stdio_one_client": _stats(solo_stdio)},
        "written": len(results["written"]),
        "errors": results["errors"][:50] + solo_http_errors[:5] + solo_stdio_errors[:5],
        "error_count": len(results["errors"]) + len(solo_http_errors) + len(solo_stdio_errors),
        "lost_writes": lost,
        "seconds": round(seconds, 1),
        "searches_per_s": round(len(everything) / seconds, 1) if seconds else None,
    }


def table_text(result: dict) -> str:
    rows = [(f"HTTP, {result['meta']['clients']} clients at once", result["latency"]["http_load"]),
            ("  of which handshake era (2025-11-25)", result["latency"]["http_load_legacy"]),
            ("  of which 2026-07-28", result["latency"]["http_load_modern"]),
            ("HTTP, one client", result["latency"]["http_one_client"]),
            ("stdio, one client", result["latency"]["stdio_one_client"])]
    lines = ["| search_notes | calls | p50 ms | p95 ms |", "| --- | ---: | ---: | ---: |"]
    for name, row in rows:
        lines.append(f"| {name} | {row['n']} | {row.get('p50', '-')} | {row.get('p95', '-')} |")
    return "\n".join(lines)


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def run_http_bench(args) -> int:
    """The `vault-index bench --http` command."""
    result = bench_http(clients=args.clients, searches=args.searches, writes=args.http_writes,
                        search_mode=args.search_mode)
    if getattr(args, "json", False):
        print(json.dumps(result))
        return 0
    meta = result["meta"]
    print(f"# Load on loopback: {meta['clients']} clients ({meta['eras']}), {meta['searches']} searches "
          f"({meta['search_mode']}, model {meta['embed_model']}), {meta['writes']} writes over {meta['notes']} "
          f"notes; {meta['cpus']} CPUs, load {meta['loadavg']}\n")
    print(table_text(result))
    print(f"\n{result['seconds']} s under load ({result['searches_per_s']} searches/s); writes {result['written']}/"
          f"{meta['writes']}; errors {result['error_count']}; lost writes {len(result['lost_writes'])}")
    for problem in result["errors"][:10]:
        print(f"problem: {problem}", file=sys.stderr)
    return 0
