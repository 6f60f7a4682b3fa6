"""A missing optional reranker is said once on a machine, not on every MCP answer (issue 21).

Each server here is a fresh App (what a new server process has: a client such as the MCP
Inspector CLI starts one per call) over the same model cache, driven by the real SDK client."""

from __future__ import annotations

import anyio
from helpers import BIKE, FakeEmbedder, make_settings, write
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App
from vault_index.surfaces.tools import build_server

from mcp import Client


async def _answers(server) -> list[dict]:
    async with Client(server) as client:
        found = [await client.call_tool("search_notes", {"query": "brake pads groove", "mode": "hybrid+rerank"}),
                 await client.call_tool("recall", {"query": "brake pads"})]
        return [answer.structured_content for answer in found]


def _server_answers(tmp_path, vault) -> list[dict]:
    app = App.open(make_settings(tmp_path), models=Models.fixed(FakeEmbedder(), None))  # no reranker here
    try:
        app.index([str(vault)])
        return anyio.run(_answers, build_server(app, tmp_path / "memory.jsonl", vault_root=vault))
    finally:
        app.close()


def _rerank_notices(answer: dict) -> list[str]:
    return [n for n in answer["notices"] if n.startswith("rerank off")]


def test_the_missing_reranker_is_said_on_the_first_answer_only(tmp_path):
    vault = tmp_path / "notes"
    write(vault, "bike.md", BIKE)
    first_search, first_recall = _server_answers(tmp_path, vault)
    assert _rerank_notices(first_search) == ["rerank off: no rerank model; fusion order"]
    assert not _rerank_notices(first_recall)
    for answer in _server_answers(tmp_path, vault):  # a new server on this machine: said already
        assert not _rerank_notices(answer), answer["notices"]
        assert answer.get("reranked", False) is False  # the answer itself still says no rerank ran
    second_search = _server_answers(tmp_path, vault)[0]
    assert second_search["mode"] == "hybrid" and second_search["hits"]
