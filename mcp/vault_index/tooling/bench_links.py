"""`vault-index bench --links`: the link graph at 10k notes and 50k links (docs/bench.md).

A synthetic vault (folders of notes, five links each: by file name, by title, by folder path,
some to notes that do not exist, targets skewed towards a few hubs as real vaults are) is indexed
by the real indexer into a real index (no embedder: links do not need one). Reported: the sync,
one note's edit, backlinks and neighbors (depth 2) p50/p95 over sampled notes (wall time and the
process's CPU time, which other jobs' load on a shared machine inflates far less), and lint over
the whole vault through the write service's reads. Reports only; targets beside the numbers.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

NOTES = 10_000
LINKS_PER_NOTE = 5
FOLDERS = 50
SAMPLES = 300
TARGETS = {"backlinks_p95_ms": 20, "neighbors2_p95_ms": 20, "lint_s": 10}


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def write_vault(root: Path, notes: int = NOTES, seed: int = 5) -> int:
    rng = random.Random(seed)
    weights = [1 / (i + 1) ** 0.8 for i in range(notes)]  # a few hubs, a long tail
    links = 0
    for i in range(notes):
        targets = rng.choices(range(notes), weights=weights, k=LINKS_PER_NOTE)
        body = []
        for n, t in enumerate(targets):
            form = (i + n) % 5
            body.append({0: f"[[note-{t:05d}]]", 1: f"[[Topic {t}]]", 2: f"[[f{t % FOLDERS:02d}/note-{t:05d}|t]]",
                         3: f"[see](../f{t % FOLDERS:02d}/note-{t:05d}.md)", 4: f"[[missing-{t}]]"}[form])
            links += 1
        text = (f"---\ntitle: Topic {i}\ntype: concept\nstatus: canonical\ncreated: 2026-01-01\n"
                f"updated: 2026-01-01\n---\n# Topic {i}\n\nSome words about topic {i}.\n\n" + " ".join(body) + "\n")
        folder = root / f"f{i % FOLDERS:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{i:05d}.md").write_text(text, encoding="utf-8")
    return links


def bench_links(workdir: Path, notes: int = NOTES, pct=None) -> dict:
    from vault_index.config import Settings
    from vault_index.engine.embedding.models import Models
    from vault_index.services.access.access import scope_for
    from vault_index.services.app import App
    from vault_index.services.curation import curation
    from vault_index.services.vault.vault import Vault
    from vault_index.services.writes.write import Caller, WriteService

    root = workdir / "links-vault"
    links = write_vault(root, notes)
    settings = Settings(workdir / "links.db", "none", "none", False, workdir / "models", "auto")
    app = App.open(settings, models=Models.fixed(None))
    try:
        t0 = time.perf_counter()
        app.index([str(root)])
        index_s = time.perf_counter() - t0
        real = root.resolve()
        edges = app.store.db.execute("SELECT COUNT(*), SUM(status = 'resolved') FROM edges").fetchone()
        rng = random.Random(9)
        picked = rng.sample(range(notes), min(SAMPLES, notes))
        sample = [str(real / f"f{i % FOLDERS:02d}/note-{i:05d}.md") for i in picked]
        back, near, back_cpu, near_cpu, sizes = [], [], [], [], []
        for path in sample:  # wall time, and this process's CPU time (far less inflated by other jobs)
            t, cpu = time.perf_counter(), time.process_time()
            app.store.links("backlinks", path)
            back.append(time.perf_counter() - t)
            back_cpu.append(time.process_time() - cpu)
            t, cpu = time.perf_counter(), time.process_time()
            sizes.append(len(app.store.links("neighbors", path, depth=2)))
            near.append(time.perf_counter() - t)
            near_cpu.append(time.process_time() - cpu)
        edited = Path(sample[0])
        edited.write_text(edited.read_text() + "\n[[Topic 1]]\n", encoding="utf-8")
        t = time.perf_counter()
        app.reindex_file(str(edited))
        edit_ms = (time.perf_counter() - t) * 1000
        vault = Vault.open(real)
        caller = Caller.local(vault)
        t, cpu = time.perf_counter(), time.process_time()
        out = curation.review(WriteService(vault), vault, caller, scope_for(vault, vault.grants(caller.role)))
        lint_s, lint_cpu_s = time.perf_counter() - t, time.process_time() - cpu
    finally:
        app.close()
    return {"notes": notes, "links": links, "edges": edges[0], "resolved": edges[1], "index_s": round(index_s, 1),
            "edit_one_note_ms": round(edit_ms, 1), "backlinks": pct(back), "neighbors_depth2": pct(near),
            "backlinks_cpu": pct(back_cpu), "neighbors_depth2_cpu": pct(near_cpu),
            "neighbors_depth2_mean_results": round(sum(sizes) / len(sizes), 1),
            "lint_s": round(lint_s, 2), "lint_cpu_s": round(lint_cpu_s, 2),
            "loadavg": _loadavg(), "lint_findings": len(out["data"]["issues"]), "targets": TARGETS}


def render(result: dict) -> str:
    b, n, t = result["backlinks"], result["neighbors_depth2"], TARGETS
    bc, nc = result["backlinks_cpu"], result["neighbors_depth2_cpu"]
    return "\n".join([
        f"link graph: {result['notes']:,} notes, {result['edges']:,} links ({result['resolved']:,} resolved); "
        f"indexed in {result['index_s']} s",
        f"  backlinks           p50 {b['p50_ms']} ms  p95 {b['p95_ms']} ms  (target p95 < {t['backlinks_p95_ms']} ms;"
        f" CPU p50 {bc['p50_ms']} ms  p95 {bc['p95_ms']} ms)",
        f"  neighbors depth 2   p50 {n['p50_ms']} ms  p95 {n['p95_ms']} ms  (target p95 < {t['neighbors2_p95_ms']} ms;"
        f" CPU p50 {nc['p50_ms']} ms  p95 {nc['p95_ms']} ms;"
        f" {result['neighbors_depth2_mean_results']} notes on average)",
        f"  edit one note       {result['edit_one_note_ms']} ms (re-index, its links re-resolved)",
        f"  lint whole vault    {result['lint_s']} s ({result['lint_cpu_s']} s CPU), "
        f"{result['lint_findings']:,} findings (target < {t['lint_s']} s)",
        f"  load average        {result['loadavg']} (on a shared machine, wall times grow with it)",
    ])


def run_links_bench(args) -> int:
    from vault_index.tooling.bench import _pct

    workdir = Path(tempfile.mkdtemp(prefix="vault-index-bench-links-"))
    try:
        result = bench_links(workdir, NOTES, _pct)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result) if args.json else render(result), file=sys.stdout)
    return 0
