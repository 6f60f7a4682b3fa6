"""`vault-index bench`, hooks part: what the Claude Code hooks cost per edit and per prompt.

- PostToolUse re-index hook, end to end: `python scripts/reindex_hook.py` spawned with a real
  Edit payload on stdin after a real edit in a small keyword-indexed vault; the edit is checked
  to be searchable afterwards. Beside it: the same hook on a non-note (it skips before importing
  the package), a bare `python -c pass` (interpreter start, the floor), `indexer.reindex_file`
  in process, and, when the shipped model is in the cache, the hook on a vault with vectors
  (the hook then loads the embedder: the cost a session with live vectors pays per note edit).
- UserPromptSubmit context guard on a large synthetic transcript (tens of MB): spawned end to
  end, and its transcript read in process, beside a full parse of the same file for contrast.
- UserPromptSubmit prompt-time recall (the same script) on a synthetic project of `--prompt-chunks`
  chunks: spawned as Claude Code spawns it, from process start to exit (its output is its last
  act), with the session's server running (`python -m vault_index serve` through the MCP SDK client,
  the shipped MiniLM loaded, random vectors under its fingerprint so the vector side runs at that
  size) and without (the hook's own keyword search). Each run's trace line says who answered.

The scripts live in the repository (scripts/), not in the package: an installed wheel without
the repository reports this part as unavailable.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[3] / "scripts"
HOOK_RUNS, HOOK_RUNS_QUICK = 9, 5
MODEL_RUNS = 3
TRANSCRIPT_MB, TRANSCRIPT_MB_QUICK = 120, 20  # 120: the size of the transcript a user found slow
QUOTING_TAIL_FRACTION = 0.5  # the second transcript: its newer half is tool results that quote usage blocks
VAULT_CHUNKS = 200
MODEL_VAULT_FILES = 8
TRANSCRIPT_FINAL_CONTEXT = 512_345  # over the default threshold: the guard answers with a block
# The prompt hook's corpus: the target is p95 <= 150 ms at 100k chunks with the server
# running (`vault-index bench --parts hooks --prompt-chunks 100000`); the default keeps a plain bench short.
PROMPT_CHUNKS, PROMPT_CHUNKS_QUICK = 10_000, 1_000
PROMPT_RUNS, PROMPT_RUNS_QUICK = 30, 10
SERVER_WARM_WAIT_S = 3.0  # past the server's own warm-up (surfaces/hook_search.WARM_UP_DELAY_S)


def bench_hooks(args, workdir: Path, pct, write_vault) -> dict:
    """pct: seconds -> p50/p95 dict; write_vault: the bench's synthetic vault writer."""
    if not (SCRIPTS / "reindex_hook.py").is_file():
        return {"unavailable": f"hook scripts not found in {SCRIPTS} (installed without the repository)"}
    runs = HOOK_RUNS_QUICK if args.quick else HOOK_RUNS
    return {"runs": runs, "reindex": _part(_reindex_hook, workdir, runs, pct, write_vault),
            "guard": _part(_guard, workdir, runs, pct, TRANSCRIPT_MB_QUICK if args.quick else TRANSCRIPT_MB),
            "prompt": _part(bench_prompt_hook, args, workdir, pct, write_vault)}


def _part(fn, *args) -> dict:
    """One measurement; an error becomes a reported value, never a failed bench."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - the bench reports, it does not fail
        return {"error": f"{type(exc).__name__}: {exc}"}


def _hook_env(db: Path, embed: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(VAULT_INDEX_DB=str(db), VAULT_EMBED_MODEL=embed, VAULT_RERANK="0", HF_HUB_OFFLINE="1")
    env.pop("CLAUDE_PROJECT_DIR", None)
    return env


def _spawn(argv: list[str], stdin: str, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, timeout=120)
    return time.perf_counter() - t0, done


def edit_payload(root: Path, path: Path, old: str, new: str) -> str:
    """A PostToolUse payload shaped like Claude Code's for the Edit tool."""
    return json.dumps({
        "session_id": "bench-session", "transcript_path": str(root / "bench.jsonl"), "cwd": str(root),
        "permission_mode": "default", "hook_event_name": "PostToolUse", "tool_name": "Edit",
        "tool_input": {"file_path": str(path), "old_string": old, "new_string": new, "replace_all": False},
        "tool_response": {"filePath": str(path), "oldString": old, "newString": new, "structuredPatch": [],
                          "userModified": False, "replaceAll": False},
        "tool_use_id": "toolu_bench"})


def _reindex_hook(workdir: Path, runs: int, pct, write_vault) -> dict:
    from vault_index.engine import indexer
    from vault_index.engine.embedding.models import Models
    from vault_index.engine.stores.store import Store

    root, db = workdir / "hook-vault", workdir / "hook-index.db"
    write_vault(root, VAULT_CHUNKS, seed=5)
    store = Store(db)
    indexer.sync(store, Models.fixed(None), [str(root)], embed=False)
    store.close()
    env = _hook_env(db, "none")
    files = sorted(root.rglob("*.md"))
    hook = [sys.executable, str(SCRIPTS / "reindex_hook.py")]
    spawned, skipped, bare, in_process, verified, errors = [], [], [], [], 0, set()
    for n in range(runs):
        path = files[n % len(files)]
        marker = f"hookbenchmark{n}"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("## ", f"## {marker} ", 1), encoding="utf-8")
        seconds, done = _spawn(hook, edit_payload(root, path, "## ", f"## {marker} "), env)
        spawned.append(seconds)
        if done.stderr.strip():
            errors.add(done.stderr.strip()[:200])
        store = Store(db)
        verified += bool(store.db.execute("SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ?", (marker,)).fetchone())
        t0 = time.perf_counter()
        path.write_text(text, encoding="utf-8")
        indexer.reindex_file(store, Models.fixed(None), str(path))  # restore, in process
        in_process.append(time.perf_counter() - t0)
        store.close()
        other = root / "tool.py"
        skipped.append(_spawn(hook, edit_payload(root, other, "a", "b"), env)[0])
        bare.append(_spawn([sys.executable, "-c", "pass"], "", env)[0])
    out = {"note_edit": pct(spawned), "non_note_edit": pct(skipped), "python_c_pass": pct(bare),
           "in_process_reindex_file": pct(in_process), "edits_searchable_after_hook": f"{verified}/{runs}",
           "hook_stderr": sorted(errors)}
    out["note_edit_with_model"] = _part(_with_model, workdir, pct)
    return out


def _with_model(workdir: Path, pct) -> dict:
    """The hook when vectors are live: it loads the shipped MiniLM to embed the changed chunk."""
    from vault_index.config import Settings
    from vault_index.engine import indexer
    from vault_index.engine.embedding.models import Models
    from vault_index.engine.stores.store import Store

    models = Models("shipped:minilm", "none", Settings.from_env().model_cache, rerank=False)
    embedder = models.embedder()
    if embedder is None:
        return {"unavailable": models.embed_error}
    root, db = workdir / "hook-model-vault", workdir / "hook-model-index.db"
    for f in range(MODEL_VAULT_FILES):
        path = root / f"m{f}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Model note {f}\n\n## Part\n\nbattery sensor garden {f} notes\n", encoding="utf-8")
    store = Store(db)
    indexer.sync(store, models, [str(root)])
    store.close()
    env = _hook_env(db, "shipped:minilm")
    times = []
    for n in range(MODEL_RUNS):
        path = root / f"m{n}.md"
        path.write_text(path.read_text(encoding="utf-8") + f"\nedited {n}\n", encoding="utf-8")
        seconds, done = _spawn([sys.executable, str(SCRIPTS / "reindex_hook.py")],
                               edit_payload(root, path, "notes", "notes"), env)
        times.append(seconds)
    store = Store(db)
    missing = len(store.chunks_missing_vectors(embedder.fingerprint))
    store.close()
    return {**pct(times), "chunks_missing_vectors_after": missing}


# --- context guard ----------------------------------------------------------------------------


def write_transcript(path: Path, megabytes: int, final_context: int = TRANSCRIPT_FINAL_CONTEXT) -> int:
    """A long session: prompts, assistant messages split per block, big tool results. Returns lines."""
    target, lines, n = megabytes * 1024 * 1024, 0, 0
    filler = ("def handler(event):\n    return process(event)  # " + "x" * 60 + "\n") * 200  # ~20 KB
    with open(path, "w", encoding="utf-8") as handle:
        while handle.tell() < target:
            n += 1
            context = min(final_context - 1, 20_000 + n * 400)
            usage = {"input_tokens": 4, "cache_creation_input_tokens": 800, "cache_read_input_tokens": context - 804,
                     "output_tokens": 300, "service_tier": "standard"}
            records = [{"type": "user", "isSidechain": False, "sessionId": "bench",
                        "message": {"role": "user", "content": f"step {n}: look at module {n} and fix it"}}]
            for block in ({"type": "text", "text": f"Reading module {n}."},
                          {"type": "tool_use", "id": f"toolu_{n}", "name": "Read",
                           "input": {"file_path": f"/repo/src/module_{n}.py"}}):
                records.append({"type": "assistant", "isSidechain": False, "requestId": f"req_{n}",
                                "message": {"id": f"msg_{n}", "role": "assistant", "model": "claude-sonnet-4-5",
                                            "content": [block], "usage": usage}})
            records.append({"type": "user", "isSidechain": False, "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": filler}]}})
            for record in records:
                handle.write(json.dumps(record) + "\n")
            lines += len(records)
        last = {"input_tokens": 5, "cache_creation_input_tokens": 1_340,
                "cache_read_input_tokens": final_context - 1_345, "output_tokens": 200}
        handle.write(json.dumps({"type": "assistant", "isSidechain": False, "message": {
            "id": "msg_last", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Done."}], "usage": last}}) + "\n")
    return lines + 1


def write_quoting_tail(path: Path, source: Path, megabytes: float) -> None:
    """`source`, then tool results whose text quotes usage blocks (logs, code, this very file).

    The old guard parsed every line that mentioned "usage" and widened its tail window when none
    answered: on such a tail it parsed tens of MB (3.9 s on a 117 MB transcript).
    """
    text = 'print(response["usage"]) -> {"usage": {"input_tokens": 9, "cache_read_input_tokens": 2}} ' * 200
    line = (json.dumps({"type": "user", "isSidechain": False, "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_q", "content": text}]}}) + "\n").encode()
    with open(source, "rb") as src, open(path, "wb") as out:
        while chunk := src.read(1 << 24):
            out.write(chunk)
        out.write(line * max(1, int(megabytes * 1024 * 1024) // len(line)))


def _load_hooklib():
    spec = importlib.util.spec_from_file_location("_hooklib_bench", SCRIPTS / "_hooklib.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _guard(workdir: Path, runs: int, pct, megabytes: int) -> dict:
    transcript, project = workdir / "long-session.jsonl", workdir / "guard-project"
    project.mkdir(exist_ok=True)
    lines = write_transcript(transcript, megabytes)
    out = {**_guard_on(transcript, project, runs, pct), "transcript_lines": lines}
    quoting = workdir / "quoting-tail.jsonl"
    write_transcript(transcript, max(1, int(megabytes * (1 - QUOTING_TAIL_FRACTION))))
    write_quoting_tail(quoting, transcript, megabytes * QUOTING_TAIL_FRACTION)
    out["quoting_tail"] = _guard_on(quoting, project, runs, pct, full_parse=False)
    quoting.unlink()
    return out


def _guard_on(transcript: Path, project: Path, runs: int, pct, full_parse: bool = True) -> dict:
    payload = json.dumps({"session_id": "bench", "transcript_path": str(transcript), "cwd": str(project),
                          "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
                          "prompt": "carry on with the next module"})
    env = dict(os.environ)
    env.pop("CLAUDE_PROJECT_DIR", None)
    spawned, answers = [], set()
    for _ in range(runs):
        seconds, done = _spawn([sys.executable, str(SCRIPTS / "context_guard.py")], payload, env)
        spawned.append(seconds)
        answers.add(done.stdout.strip()[:80])
    hooklib = _load_hooklib()
    tail = []
    for _ in range(runs):
        t0 = time.perf_counter()
        tokens = hooklib.latest_context_tokens(transcript)
        tail.append(time.perf_counter() - t0)
    out = {"transcript_mb": round(transcript.stat().st_size / 1e6, 1), "spawned": pct(spawned),
           "in_process_tail_read": pct(tail), "tokens_found": tokens, "tokens_expected": TRANSCRIPT_FINAL_CONTEXT,
           "answer": sorted(answers)[0] if len(answers) == 1 else f"varied: {sorted(answers)}"}
    if full_parse:
        t0 = time.perf_counter()
        full_tokens = hooklib.context_tokens(hooklib.read_records(transcript, max_bytes=1 << 40))
        out["in_process_full_parse"] = pct([time.perf_counter() - t0])
        out["full_parse_agrees"] = full_tokens == tokens
    return out


# --- prompt-time recall ------------------------------------------------------------------------


def bench_prompt_hook(args, workdir: Path, pct, write_vault) -> dict:
    """The prompt hook from spawn to exit on a project of `--prompt-chunks` chunks, with the
    session's server and without it; the same prompts both ways."""
    import numpy as np

    from vault_index.config import Settings
    from vault_index.engine import indexer
    from vault_index.engine.embedding.models import Models
    from vault_index.engine.stores.store import Store
    from vault_index.tooling.bench_corpus import make_queries

    chunks = int(getattr(args, "prompt_chunks", None) or (PROMPT_CHUNKS_QUICK if args.quick else PROMPT_CHUNKS))
    runs = PROMPT_RUNS_QUICK if args.quick else PROMPT_RUNS
    project, db = workdir / "prompt-project", workdir / "prompt-index.db"
    (project / ".claude").mkdir(parents=True, exist_ok=True)
    # without the server the hook is silent by default; the bench times its keyword search instead
    (project / ".claude" / "handoff.json").write_text('{"prompt_recall_keywords": true}', encoding="utf-8")
    facts = write_vault(project / "notes", chunks, seed=9)
    store = Store(db)
    indexer.sync(store, Models.fixed(None), [str(project / "notes")], embed=False)
    models = Models("shipped:minilm", "none", Settings.from_env().model_cache, rerank=False)
    embedder = models.embedder()
    if embedder is not None:  # random unit vectors under the real model's fingerprint: the vector side runs
        hashes = [h for (h,) in store.db.execute("SELECT DISTINCT hash FROM chunks")]
        dim = len(embedder.embed_query("the vectors' dimension"))
        matrix = np.random.default_rng(9).standard_normal((len(hashes), dim), dtype=np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        store.put_vectors(embedder.fingerprint, ((h, matrix[i].tobytes()) for i, h in enumerate(hashes)))
        with store.transaction() as conn:
            store.set_meta(conn, "embed_model", embedder.fingerprint)
        del matrix
    indexed = store.counts()["chunks"]
    store.close()
    transcript = workdir / "prompt-session.jsonl"
    transcript.write_text(json.dumps({"type": "assistant", "isSidechain": False, "message": {
        "id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 5, "cache_read_input_tokens": 30_000, "output_tokens": 9}}}) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "CLAUDE_"))}
    env.update(VAULT_INDEX_DB=str(db), VAULT_EMBED_MODEL="shipped:minilm" if embedder is not None else "none",
               VAULT_RERANK="0", HF_HUB_OFFLINE="1", CLAUDE_PROJECT_DIR=str(project), VAULT_INDEX_HOOK_TRACE="1",
               VAULT_INDEX_HOME=str(workdir / "prompt-home"), VAULT_MEMORY_FILE=str(workdir / "prompt-memory.jsonl"))
    for key in ("VAULT_MODEL_CACHE", "VAULT_LOCK_DIR"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    prompts = make_queries(facts, runs, seed=13)
    served = prompt_hook_timings(project, env, prompts, transcript, server=True, log=workdir / "prompt-server.log")
    alone = prompt_hook_timings(project, env, prompts, transcript, server=False)
    floor = [_spawn([sys.executable, "-c", "pass"], "", env)[0] for _ in range(max(3, runs // 3))]
    out = {"chunks": indexed, "runs": runs, "vectors": embedder.fingerprint if embedder is not None else
           f"off ({models.embed_error})", "python_c_pass": pct(floor)}
    for name, (times, who, injected, recall) in (("with_server", served), ("without_server", alone)):
        out[name] = {**pct(times), "answered_by": who, "injected": f"{injected}/{len(times)}",
                     "recall_inside_hook": pct(recall)}
    return out


def prompt_hook_timings(project: Path, env: dict, prompts: list[str], transcript: Path, *, server: bool,
                        log: Path | None = None) -> tuple[list[float], dict, int, list[float]]:
    """Spawn the prompt hook once per prompt as Claude Code does, in `project` with `env` (its index,
    VAULT_INDEX_HOOK_TRACE set), with the session's server running (`server`: started over stdio with
    the same env, warmed by one search) or without; (seconds per spawn from start to exit, who answered
    -> count, prompts that injected something, seconds of the recall inside each run). The eval calls
    this on its corpora too."""
    import anyio

    hook = [sys.executable, str(SCRIPTS / "context_guard.py")]
    env = {**env, "VAULT_INDEX_HOOK_TRACE": "1"}
    if not server:
        return _prompt_runs(hook, prompts, project, transcript, env, "alone")
    with open(log or os.devnull, "w") as errlog:
        return anyio.run(_prompt_session, hook, prompts, project, transcript, env, errlog)


async def _prompt_session(hook, prompts, project, transcript, env, errlog):
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "vault_index", "serve"], env=env,
                                   cwd=str(project))
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("search_notes", {"query": prompts[0], "mode": "hybrid", "limit": 3})  # loads the model
        await anyio.sleep(SERVER_WARM_WAIT_S)
        return await anyio.to_thread.run_sync(lambda: _prompt_runs(hook, prompts, project, transcript, env, "server"))


def _prompt_runs(hook, prompts, project, transcript, env, tag: str) -> tuple[list[float], dict, int, list[float]]:
    """(seconds per spawn, who answered -> count, prompts that injected something, seconds of the
    recall inside the hook by its trace: the search and its socket, without start-up and imports)."""
    times, who, injected, recall = [], {}, 0, []
    run = os.urandom(4).hex()  # a session per prompt, never one an earlier call used: nothing counts as injected before
    for n, prompt in enumerate(prompts):
        payload = json.dumps({"session_id": f"bench-{tag}-{run}-{n}", "transcript_path": str(transcript),
                              "cwd": str(project), "permission_mode": "default",
                              "hook_event_name": "UserPromptSubmit", "prompt": prompt})
        seconds, done = _spawn(hook, payload, env)
        times.append(seconds)
        line = next((x for x in done.stderr.splitlines() if x.startswith("prompt recall:")), "no trace")
        answered = line.split(";")[0].removeprefix("prompt recall: ")
        inside = line.rsplit("; ", 1)[-1].removesuffix(" ms")
        if inside.isdigit():
            recall.append(int(inside) / 1000)
        who[answered] = who.get(answered, 0) + 1
        injected += bool(done.stdout.strip())
    return times, who, injected, recall


def _why(d: dict | None) -> str:
    return str((d or {}).get("unavailable") or (d or {}).get("error") or "-")


def render(h: dict | None) -> str:
    lines = ["hooks (spawned with this interpreter, wall time from spawn to exit; ms p50/p95):"]
    if not h or "reindex" not in h:
        return "\n".join(lines + [f"  unavailable: {(h or {}).get('unavailable') or (h or {}).get('error')}"])
    pair = lambda d: f"{d['p50_ms']}/{d['p95_ms']}" if d and "p50_ms" in d else _why(d)  # noqa: E731
    r, g = h["reindex"], h["guard"]
    if "note_edit" in r:
        lines += [f"  PostToolUse reindex_hook.py, note edit (keyword index)  {pair(r['note_edit'])}  "
                  f"(edits searchable after the hook: {r['edits_searchable_after_hook']}; {h['runs']} runs)",
                  f"    same hook, non-note edit (skips before importing)   {pair(r['non_note_edit'])}",
                  f"    python -c pass (interpreter start, the floor)       {pair(r['python_c_pass'])}",
                  f"    reindex_file in process                             {pair(r['in_process_reindex_file'])}",
                  f"    note edit with live vectors (loads shipped MiniLM)  {pair(r['note_edit_with_model'])}"
                  + (f"  (chunks left without vectors: {r['note_edit_with_model']['chunks_missing_vectors_after']})"
                     if "chunks_missing_vectors_after" in r["note_edit_with_model"] else "")]
    else:
        lines.append(f"  reindex hook: {r.get('unavailable') or r.get('error')}")
    if "spawned" in g:
        lines += [f"  UserPromptSubmit context_guard.py, {g['transcript_mb']} MB transcript "
                  f"({g['transcript_lines']:,} lines)  {pair(g['spawned'])}",
                  f"    tail read in process  {pair(g['in_process_tail_read'])}; full parse of the file "
                  f"{pair(g['in_process_full_parse'])} (same answer: {g['full_parse_agrees']})",
                  f"    found {g['tokens_found']:,} tokens (expected {g['tokens_expected']:,}); answer: {g['answer']}"]
        q = g.get("quoting_tail") or {}
        if "spawned" in q:
            lines += [f"    same guard, {q['transcript_mb']} MB transcript whose newer half quotes usage blocks  "
                      f"{pair(q['spawned'])} (tail read in process {pair(q['in_process_tail_read'])}; "
                      f"found {q['tokens_found']:,})"]
    else:
        lines.append(f"  context guard: {g.get('unavailable') or g.get('error')}")
    p = h.get("prompt") or {}
    if "with_server" in p:
        lines.append(f"  UserPromptSubmit prompt-time recall, {p['chunks']:,} chunks (vectors: {p['vectors']}), "
                     f"{p['runs']} prompts; python -c pass {pair(p['python_c_pass'])}")
        for name in ("with_server", "without_server"):
            d = p[name]
            lines.append(f"    {name.replace('_', ' '):15} {pair(d)}  (the recall inside it "
                         f"{pair(d.get('recall_inside_hook'))})  answered by {d['answered_by']}; "
                         f"injected {d['injected']}")
    else:
        lines.append(f"  prompt-time recall: {_why(p)}")
    return "\n".join(lines)
