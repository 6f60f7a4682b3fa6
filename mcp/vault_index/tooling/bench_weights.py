"""`vault-index bench`, weights part: the shipped MiniLM's fp32 weights against its int8 ones
(issue 23, ADR 0026), in one run.

Two child processes, one per weights, run side by side on the same texts so both see the same
machine (the 2-core machine's load moves by a factor of two between one run and the next); each:
- loads the model (the fp32 graph is built into a fresh model cache first, as on a first run);
- indexes the example vault and synthetic long notes (chunks up to the 256-token window) into a
  fresh index: chunks per second of embedding, and the process's peak resident memory (VmHWM);
- embeds the example vault's golden questions one by one: CPU time per query (process time, all
  threads counted), mean and p95.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

WEIGHTS = {"fp32": "shipped:minilm", "int8": "shipped:minilm-int8"}
LONG_NOTES = 300
PEAK_LIMIT_MB = 400  # must-show 4 of issue 23: indexing peak under this
GOLDEN = Path(__file__).resolve().parents[3] / "eval" / "golden.jsonl"


def child_weights(setting: str, vault: str, long_notes: str, db: str, cache: str) -> dict:
    from vault_index.engine import indexer
    from vault_index.engine.embedding.models import Models
    from vault_index.engine.stores.store import Store
    from vault_index.tooling.bench_footprint import _peak_mb

    t0 = time.perf_counter()
    models = Models(setting, "none", Path(cache), rerank=False)
    embedder = models.embedder()
    if embedder is None:
        return {"unavailable": models.embed_error}
    load_s = time.perf_counter() - t0
    after_load = _peak_mb()
    store = Store(Path(db))
    report = indexer.sync(store, models, [p for p in (vault, long_notes) if Path(p).is_dir()])
    store.close()
    queries = [json.loads(line)["query"] for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()]
    embedder.embed_query("warm up")
    cpu = []
    for query in queries:
        c0 = time.process_time()
        embedder.embed_query(query)
        cpu.append((time.process_time() - c0) * 1000)
    cpu.sort()
    return {"setting": setting, "model": embedder.fingerprint, "load_s": round(load_s, 1),
            "chunks": report.chunks_embedded, "embed_s": round(report.embed_seconds, 2),
            "chunks_per_s": round(report.chunks_embedded / max(report.embed_seconds, 1e-9), 1),
            "peak_after_model_load_mb": after_load, "peak_rss_mb": _peak_mb(), "queries": len(cpu),
            "query_cpu_mean_ms": round(sum(cpu) / len(cpu), 2),
            "query_cpu_p95_ms": round(cpu[min(len(cpu) - 1, int(0.95 * (len(cpu) - 1) + 0.5))], 2)}


def bench_weights(args, workdir: Path) -> dict:
    """fp32 against int8, side by side (bench_footprint._children), with their ratios."""
    from concurrent.futures import ThreadPoolExecutor

    from vault_index.tooling.bench_footprint import CHILD_TIMEOUT_S, EXAMPLE_VAULT, write_long_notes

    long_root = workdir / "weights-long-notes"
    write_long_notes(long_root, LONG_NOTES)

    def run(name: str) -> dict:
        cache = workdir / f"weights-models-{name}"
        argv = [WEIGHTS[name], str(EXAMPLE_VAULT), str(long_root), str(workdir / f"weights-{name}.db"), str(cache)]
        try:
            done = subprocess.run([sys.executable, "-m", "vault_index.tooling.bench_weights", *argv],
                                  capture_output=True, text=True, env=dict(os.environ, HF_HUB_OFFLINE="1"),
                                  timeout=CHILD_TIMEOUT_S)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or not lines:
            return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:300]}
        return json.loads(lines[-1])

    with ThreadPoolExecutor(len(WEIGHTS)) as pool:
        futures = {name: pool.submit(run, name) for name in WEIGHTS}
        out: dict = {name: future.result() for name, future in futures.items()}
    fp32, int8 = out["fp32"], out["int8"]
    if "chunks_per_s" in fp32 and "chunks_per_s" in int8:
        out["throughput_fp32_vs_int8"] = round(fp32["chunks_per_s"] / int8["chunks_per_s"], 2)
        out["query_cpu_fp32_vs_int8"] = round(fp32["query_cpu_mean_ms"] / int8["query_cpu_mean_ms"], 2)
        out["peak_under_limit"] = max(fp32["peak_rss_mb"], int8["peak_rss_mb"]) < PEAK_LIMIT_MB
    return out


def render(w: dict | None) -> str:
    lines = ["weights (shipped MiniLM, fp32 against int8; two children side by side, same texts):"]
    if not w or "error" in w:
        return "\n".join(lines + [f"  {(w or {}).get('error') or 'not run'}"])
    for name in WEIGHTS:
        r = w.get(name, {})
        lines.append(f"  {name:<5} " + (
            f"index {r['chunks']} chunks {r['chunks_per_s']:>6} chunks/s  peak {r['peak_rss_mb']} MB  "
            f"query CPU {r['query_cpu_mean_ms']} ms mean, {r['query_cpu_p95_ms']} ms p95  load {r['load_s']} s"
            if "chunks" in r else str(r)))
    if "throughput_fp32_vs_int8" in w:
        lines.append(f"    fp32/int8: indexing throughput {w['throughput_fp32_vs_int8']}x, query CPU "
                     f"{w['query_cpu_fp32_vs_int8']}x; peak under {PEAK_LIMIT_MB} MB: {w['peak_under_limit']}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(json.dumps(child_weights(*sys.argv[1:6])))
