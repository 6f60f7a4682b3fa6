"""`vault-index bench`, issue 26's rows: where keyword indexing spends its time against the raw
FTS5 insert floor, and a re-index that finds nothing to embed, with vectors on and off.

- keyword floor: the chunks the index holds, inserted into a fresh FTS5 table (same tokenizer,
  same pragmas, one transaction) in the same run; "where it goes" times the indexer's stages
  (read and hash, parse, chunk) on the same files in process; the rest is the store's writes;
- re-index: `vault-index index` spawned as a person runs it, on two copies of the same index:
  one whose vectors are those of the shipped MiniLM (stand-in vectors under its real
  fingerprint, computed without loading it), one with the model off. Nothing changed, then one
  edited note (the model must load to embed its changed chunk), alternately; peak RSS (VmHWM)
  and whether ONNX Runtime was imported, from the child itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

REINDEX_REPEATS = 5
# The CLI as its console script runs it, then what the process imported (one JSON line on stderr).
# Its peak RSS is its own VmHWM: wait4's ru_maxrss would count the parent's pages it shared
# before exec (a vforked child starts with the bench's 150 MB).
CLI_PROBE = """\
import json, sys
from vault_index.surfaces.cli import main
code = main(sys.argv[1:])
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print("PROBE " + json.dumps({"peak_kb": hwm, **{m: m in sys.modules for m in ("onnxruntime", "fastembed")}}),
      file=sys.stderr)
raise SystemExit(code)
"""


def keyword_floor(store, root: Path, index_s: float, workdir: Path) -> dict:
    """Indexing time per chunk against the raw FTS5 insert of the same chunks, and its stages."""
    from vault_index.engine.parsing.chunk import approximate_tokens, chunk_note
    from vault_index.engine.parsing.parse import alias_title, parse_note

    rows = list(store.db.execute("SELECT title, heading, body FROM chunks_fts ORDER BY rowid"))
    floors = [_fts_insert(rows, workdir / "fts-floor.db") for _ in range(2)]
    floor = min(floors)
    files = sorted(root.rglob("*.md"))
    t0 = time.perf_counter()
    texts = []
    for path in files:
        raw = path.read_bytes()
        hashlib.sha256(raw).hexdigest()
        texts.append((str(path), raw.decode("utf-8-sig")))
    read_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    notes = [parse_note(key, text) for key, text in texts]
    parse_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for note in notes:
        chunk_note(replace(note, title=alias_title(note)), approximate_tokens, 512)
    chunk_s = time.perf_counter() - t0
    chunks = len(rows)
    return {"chunks": chunks, "index_us_per_chunk": round(index_s / chunks * 1e6, 1),
            "floor_us_per_chunk": round(floor / chunks * 1e6, 1), "ratio": round(index_s / floor, 2),
            "where_s": {"read_and_hash": round(read_s, 3), "parse": round(parse_s, 3), "chunk": round(chunk_s, 3),
                        "store_writes_and_rest": round(max(0.0, index_s - read_s - parse_s - chunk_s), 3),
                        "fts_floor": round(floor, 3)}}


def _fts_insert(rows: list[tuple], db_path: Path) -> float:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    db = sqlite3.connect(db_path)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("CREATE VIRTUAL TABLE f USING fts5(title, heading, body, "
               "tokenize='porter unicode61 remove_diacritics 2')")
    db.commit()
    t0 = time.perf_counter()
    with db:
        db.executemany("INSERT INTO f(title, heading, body) VALUES (?,?,?)", rows)
    elapsed = time.perf_counter() - t0
    db.close()
    return elapsed


def bench_reindex(workdir: Path, db: Path, root: Path) -> dict:
    """`vault-index index` with nothing changed and after one edited note, vectors on and off."""
    from vault_index.config import Settings
    from vault_index.engine.embedding.models import Models
    from vault_index.engine.stores.store import Store

    cache = Settings.from_env().model_cache
    fingerprint = Models("shipped:minilm", "none", cache, rerank=False).embed_fingerprint()
    if fingerprint is None:
        return {"unavailable": "the shipped MiniLM is not installed"}
    vec_db, kw_db = workdir / "reindex-vec.db", workdir / "reindex-kw.db"
    for target in (vec_db, kw_db):
        _copy_index(db, target)
    store = Store(vec_db)
    hashes = [h for (h,) in store.db.execute("SELECT DISTINCT hash FROM chunks")]
    blob = bytes(384 * 4)
    store.put_vectors(fingerprint, ((h, blob) for h in hashes))  # stand-ins: only their presence matters
    store.close()
    base = {**os.environ, "HF_HUB_OFFLINE": "1", "VAULT_RERANK": "0", "VAULT_MODEL_CACHE": str(cache)}
    envs = {"vectors": {**base, "VAULT_INDEX_DB": str(vec_db), "VAULT_EMBED_MODEL": "shipped:minilm"},
            "keyword": {**base, "VAULT_INDEX_DB": str(kw_db), "VAULT_EMBED_MODEL": "none"}}
    for env in envs.values():  # bring both up to date with the vault (stand-in vectors need no model)
        _run_cli(env)
    runs: dict[str, list[dict]] = {f"{kind}_{case}": [] for kind in envs for case in ("unchanged", "edited")}
    notes = sorted(root.rglob("*.md"))
    for n in range(REINDEX_REPEATS):
        for kind, env in envs.items():
            runs[f"{kind}_unchanged"].append(_run_cli(env))
        note = notes[(n * 7 + 3) % len(notes)]
        note.write_text(note.read_text(encoding="utf-8").replace("## ", f"## speed{n} ", 1), encoding="utf-8")
        for kind, env in envs.items():
            runs[f"{kind}_edited"].append(_run_cli(env))
    out: dict = {"repeats": REINDEX_REPEATS, "chunks": len(hashes)}
    for key, samples in runs.items():
        out[key] = {"median_ms": round(statistics.median(s["s"] for s in samples) * 1000, 1),
                    "peak_rss_mb": round(max(s["peak_rss_mb"] for s in samples), 1),
                    "model_loaded": any(s["loaded"].get("onnxruntime") for s in samples),
                    "embedded": sum(s["embedded"] for s in samples)}
    for case in ("unchanged", "edited"):
        kw = out[f"keyword_{case}"]["median_ms"]
        out[f"ratio_{case}"] = round(out[f"vectors_{case}"]["median_ms"] / kw, 2) if kw else None
    return out


def _copy_index(db: Path, target: Path) -> None:
    source = sqlite3.connect(db)
    dest = sqlite3.connect(target)
    source.backup(dest)
    dest.close()
    source.close()


def _run_cli(env: dict) -> dict:
    """One `vault-index index --json` as a child: wall time, its own peak RSS (wait4), what it imported."""
    import tempfile

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", CLI_PROBE, "index", "--json", "-s"], env=env,
                                 stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        report, errors = out.read(), err.read()
    probe = next((json.loads(line[6:]) for line in errors.splitlines() if line.startswith("PROBE ")), {})
    try:
        embedded = json.loads(report)["chunks_embedded"]
    except (ValueError, KeyError):
        embedded = None
    peak_kb = probe.get("peak_kb") or usage.ru_maxrss  # /proc missing: the upper bound wait4 gives
    return {"s": elapsed, "peak_rss_mb": peak_kb / 1024, "loaded": probe, "embedded": embedded or 0}


def render(speed: dict | None) -> str:
    if not speed:
        return "issue 26 rows: not measured"
    lines = ["keyword indexing against the raw FTS5 insert floor (same chunks, same run):"]
    for row in speed.get("floor") or []:
        if "ratio" not in row:
            lines.append(f"  {row}")
            continue
        w = row["where_s"]
        lines.append(f"  {row['chunks']:,} chunks: {row['index_us_per_chunk']} us/chunk against a floor of "
                     f"{row['floor_us_per_chunk']} us/chunk, {row['ratio']}x (target <= 1.5x); where it goes (s): "
                     f"read+hash {w['read_and_hash']}, parse {w['parse']}, chunk {w['chunk']}, "
                     f"store writes and the rest {w['store_writes_and_rest']}; floor {w['fts_floor']}")
    r = speed.get("reindex") or {}
    lines.append(f"`vault-index index` with vectors on and off, median of {r.get('repeats', '-')} "
                 f"({r.get('chunks', '-')} chunks):")
    if "ratio_unchanged" not in r:
        lines.append(f"  unavailable: {r.get('unavailable') or r.get('error')}")
        return "\n".join(lines)
    for case, label in (("unchanged", "nothing changed"), ("edited", "one edited note")):
        v, k = r[f"vectors_{case}"], r[f"keyword_{case}"]
        lines.append(f"  {label}: vectors {v['median_ms']} ms, peak {v['peak_rss_mb']} MB (model loaded: "
                     f"{'yes' if v['model_loaded'] else 'no'}, {v['embedded']} chunks embedded in all runs); keyword "
                     f"only {k['median_ms']} ms, peak {k['peak_rss_mb']} MB; {r[f'ratio_{case}']}x (target <= 1.2x "
                     "where nothing needs embedding)")
    return "\n".join(lines)


def clean(workdir: Path) -> None:
    for name in ("fts-floor.db", "reindex-vec.db", "reindex-kw.db"):
        for suffix in ("", "-wal", "-shm", ".embed.lock"):
            Path(f"{workdir / name}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(workdir / "reindex", ignore_errors=True)
