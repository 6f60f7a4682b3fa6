"""`vault-index bench`, footprint part: memory and speed of indexing with the real model, and of
serving a big index (docs/bench.md, ADR 0010).

Every memory figure comes from a child process of its own (its VmHWM, read at its end), so one
measurement's peak never hides another's. Old and new run in the same bench, one after the other:
- indexing: the embedder's shape before issue 13 (models.LEGACY_SHAPE: runs of 32 texts in the
  caller's order, constant folding on) against today's (models.EmbedShape()), on the example vault
  and on a synthetic vault of long notes;
- length-sorted runs against the same runs unsorted, same texts, in process: chunks/s and the
  largest difference between the two sets of vectors;
- serving: the float32 in-memory copy (the loader before issue 13, reproduced below as
  `Float32Index`) against today's float16 copy, each in a child that also loads the real model,
  on the same 100k-chunk index with stand-in vectors;
- the first `vault-index index` in a fresh home, which builds the fp32 model in a child of its own
  (engine/embedding/fp32_weights.py), against a later one with the model built (issue 39 item 17).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

LONG_NOTES, LONG_NOTES_QUICK = 2000, 300
# legacy: before issue 13; adr0010: ADR 0010's shape (every run dequantized the int8 weights
# again); adr0016: weights prepared once (engine/embedding/onnx_prep.py), runs of 2,048 padded tokens;
# new: today's (runs of 1,024 padded tokens, ADR 0010 third round).
SHAPES = ("legacy", "adr0010", "adr0016", "new")
SORT_SAMPLE_TEXTS = 256
SERVE_QUERIES = 40
# float32: the vector loader before issue 13; float16-adr0010: float16 vectors with ADR 0010's model
# session (every query dequantized all weights, +100 MB of arena); float16: today's.
SERVE_KINDS = ("float32", "float16-adr0010", "float16")
FIRST_INDEX_NOTES = 20  # "a small folder of notes": the model build, not the embedding, is measured
CHILD_TIMEOUT_S = 1800
EXAMPLE_VAULT = Path(__file__).resolve().parents[3] / "example-vault"


def _peak_mb() -> float:
    """This process's own peak resident memory (VmHWM).

    Trigger: getrusage's ru_maxrss survives fork and exec. Why: a child of the bench then reports
    at least the bench's own resident size at the fork (498 MB after the 100k size in one run,
    for every child alike). Outcome: VmHWM, which belongs to the process's own address space.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def write_long_notes(root: Path, notes: int, seed: int = 13) -> None:
    """Chat-log-like notes: a title and one long turn of 40-230 words (up to the model's 256-token
    window), so chunks vary widely in length and many fill the window."""
    from vault_index.tooling.bench_corpus import COMMON, Vocabulary

    rng = random.Random(seed)
    vocab = Vocabulary(rng, 100)
    for n in range(notes):
        turns = [f"# Session {n}\n"]
        for t in range(1):
            words = rng.choices(COMMON, k=rng.randint(40, 230)) + rng.choices(vocab.words[200:], k=5)
            turns.append(f"## Turn {t}\n\n{' '.join(words)}.\n")
        path = root / f"s{n // 500:02d}" / f"session-{n:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(turns), encoding="utf-8")


def _child(argv: list[str]) -> dict:
    """Run `python -m vault_index.tooling.bench_footprint ARGV` and return its JSON line."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    done = subprocess.run([sys.executable, "-m", "vault_index.tooling.bench_footprint", *argv],
                          capture_output=True, text=True, env=env, timeout=CHILD_TIMEOUT_S)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    return json.loads(lines[-1])


def _children(runs: dict[str, list[str]]) -> dict[str, dict]:
    """Run several children at the same time and collect each one's JSON line.

    Trigger: on the shared 2-core machine one 2,000-note child took 26 minutes, and the load
    moved by a factor of two between one child and the next. Why: the throughput ratio of old
    and new is only meaningful under the same load. Outcome: the old and new shape run side by
    side, on the same texts, so both see the same machine; each peak is still its own VmHWM.
    """
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(runs)) as pool:
        futures = {name: pool.submit(_child, argv) for name, argv in runs.items()}
        return {name: future.result() for name, future in futures.items()}


# --- children ----------------------------------------------------------------------------------


def child_index(vault: str, db: str, shape_name: str, limit: int) -> dict:
    """Index `vault` (its first `limit` notes when > 0) with the shipped model in this process."""
    from vault_index.config import Settings
    from vault_index.engine import indexer
    from vault_index.engine.embedding.models import ADR0010_SHAPE, ADR0016_SHAPE, LEGACY_SHAPE, EmbedShape, Models
    from vault_index.engine.stores.store import Store

    source = Path(vault)
    if limit > 0:  # a subset: link the first `limit` notes into a folder of their own
        subset = Path(db).with_suffix(".subset")
        for path in sorted(source.rglob("*.md"))[:limit]:
            target = subset / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
        source = subset
    shape = {"legacy": LEGACY_SHAPE, "adr0010": ADR0010_SHAPE, "adr0016": ADR0016_SHAPE}.get(
        shape_name.removesuffix("-same"), EmbedShape())
    if shape_name.endswith("-same"):  # experiment: the arena extends by what is asked (ADR 0016)
        shape = dataclasses.replace(shape, arena_same_as_requested=True)
    models = Models("shipped:minilm", "none", Settings.from_env().model_cache, rerank=False, embed_shape=shape)
    embedder = models.embedder()
    if embedder is None:
        return {"unavailable": models.embed_error}
    after_load = _peak_mb()
    store = Store(Path(db))
    report = indexer.sync(store, models, [str(source)])
    store.close()
    return {"shape": shape_name, "chunks": report.chunks_embedded, "embed_s": round(report.embed_seconds, 2),
            "chunks_per_s": round(report.chunks_embedded / max(report.embed_seconds, 1e-9), 1),
            "peak_after_model_load_mb": after_load, "peak_rss_mb": _peak_mb()}


def child_sorting(vault: str) -> dict:
    """Same texts, same model, runs sorted by length or in the caller's order (alternated, best of 2)."""
    import numpy as np

    from vault_index.config import Settings
    from vault_index.engine.embedding.models import EmbedShape, Models
    from vault_index.engine.parsing.chunk import chunk_note, embed_text_for
    from vault_index.engine.parsing.parse import parse_note

    cache = Settings.from_env().model_cache
    sorted_embedder = Models("shipped:minilm", "none", cache, rerank=False).embedder()
    if sorted_embedder is None:
        return {"unavailable": "shipped model not installed"}
    unsorted_embedder = Models("shipped:minilm", "none", cache, rerank=False,
                               embed_shape=EmbedShape(sort_by_length=False)).embedder()
    texts: list[str] = []
    for path in sorted(Path(vault).rglob("*.md")):
        note = parse_note(str(path), path.read_text(encoding="utf-8"))
        for chunk in chunk_note(note, sorted_embedder.count_tokens, sorted_embedder.max_tokens):
            texts.append(embed_text_for(note.title, chunk.heading, chunk.text))
        if len(texts) >= SORT_SAMPLE_TEXTS:
            break
    texts = texts[:SORT_SAMPLE_TEXTS]
    sorted_embedder.embed_documents(texts[:8])
    unsorted_embedder.embed_documents(texts[:8])
    best = {"sorted": float("inf"), "unsorted": float("inf")}
    vectors = {}
    for _ in range(2):
        for name, embedder in (("unsorted", unsorted_embedder), ("sorted", sorted_embedder)):
            t0 = time.perf_counter()
            vectors[name] = embedder.embed_documents(texts)
            best[name] = min(best[name], time.perf_counter() - t0)
    lengths = [min(sorted_embedder.count_tokens(t), sorted_embedder.max_tokens) for t in texts]
    return {"texts": len(texts), "mean_tokens": round(sum(lengths) / len(lengths), 1),
            "sorted_chunks_per_s": round(len(texts) / best["sorted"], 1),
            "unsorted_chunks_per_s": round(len(texts) / best["unsorted"], 1),
            "speedup": round(best["unsorted"] / best["sorted"], 2),
            "max_abs_diff": float(np.abs(vectors["sorted"] - vectors["unsorted"]).max())}


def child_shape(vault: str, shape_json: str, limit: int) -> dict:
    """One embedder shape on the first `limit` chunk texts of `vault`, in batches of the indexer's
    size: the peak (VmHWM) and chunks/s. For measuring a shape before it becomes a default (ADR
    0010, third round); `shape_json` holds EmbedShape fields, plus the glibc experiments
    `malloc_arena_max` and `mmap_threshold` (mallopt in this process) and `malloc_trim` (after
    every batch). Not part of the default bench run.
    """
    import ctypes

    from vault_index.config import Settings
    from vault_index.engine.embedding.models import EmbedShape, Models
    from vault_index.engine.indexer import EMBED_COMMIT_BATCH
    from vault_index.engine.parsing.chunk import chunk_note, embed_text_for
    from vault_index.engine.parsing.parse import parse_note

    wanted = json.loads(shape_json)
    libc = ctypes.CDLL("libc.so.6") if {"malloc_arena_max", "mmap_threshold", "malloc_trim"} & set(wanted) else None
    if "malloc_arena_max" in wanted:
        libc.mallopt(-8, int(wanted["malloc_arena_max"]))  # M_ARENA_MAX
    if "mmap_threshold" in wanted:
        libc.mallopt(-3, int(wanted["mmap_threshold"]))  # M_MMAP_THRESHOLD
    fields = {f.name for f in dataclasses.fields(EmbedShape)}
    shape = EmbedShape(**{k: v for k, v in wanted.items() if k in fields})
    embedder = Models("shipped:minilm", "none", Settings.from_env().model_cache, rerank=False,
                      embed_shape=shape).embedder()
    if embedder is None:
        return {"unavailable": "shipped model not installed"}
    after_load = _peak_mb()
    texts: list[str] = []
    for path in sorted(Path(vault).rglob("*.md")):
        note = parse_note(str(path), path.read_text(encoding="utf-8"))
        texts += [embed_text_for(note.title, c.heading, c.text)
                  for c in chunk_note(note, embedder.count_tokens, embedder.max_tokens)]
        if len(texts) >= limit:
            break
    texts, spent = texts[:limit], 0.0
    for start in range(0, len(texts), EMBED_COMMIT_BATCH):
        t0 = time.perf_counter()
        embedder.embed_documents(texts[start : start + EMBED_COMMIT_BATCH])
        spent += time.perf_counter() - t0
        if wanted.get("malloc_trim"):
            libc.malloc_trim(0)
    return {"shape": wanted, "texts": len(texts), "peak_after_model_load_mb": after_load,
            "chunks_per_s": round(len(texts) / max(spent, 1e-9), 2), "peak_rss_mb": _peak_mb()}


class Float32Index:
    """The in-memory index before issue 13, for comparison only: every vector read into a dict of
    blobs, joined, and held as one float32 matrix; exact kNN by one matrix product."""

    name = "numpy-float32"

    def __init__(self, store, model: str):
        import numpy as np

        from vault_index.engine.embedding.vectors import ChunkVectors

        self.store, self.model = store, model
        blobs = store.vectors_by_hash(model)
        keys = [k for k in store.chunk_keys() if k[2] in blobs]
        matrix = np.frombuffer(b"".join(blobs[k[2]] for k in keys), dtype=np.float32).reshape(len(keys), -1)
        self.vectors = ChunkVectors.from_arrays(np.asarray([k[0] for k in keys], dtype=np.int64),
                                                np.asarray([k[1] for k in keys], dtype=np.int64), matrix,
                                                [k[2] for k in keys])

    def note_similarity(self, query_vector, chunk_ids):
        return self.vectors.note_similarity(query_vector, chunk_ids)

    def search(self, query_vector, limit: int, allowed=None):
        import numpy as np

        scores = self.vectors.matrix @ np.asarray(query_vector, dtype=np.float32)
        top = np.argpartition(-scores, limit - 1)[:limit]
        top = top[np.argsort(-scores[top])]
        return [(int(self.vectors.ids[i]), float(scores[i])) for i in top]


class _RealQueries:
    """The real model embeds the queries; the fingerprint is the stand-in vectors' one."""

    max_tokens = 512

    def __init__(self, real, fingerprint: str):
        self.real, self.fingerprint = real, fingerprint

    def count_tokens(self, text: str) -> int:
        return self.real.count_tokens(text)

    def embed_documents(self, texts):
        return self.real.embed_documents(texts)

    def embed_query(self, text: str):
        return self.real.embed_query(text)


def child_serve(db: str, fingerprint: str, kind: str, queries_json: str) -> dict:
    """What a server holds at this size: the real model, the store and the vector index, searched."""
    from vault_index.config import Settings
    from vault_index.engine.embedding.models import ADR0010_SHAPE, EmbedShape, Models
    from vault_index.engine.stores.store import Store
    from vault_index.services.search.search import Searcher

    shape = ADR0010_SHAPE if kind.endswith("-adr0010") else EmbedShape()
    real = Models("shipped:minilm", "none", Settings.from_env().model_cache, rerank=False,
                  embed_shape=shape).embedder()
    if real is None:
        return {"unavailable": "shipped model not installed"}
    real.embed_query("warm up")
    store = Store(Path(db))
    searcher = Searcher(store, Models.fixed(_RealQueries(real, fingerprint)))
    t0 = time.perf_counter()
    if kind == "float32":
        searcher._vector_index = Float32Index(store, fingerprint)
    searcher.search("warm up the index", "hybrid")
    load_s = time.perf_counter() - t0
    queries = json.loads(queries_json)
    times = []
    for query in queries:
        t0 = time.perf_counter()
        searcher.search(query, "hybrid")
        times.append(time.perf_counter() - t0)
    times.sort()
    at = lambda q: round(times[min(len(times) - 1, int(round(q * (len(times) - 1))))] * 1000, 1)  # noqa: E731
    store.close()
    return {"kind": kind, "first_search_s": round(load_s, 2), "hybrid_p50_ms": at(0.5), "hybrid_p95_ms": at(0.95),
            "queries": len(times), "peak_rss_mb": _peak_mb()}


def child_first_index(notes: str, workdir: str, run: str) -> dict:
    """`vault-index index NOTES` as a person runs it in a fresh home: `first` with no model cache
    (it builds the fp32 model first), `later` into a new index with the model built (call `first`
    before it). The peak is the largest of the CLI and the children it waited for (getrusage of
    this small process's children: the builder is the CLI's child), as `/usr/bin/time -v` reports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "CLAUDE_"))}
    env.update(HOME=str(Path(workdir) / "home"), VAULT_MODEL_CACHE=str(Path(workdir) / "models"), VAULT_RERANK="0",
               VAULT_MEMORY_FILE=str(Path(workdir) / "memory.jsonl"), HF_HUB_OFFLINE="1",
               VAULT_INDEX_DB=str(Path(workdir) / f"{run}.db"))
    Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "vault_index", "index", notes, "--json", "-s"], env=env,
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    return {"peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
            "seconds": round(seconds, 2), "chunks": json.loads(done.stdout)["chunks_embedded"]}


# --- parts of `vault-index bench` ----------------------------------------------------------------


def bench_indexing(args, workdir: Path) -> dict:
    """Old and new embedder shape on the example vault and on synthetic long notes."""
    quick = getattr(args, "quick", False)
    long_root = workdir / "long-notes"
    notes = LONG_NOTES_QUICK if quick else LONG_NOTES
    write_long_notes(long_root, notes)
    out: dict = {"long_notes": notes}
    runs = []
    if EXAMPLE_VAULT.is_dir():
        runs += [("example_vault", str(EXAMPLE_VAULT), 0, ("legacy", "adr0016", "new"))]
    # The legacy shape peaks over 1 GB on long notes (measured in ADR 0010); the whole set
    # compares the shape before this round (adr0016) with today's.
    runs += [("long_notes_all", str(long_root), 0, ("adr0016", "new"))]
    for name, vault, limit, shapes in runs:  # same texts, old then new, at the same time
        out[name] = _children({shape: ["index", vault, str(workdir / f"fp-{name}-{shape}.db"), shape, str(limit)]
                               for shape in shapes})
        for old in ("legacy", "adr0010", "adr0016"):
            before, new = out[name].get(old, {}), out[name]["new"]
            if "chunks_per_s" in before and "chunks_per_s" in new:
                out[name][f"throughput_vs_{old}"] = round(new["chunks_per_s"] / before["chunks_per_s"], 2)
    out["sorting"] = _child(["sorting", str(long_root)])
    small = workdir / "first-index-notes"
    write_long_notes(small, FIRST_INDEX_NOTES)
    out["first_index"] = {run: _child(["first-index", str(small), str(workdir / "first-index"), run])
                          for run in ("first", "later")}  # in this order: the first builds the model
    out["first_index"]["notes"] = FIRST_INDEX_NOTES
    return out


def bench_serving(store_path: Path, fingerprint: str, queries: list[str]) -> dict:
    """float32 (before) against float16 (now), each in a child holding the real model too."""
    payload = json.dumps(queries[:SERVE_QUERIES])
    return {kind: _child(["serve", str(store_path), fingerprint, kind, payload]) for kind in SERVE_KINDS}


def render(fp: dict | None, serving: dict | None) -> str:
    lines = ["footprint (each figure from a child process of its own; peak = VmHWM):"]
    if not fp or "error" in fp or "unavailable" in fp:
        lines.append(f"  indexing: {(fp or {}).get('error') or (fp or {}).get('unavailable') or 'not run'}")
    else:
        for name in ("example_vault", "long_notes_subset", "long_notes_all"):
            if name not in fp:
                continue
            part = fp[name]
            label = f"all {fp['long_notes']} long notes" if name == "long_notes_all" else name
            for shape in SHAPES:
                if shape not in part:
                    continue
                r = part[shape]
                lines.append(f"  index {label:<20} {shape:<7} " + (
                    f"{r['chunks']:>5} chunks  {r['chunks_per_s']:>6} chunks/s  peak {r['peak_rss_mb']} MB"
                    if "chunks" in r else str(r)))
            ratios = [f"new/{old} {part[f'throughput_vs_{old}']}x" for old in ("legacy", "adr0010", "adr0016")
                      if f"throughput_vs_{old}" in part]
            lines.append(f"    throughput: {', '.join(ratios) or '-'}")
        s = fp.get("sorting", {})
        if "speedup" in s:
            lines.append(f"  length-sorted runs: {s['sorted_chunks_per_s']} chunks/s vs unsorted "
                         f"{s['unsorted_chunks_per_s']} ({s['speedup']}x, {s['texts']} texts of {s['mean_tokens']} "
                         f"tokens on average); largest vector difference {s['max_abs_diff']:.1e}")
        first = fp.get("first_index", {})
        if "peak_rss_mb" in first.get("first", {}) and "peak_rss_mb" in first.get("later", {}):
            lines.append(f"  first index in a fresh home ({first['notes']} notes, builds the fp32 model): peak "
                         f"{first['first']['peak_rss_mb']} MB in {first['first']['seconds']} s; later, the model "
                         f"built: peak {first['later']['peak_rss_mb']} MB in {first['later']['seconds']} s")
        elif first:
            lines.append(f"  first index in a fresh home: {first}")
    if serving:
        for kind in SERVE_KINDS:
            r = serving.get(kind, {})
            lines.append(f"  serve {serving.get('chunks', '?'):,} chunks, {kind:<15} " + (
                f"peak {r['peak_rss_mb']} MB  hybrid p50/p95 {r['hybrid_p50_ms']}/{r['hybrid_p95_ms']} ms  "
                f"first search {r['first_search_s']} s" if "peak_rss_mb" in r else str(r)))
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    kind, rest = argv[0], argv[1:]
    if kind == "index":
        result = child_index(rest[0], rest[1], rest[2], int(rest[3]))
    elif kind == "sorting":
        result = child_sorting(rest[0])
    elif kind == "shape":
        result = child_shape(rest[0], rest[1], int(rest[2]))
    elif kind == "serve":
        result = child_serve(rest[0], rest[1], rest[2], rest[3])
    elif kind == "first-index":
        result = child_first_index(rest[0], rest[1], rest[2])
    else:
        raise SystemExit(f"unknown part {kind}")
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
