"""Memory graph at a size well past one person's: load, search, one write, check (docs/adr/0003)."""

from __future__ import annotations

import json
import time
from pathlib import Path

ENTITIES = 2000
OBSERVATIONS_PER_ENTITY = 4


def bench_graph(workdir: Path, entities: int = ENTITIES) -> dict:
    from vault_index.services.graph import graph

    folder = workdir / "graph"
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "source.md"
    source.write_text("# Source\n", encoding="utf-8")
    src, stamp = source.resolve().as_posix(), "2026-01-01T00:00:00Z"
    facts = []
    for i in range(entities):
        facts.append({"type": "entity", "name": f"Entity {i}", "entityType": "project", "source": src,
                      "created": stamp})
        facts += [{"type": "observation", "entity": f"Entity {i}", "source": src, "created": stamp,
                   "text": f"observation {j} about widget{i} and gadget{j} battery"}
                  for j in range(OBSERVATIONS_PER_ENTITY)]
    facts += [{"type": "relation", "from": f"Entity {i}", "to": f"Entity {i - 1}", "relationType": "depends_on",
               "source": src, "created": stamp} for i in range(1, entities)]
    memory = folder / "memory.jsonl"
    memory.write_text("".join(json.dumps(f) + "\n" for f in facts), encoding="utf-8")

    def timed(fn):
        t0 = time.perf_counter()
        out = fn()
        return round((time.perf_counter() - t0) * 1000, 1), out

    load_ms, _ = timed(lambda: graph.load(memory))
    target = entities * 617 // 1000  # a name token only one entity's observations carry
    search_ms, hits = timed(lambda: graph.search(memory, f"widget{target} battery", 10))
    create_ms, _ = timed(lambda: graph.create(memory, entities=[{"name": "New", "entityType": "x", "source": src}]))
    check_ms, problems = timed(lambda: graph.check_graph(memory))
    return {"facts": len(facts), "bytes": memory.stat().st_size, "load_ms": load_ms, "search_ms": search_ms,
            "search_top": hits[0]["name"] if hits else None,
            "search_expected": f"Entity {target}", "create_one_ms": create_ms, "check_ms": check_ms,
            "check_problems": len(problems)}


def render(g: dict | None) -> str:
    if not g or "facts" not in g:
        return f"memory graph: unavailable: {(g or {}).get('error')}"
    return (f"memory graph, {g['facts']:,} facts ({g['bytes'] / 1e6:.1f} MB): load {g['load_ms']} ms, "
            f"search {g['search_ms']} ms (top: {g['search_top']}), add one entity {g['create_one_ms']} ms, "
            f"check {g['check_ms']} ms ({g['check_problems']} problems)")
