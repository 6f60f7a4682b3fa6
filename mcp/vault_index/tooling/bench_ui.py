"""`vault-index bench --parts ui`: the web page's Search page over real HTTP at 100k chunks, warm.

The page is served as `vault-index ui` serves it (surfaces/web.py on uvicorn, 127.0.0.1), signed in
once, and GET /ui/search?q=... is timed end to end from an HTTP client on the same machine: the
hybrid search with its explain trace, the decay of each hit, the template, the socket. The index
and vectors are bench.py's (synthetic vault, precomputed random unit vectors). Target: p95 <= 200 ms.
"""

from __future__ import annotations

import time
from pathlib import Path

UI_CHUNKS = 100_000
UI_QUERIES = 100
TARGET_P95_MS = 200.0


def bench_ui(args, workdir: Path, pct, embedder, unit_vectors, chunks: int = UI_CHUNKS,
             queries: int = UI_QUERIES) -> dict:
    """{chunks, queries, p50_ms, p95_ms, ...} of GET /ui/search, after a warm-up of 20 pages.
    `embedder`, `unit_vectors`: bench.py's stand-ins (passed in: bench.py imports this module)."""
    import httpx
    from starlette.applications import Starlette

    from vault_index.config import Settings
    from vault_index.engine import indexer
    from vault_index.engine.embedding.models import Models
    from vault_index.engine.stores.store import Store
    from vault_index.services.access.access import scope_for
    from vault_index.services.app import App
    from vault_index.services.vault.vault import Vault
    from vault_index.services.writes.write_types import Caller
    from vault_index.surfaces.web import Background, Principal, build_routes
    from vault_index.tooling.bench_corpus import make_queries, write_vault

    root, db = workdir / "ui-vault", workdir / "ui-index.db"
    facts = write_vault(root, chunks)
    store = Store(db)
    indexer.sync(store, Models.fixed(None), [str(root)], embed=False)
    fake = embedder()
    hashes = [h for (h,) in store.db.execute("SELECT DISTINCT hash FROM chunks")]
    vectors = unit_vectors(len(hashes), chunks)
    store.put_vectors(fake.fingerprint, ((h, vectors[i].tobytes()) for i, h in enumerate(hashes)))
    total = store.counts()["chunks"]
    store.close()
    settings = Settings(db_path=db, embed_model="none", rerank_model="none", rerank=False,
                        model_cache=workdir / "models", vector_backend="auto", memory_file=workdir / "memory.jsonl")
    app = App.open(settings, models=Models.fixed(fake), start=root)
    vault = Vault.open(root)
    person = Principal(Caller("bench <bench@localhost>", None, "bench"), scope_for(vault, vault.grants(None)), vault)

    async def sign_in(token: str):
        return person if token == "bench" else None

    server = Background(lambda port: Starlette(routes=build_routes(app, sign_in))).start()
    try:
        client = httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60)
        client.post("/ui/login", data={"token": "bench"})
        asked = make_queries(facts, queries)
        for query in asked[:20]:  # warm: page cache, vector matrix, templates
            client.get("/ui/search", params={"q": query})
        times, failed = [], 0
        for query in asked:
            t0 = time.perf_counter()
            answer = client.get("/ui/search", params={"q": query})
            times.append(time.perf_counter() - t0)
            failed += answer.status_code != 200
    finally:
        server.stop()
        app.close()
    return {"chunks": total, "queries": len(times), "failed": failed, **pct(times), "target_p95_ms": TARGET_P95_MS}


def render(ui: dict | None) -> str:
    if not ui or "p95_ms" not in ui:
        return f"web page: {ui.get('error') if ui else 'not run'}"
    return (f"web page, GET /ui/search over HTTP at {ui['chunks']:,} chunks, warm ({ui['queries']} queries): "
            f"p50 {ui['p50_ms']} ms, p95 {ui['p95_ms']} ms (target <= {ui['target_p95_ms']:.0f} ms)"
            + (f"; {ui['failed']} failed" if ui["failed"] else ""))
