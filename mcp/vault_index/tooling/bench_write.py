"""`vault-index bench --write`: one note write through the running server, split by stage.

A fresh vault (`vault-index init`) is indexed with the shipped MiniLM (vectors live), then the real
server is spawned over stdio and driven by the real MCP SDK client: WRITES `note_write` calls
(replace and append in turn, each naming the version it read, so every one is accepted). Each
answer carries the write service's per-stage timings (`data.timings`, milliseconds); the report
gives p50 and p95 per stage plus the round trip the client saw. It reports; it never fails on speed.
Target (issue 7): every stage other than the re-index (embedding) and the git commit under 20 ms p95.
`disk_floor` is the same disk's bare write + fsync + rename + folder fsync, for scale.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

STAGES = ("authorize", "lock", "version", "hooks", "validate", "compose", "replace", "record", "reindex", "followups",
          "commit")  # the write service's stage names, in pipeline order
FAST_STAGE_TARGET_MS = 20.0
SLOW_STAGES = ("reindex", "commit")  # embedding and git: reported, not held to the target
DEFAULT_WRITES = 50
TIMEOUT_S = 600
NOTE = "research/bench-note.md"


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (share in 0..1) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(share * len(ordered))))
    return ordered[rank - 1]


def summarize(samples: list[dict[str, float]]) -> dict[str, dict]:
    """{stage: {p50, p95, n}} over the samples that have the stage, in STAGES order, then the rest."""
    names = [s for s in STAGES if any(s in x for x in samples)]
    names += sorted({k for x in samples for k in x} - set(names))
    table = {}
    for name in names:
        values = [x[name] for x in samples if name in x]
        table[name] = {"p50": round(statistics.median(values), 2), "p95": round(percentile(values, 0.95), 2),
                       "n": len(values)}
    return table


def table_text(table: dict[str, dict]) -> str:
    lines = ["| stage | p50 ms | p95 ms | target |", "| --- | ---: | ---: | --- |"]
    for name, row in table.items():
        if name in SLOW_STAGES or name in ("disk_floor", "round_trip"):
            target = "reported"
        else:
            target = "ok (< 20 ms)" if row["p95"] < FAST_STAGE_TARGET_MS else "OVER 20 ms"
        lines.append(f"| {name} | {row['p50']:.2f} | {row['p95']:.2f} | {target} |")
    return "\n".join(lines)


async def _drive(params, writes: int, errlog) -> tuple[list[dict], list[str]]:
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    samples, problems = [], []
    with anyio.fail_after(TIMEOUT_S):
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            first = await session.call_tool("note_write", {
                "op": "create", "path": NOTE, "body": "# Bench note\n\nThe first paragraph.\n",
                "frontmatter": {"title": "Bench note", "status": "draft", "ttl_days": 90}})
            version = (first.structured_content or {}).get("version")
            for number in range(writes):
                op = "append" if number % 2 else "replace"
                args = {"op": op, "path": NOTE, "base_version": version}
                if op == "append":
                    args["body"] = f"## Entry {number}\n\nThe sensor battery lasted {number} weeks.\n"
                else:
                    args["body"] = f"# Bench note\n\nRevision {number}: capacitive probes corrode less.\n"
                    args["frontmatter"] = {"title": "Bench note", "status": "draft", "ttl_days": 90}
                started = time.perf_counter()
                answer = await session.call_tool("note_write", args)
                elapsed = (time.perf_counter() - started) * 1000
                out = answer.structured_content or {}
                if out.get("status") != "written":
                    problems.append(f"write {number}: {out.get('status')}: {out.get('message')}")
                    continue
                version = out.get("version")
                timings = dict((out.get("data") or {}).get("timings") or {})
                timings["round_trip"] = elapsed
                samples.append(timings)
    return samples, problems


def disk_floor(folder: Path, repeats: int) -> list[float]:
    """What the disk alone charges for an atomic replace: write + fsync, rename, fsync of the folder
    (ms each), with no vault-index code. The `replace` stage cannot go below it."""
    found = []
    for number in range(repeats):
        started = time.perf_counter()
        temp, final = folder / f".floor-{number}.tmp", folder / "floor.md"
        handle = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(handle, b"x" * 2000)
            os.fsync(handle)
        finally:
            os.close(handle)
        os.replace(temp, final)
        folder_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(folder_fd)
        finally:
            os.close(folder_fd)
        found.append((time.perf_counter() - started) * 1000)
    (folder / "floor.md").unlink(missing_ok=True)
    return found


def bench_write(writes: int = DEFAULT_WRITES, workdir: Path | None = None) -> dict:
    """Run the benchmark; {"meta", "table", "problems"}."""
    import anyio
    from mcp.client.stdio import StdioServerParameters

    from vault_index.config import Settings
    from vault_index.services.app import App
    from vault_index.services.curation.scaffold import scaffold

    workdir = workdir or Path(tempfile.mkdtemp(prefix="vault-index-bench-write-"))
    vault = workdir / "vault"
    scaffold(vault)
    env = {**os.environ, "VAULT_INDEX_DB": str(workdir / "index.db"), "VAULT_EMBED_MODEL": "shipped:minilm",
           "HF_HUB_OFFLINE": "1", "VAULT_RERANK": "0", "VAULT_MEMORY_FILE": str(workdir / "memory.jsonl"),
           "CLAUDE_PROJECT_DIR": str(vault)}
    env.pop("VAULT_ROLE", None)  # the local person: the new vault's local_role (editor)
    settings = replace(Settings.from_env(), db_path=workdir / "index.db", embed_model="shipped:minilm", rerank=False,
                       memory_file=workdir / "memory.jsonl")
    app = App.open(settings)
    try:
        report = app.index([str(vault)])
    finally:
        app.close()
    cli = str(Path(sys.executable).parent / "vault-index")
    command, args = (cli, []) if Path(cli).exists() else (sys.executable, ["-m", "vault_index"])
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(vault))
    with open(workdir / "server-stderr.log", "w") as errlog:
        samples, problems = anyio.run(_drive, params, writes, errlog)
    floor_dir = workdir / "floor"
    floor_dir.mkdir()
    for sample, floor in zip(samples, disk_floor(floor_dir, len(samples)), strict=False):
        sample["disk_floor"] = floor
    return {
        "meta": {"writes": writes, "accepted": len(samples), "vector_used": report.vector_used,
                 "embed_model": "shipped:minilm", "cpus": os.cpu_count(), "loadavg": _loadavg(),
                 "vault": str(vault)},
        "table": summarize(samples) if samples else {},
        "problems": problems,
    }


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def run_write_bench(args) -> int:
    """The `vault-index bench --write` command."""
    result = bench_write(max(1, int(getattr(args, "writes", DEFAULT_WRITES) or DEFAULT_WRITES)))
    if getattr(args, "json", False):
        print(json.dumps(result))
        return 0
    meta = result["meta"]
    print(f"# One write through the server (stdio, real MCP client), {meta['accepted']}/{meta['writes']} "
          f"accepted, vectors {'live' if meta['vector_used'] else 'OFF'} ({meta['embed_model']}), "
          f"{meta['cpus']} CPUs, load {meta['loadavg']}\n")
    print(table_text(result["table"]) if result["table"] else "no write was accepted")
    for problem in result["problems"][:10]:
        print(f"problem: {problem}", file=sys.stderr)
    return 0
