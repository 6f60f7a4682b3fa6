"""Output that is true and needed: the mode that ran, the reranker's absence said once and never
when turned off, an empty query in words, an empty index that says how to add a folder,
graph_search paths never null, status after an interrupted first index. The MCP tools are called
through the SDK's client; the model is the fake one."""

from __future__ import annotations

from dataclasses import replace

import anyio
import pytest
from helpers import FakeEmbedder, make_settings
from vault_index.engine import indexer
from vault_index.engine.embedding.models import Models
from vault_index.errors import UsageError
from vault_index.services.app import EMPTY_INDEX_NOTICE, App
from vault_index.surfaces.tools import build_server

from mcp import Client


class _StopAfterFirstBatch(Exception):
    pass


def _text(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def test_the_result_names_the_mode_that_ran(vault, open_app):
    app = open_app(FakeEmbedder())  # no reranker
    app.index([str(vault)])
    assert app.search("brake pads", mode="hybrid+rerank").mode == "hybrid"
    assert app.search("brake pads", mode="vector").mode == "vector"
    keyword_only = open_app(None, db_name="plain.db")
    keyword_only.index([str(vault)])
    result = keyword_only.search("brake pads", mode="hybrid+rerank")
    assert (result.mode, result.vector_used, result.reranked) == ("keyword", False, False)


def test_a_missing_reranker_is_said_once_per_process_and_never_when_turned_off(vault, tmp_path):
    settings = make_settings(tmp_path, "rr.db")
    missing = Models("none", str(tmp_path / "no-reranker"), tmp_path / "models", rerank=True)
    missing._embedder, missing._embed_tried = FakeEmbedder(), True  # rerank runs after vector search only
    app = App.open(settings, models=missing)
    try:
        app.index([str(vault)])
        first = app.search("brake pads", mode="hybrid+rerank")
        second = app.search("brake pads", mode="hybrid+rerank")
    finally:
        app.close()
    assert sum("rerank off" in n for n in first.notices) == 1
    assert not any("rerank off" in n for n in second.notices)
    off = App.open(settings, models=Models("none", "Xenova/x", tmp_path / "models", rerank=False))
    try:
        assert not any("rerank" in n for n in off.search("brake pads").notices)
        assert off.status(probe_models=True)["rerank_state"] == "off (VAULT_RERANK=0)"
    finally:
        off.close()


def test_status_says_rerank_on_only_when_it_loads(vault, tmp_path):
    settings = replace(make_settings(tmp_path, "st.db"), rerank=True, rerank_default=True)  # VAULT_RERANK=1
    app = App.open(settings, models=Models("none", str(tmp_path / "no-reranker"), tmp_path / "models", rerank=True))
    try:
        assert app.default_mode == "hybrid+rerank"
        assert app.status()["rerank_state"] == "on (not checked)"  # the server's instructions load nothing
        assert app.status(probe_models=True)["rerank_state"].startswith("on, not loadable here (")
    finally:
        app.close()


def test_rerank_is_off_by_default_and_status_says_once_how_to_turn_it_on(vault, tmp_path):
    """Issue 39: hybrid+rerank was the default though no cross-encoder loads offline, so every
    terminal search warned and status said "rerank on, not loadable here"."""
    settings = replace(make_settings(tmp_path, "default.db"), rerank=True)  # VAULT_RERANK unset
    missing = Models("none", str(tmp_path / "no-reranker"), tmp_path / "models", rerank=True)
    missing._embedder, missing._embed_tried = FakeEmbedder(), True
    app = App.open(settings, models=missing)
    try:
        app.index([str(vault)])
        result = app.search("brake pads")
        assert (result.mode, result.reranked) == ("hybrid", False) and result.hits
        assert not any("rerank" in n for n in result.notices)  # nothing to warn about: nobody asked
        assert missing._reranker is None and not missing._rerank_tried  # and nothing tried to load it
        state = app.status(probe_models=True)["rerank_state"]
        assert state.startswith("off by default") and "VAULT_RERANK=1" in state and "--mode hybrid+rerank" in state
        assert not missing._rerank_tried  # status loads nothing to say so
        asked = app.search("brake pads", mode="hybrid+rerank")  # asking still tries, and says why not
        assert asked.mode == "hybrid" and any(n.startswith("rerank off") for n in asked.notices)
        tools = anyio.run(_tools, build_server(app, tmp_path / "memory.jsonl", vault_root=vault))
        mode = tools["search_notes"]["mode"]
        assert mode["default"] is None and "VAULT_RERANK=1" in mode["description"]
    finally:
        app.close()


async def _tools(server) -> dict:
    async with Client(server) as client:
        return {t.name: t.input_schema["properties"] for t in (await client.list_tools()).tools}


def test_an_empty_index_says_how_to_add_a_folder(open_app):
    result = open_app(None).search("anything at all")
    assert not result.hits and EMPTY_INDEX_NOTICE in result.notices
    assert "vault-index index" in EMPTY_INDEX_NOTICE


def test_status_counts_the_vectors_an_interrupted_first_index_kept(vault, open_app, monkeypatch):
    app = open_app(FakeEmbedder())
    monkeypatch.setattr(indexer, "EMBED_COMMIT_BATCH", 1)
    calls = []

    def stop_after_first_batch(phase, done, total):
        calls.append(phase)
        if phase == "embed" and done:  # done 0: the phase's start, said before the first batch
            raise _StopAfterFirstBatch  # as Ctrl-C lands after a committed batch

    with pytest.raises(_StopAfterFirstBatch):
        app.index([str(vault)], stop_after_first_batch)
    status = app.status()
    assert status["vectors"] == 1 and status["embed_model"] == "fake-bow-64"
    finished = app.index(None)
    assert finished.chunks_embedded == status["chunks"] - 1  # nothing embedded twice, nothing lost
    assert app.status()["vectors"] == status["chunks"]


@pytest.fixture
def server(tmp_path, vault, monkeypatch):
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    app = App.open(make_settings(tmp_path), models=Models.fixed(FakeEmbedder()))
    yield build_server(app, tmp_path / "memory.jsonl", vault_root=tmp_path), app, tmp_path
    app.close()


def test_mcp_empty_queries_get_words_not_a_validation_dump(server):
    mcp_server, _, _ = server

    async def calls():
        async with Client(mcp_server) as client:
            return [await client.call_tool(name, {"query": query})
                    for name in ("search_notes", "recall", "graph_search") for query in ("", "   ")]

    for result in anyio.run(calls):
        text = _text(result)
        assert result.is_error and "the query is empty" in text
        assert "pydantic" not in text and "string_too_short" not in text


def test_mcp_graph_search_gives_a_display_path_never_null(server):
    mcp_server, _, root = server
    note = root / "pump.md"
    note.write_text("# Pump\n\nUlka pump.\n")

    async def calls():
        async with Client(mcp_server) as client:
            created = await client.call_tool("graph_create", {"entities": [
                {"name": "Pump", "entityType": "part", "source": str(note)}]})
            assert not created.is_error, _text(created)
            return await client.call_tool("graph_search", {"query": "pump"})

    entities = anyio.run(calls).structured_content["entities"]
    assert entities and all(e["display"] == "pump.md" for e in entities)


def test_the_cli_rejects_an_empty_query_in_words(tmp_path):
    import subprocess
    import sys

    from helpers import cli_env

    run = subprocess.run([sys.executable, "-m", "vault_index", "search", ""], env=cli_env(tmp_path / "e.db"),
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "the query is empty" in run.stderr and "Traceback" not in run.stderr


def test_usage_error_for_empty_queries_in_the_pipeline(open_app):
    with pytest.raises(UsageError, match="the query is empty"):
        open_app(None).search("  ")


def test_recall_and_search_at_the_terminal_are_silent_with_s(tmp_path, vault):
    import subprocess
    import sys

    from helpers import cli_env

    env = cli_env(tmp_path / "r.db", VAULT_MEMORY_FILE=str(tmp_path / "memory.jsonl"))
    cli = [sys.executable, "-m", "vault_index"]
    subprocess.run(cli + ["index", str(vault), "-s"], env=env, capture_output=True, timeout=60, check=True)
    for command in ("recall", "search"):
        loud = subprocess.run(cli + [command, "brake pads"], env=env, capture_output=True, text=True, timeout=60)
        quiet = subprocess.run(cli + [command, "brake pads", "-s"], env=env, capture_output=True, text=True,
                               timeout=60)
        assert "note: vector search off" in loud.stderr, command  # no model in this environment
        assert quiet.returncode == 0 and "note:" not in quiet.stderr, command
        assert quiet.stdout == loud.stdout


def test_vault_rerank_says_whether_rerank_may_run_and_whether_it_is_the_default(monkeypatch):
    from vault_index.config import Settings

    for raw, allowed, default in ((None, True, False), ("1", True, True), ("0", False, False)):
        if raw is None:
            monkeypatch.delenv("VAULT_RERANK", raising=False)
        else:
            monkeypatch.setenv("VAULT_RERANK", raw)
        settings = Settings.from_env()
        assert (settings.rerank, settings.rerank_default) == (allowed, default), raw
