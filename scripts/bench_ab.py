"""Before and after in one run: the bench's search and indexing numbers of two checkouts, interleaved.

    .venv/bin/python scripts/bench_ab.py [--base main] [--size 1000] [--rounds 2]
    .venv/bin/python scripts/bench_ab.py --cold [--base main] [--rounds 5]

The base ref is exported with `git archive` into a temporary folder and run with this venv (its
`mcp/` first on PYTHONPATH); the working tree is the other side. Each round runs, for base then
for this tree, one child process that does `bench.bench_size` (keyword indexing, searches in every
mode, an edit re-indexed with stand-in vectors) and `bench.bench_embedder` (200 chunks indexed
with the real shipped MiniLM). Medians over the rounds, the ratio this tree / base, and the load
average beside them: only the ratio means anything on a shared machine.

`--cold` times what a person runs in a terminal instead, each command a fresh process on a copy
of example-vault, both sides byte-compiled first: a hybrid and a keyword `search`, and `index`
after one edited note and with nothing changed, with the shipped model and with none (medians of
`--rounds`, wall time from spawn to exit).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHILD = """\
import json, shutil, sys, tempfile, time
from pathlib import Path
from types import SimpleNamespace
from vault_index.tooling import bench
size, queries = int(sys.argv[1]), int(sys.argv[2])
work = Path(tempfile.mkdtemp(prefix="bench-ab-"))
args = SimpleNamespace(silent=True)
try:
    out = bench.bench_size(args, size, queries, work, None)
    # the same searches again on the index bench_size left, timed in this process's CPU time: on a
    # shared machine another process's load moves wall time far more than CPU time
    store = bench.Store(work / f"index-{size}.db")
    searcher = bench.Searcher(store, bench.Models.fixed(bench.RandomEmbedder(), None))
    asked = bench.make_queries(bench.write_vault(work / "again", size), queries)
    cpu = {}
    for mode in ("keyword", "hybrid"):
        for q in asked[:20]:
            searcher.search(q, mode)
        spent = []
        for q in asked * 3:
            t0 = time.process_time()
            searcher.search(q, mode)
            spent.append(time.process_time() - t0)
        spent.sort()
        cpu[mode] = {"p50_ms": spent[len(spent) // 2] * 1000, "p95_ms": spent[int(len(spent) * 0.95)] * 1000}
    store.close()
    embed = bench.bench_embedder(args, work, 1)
finally:
    shutil.rmtree(work, ignore_errors=True)
print(json.dumps({"size": out, "embedder": embed, "cpu": cpu}))
"""
ROWS = (  # (label, path into the child's JSON)
    ("index, keyword path s", ("size", "index_s")),
    ("re-sync, nothing changed s", ("size", "resync_unchanged_s")),
    ("search keyword p50 ms", ("size", "search", "keyword", "p50_ms")),
    ("search keyword p95 ms", ("size", "search", "keyword", "p95_ms")),
    ("search vector p50 ms", ("size", "search", "vector", "p50_ms")),
    ("search hybrid p50 ms", ("size", "search", "hybrid", "p50_ms")),
    ("search hybrid p95 ms", ("size", "search", "hybrid", "p95_ms")),
    ("search keyword p50 ms, CPU time", ("cpu", "keyword", "p50_ms")),
    ("search keyword p95 ms, CPU time", ("cpu", "keyword", "p95_ms")),
    ("search hybrid p50 ms, CPU time", ("cpu", "hybrid", "p50_ms")),
    ("re-index 1 edit, stand-in vectors p50 ms", ("size", "reindex", "with_vectors", "p50_ms")),
    ("index 200 chunks, real MiniLM, end to end s", ("embedder", "end_to_end_s")),
)


def _child(mcp_path: Path, size: int, queries: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(mcp_path), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", CHILD, str(size), str(queries)], env=env,
                          capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"bench child failed ({mcp_path}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _dig(data: dict, keys: tuple) -> float | None:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _cold(sides: dict[str, Path], rounds: int, work: Path) -> dict[tuple[str, str], list[float]]:
    """Each terminal command as a fresh process, base and this tree alternately."""
    import compileall
    import shutil
    import time

    for path in sides.values():
        compileall.compile_dir(str(path), quiet=1)  # both sides start from .pyc, as an install does
    vault = work / "vault"
    shutil.copytree(REPO / "example-vault", vault)

    def run(side: str, model: str, *args: str) -> float:
        env = {**os.environ, "PYTHONPATH": str(sides[side]), "HF_HUB_OFFLINE": "1", "VAULT_EMBED_MODEL": model,
               "VAULT_INDEX_DB": str(work / f"{side}-{model.replace(':', '_')}.db"),
               "VAULT_MEMORY_FILE": str(work / "memory.jsonl")}
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "vault_index", *args], env=env, capture_output=True, check=True)
        return time.perf_counter() - t0

    models = ("shipped:minilm", "none")
    for side in sides:
        for model in models:
            run(side, model, "index", str(vault))
    times: dict[tuple[str, str], list[float]] = {}
    notes = sorted(vault.rglob("*.md"))
    for n in range(rounds):
        for side in sides:
            times.setdefault((side, "search, hybrid (shipped model)"), []).append(
                run(side, "shipped:minilm", "search", "wet soil gadget batteries"))
            times.setdefault((side, "search, keyword"), []).append(
                run(side, "none", "search", "soil moisture", "--mode", "keyword"))
        note = notes[(n * 7 + 3) % len(notes)]
        note.write_text(note.read_text(encoding="utf-8") + f"\nedit {n}: cold frames\n", encoding="utf-8")
        for case in ("one edited note", "nothing changed"):
            for side in sides:
                for model in models:
                    times.setdefault((side, f"index, {case}, {model}"), []).append(run(side, model, "index"))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main")
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cold", action="store_true", help="terminal commands as fresh processes instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ab-base-") as base:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.base], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", base], input=archive.stdout, check=True)
        sides = {"base": Path(base) / "mcp", "this": REPO / "mcp"}
        if args.cold:
            load = os.getloadavg()[0]
            times = _cold(sides, args.rounds, Path(base) / "cold")
            print(f"cold terminal commands, before ({args.base}) and after (this tree), median of {args.rounds}, "
                  f"load average {load:.1f} -> {os.getloadavg()[0]:.1f}")
            for label in dict.fromkeys(label for _, label in times):
                was, now = (statistics.median(times[(side, label)]) * 1000 for side in sides)
                print(f"{label:46}{was:>8.0f} ms{now:>8.0f} ms{now / was:>8.2f}")
            return 0
        runs: dict[str, list[dict]] = {name: [] for name in sides}
        load = [os.getloadavg()[0]]
        for _ in range(args.rounds):
            for name, path in sides.items():
                runs[name].append(_child(path, args.size, args.queries))
        load.append(os.getloadavg()[0])
    print(f"before ({args.base}) and after (this tree), size {args.size}, {args.rounds} rounds interleaved, "
          f"load average {load[0]:.1f} -> {load[1]:.1f}")
    print(f"{'':46}{'base':>10}{'this':>10}{'this/base':>11}")
    for label, keys in ROWS:
        values = {}
        for name in sides:
            got = [v for v in (_dig(run, keys) for run in runs[name]) if isinstance(v, (int, float))]
            values[name] = statistics.median(got) if got else None
        ratio = (f"{values['this'] / values['base']:.2f}" if values["base"] and values["this"] is not None else "-")
        shown = {name: "-" if value is None else f"{value:.4g}" for name, value in values.items()}
        print(f"{label:46}{shown['base']:>10}{shown['this']:>10}{ratio:>11}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
