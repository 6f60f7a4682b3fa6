"""The real shipped all-MiniLM-L6-v2 (on ONNX Runtime directly, equal to fastembed's vectors),
and a tiny real ONNX cross-encoder.

Slower than the rest (a second or two): `pytest -m "not real_model"` skips them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import BIKE, GARDEN, SOURDOUGH, make_settings, write
from vault_index.engine.embedding.models import (
    SHIPPED_MINILM_MAX_TOKENS,
    EmbedShape,
    FastEmbedEmbedder,
    FastEmbedReranker,
    Models,
    ModelSpec,
    parse_model_setting,
    prepare_shipped_minilm,
)
from vault_index.engine.embedding.onnx_session import ShippedEmbedder
from vault_index.engine.parsing.chunk import chunk_note
from vault_index.engine.parsing.parse import parse_note
from vault_index.services.app import App

pytestmark = pytest.mark.real_model

RERANK_NAME = "Xenova/ms-marco-MiniLM-L-6-v2"
RERANK_MODEL_FILE = "onnx/model.onnx"  # fastembed's model_file for RERANK_NAME


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def shipped(model_cache):
    models = Models("shipped:minilm", "none", model_cache, rerank=False)
    embedder = models.embedder()
    if embedder is None:
        pytest.fail(f"the shipped model did not load: {models.embed_error}")
    return models


def _cos(a, b) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_index_with_the_shipped_model_stores_384_dim_normalised_vectors(tmp_path, shipped):
    vault = tmp_path / "vault"
    write(vault, "bike.md", BIKE)
    write(vault, "garden.md", GARDEN)
    app = App.open(make_settings(tmp_path), models=shipped)
    try:
        report = app.index([str(vault)])
        fingerprint = shipped.embedder().fingerprint
        assert report.vector_used and report.chunks_embedded == app.store.counts()["chunks"] > 0
        rows = app.store.vector_rows(fingerprint)
        matrix = np.frombuffer(b"".join(blob for _, _, blob in rows), dtype=np.float32).reshape(len(rows), -1)
        assert matrix.shape == (app.store.counts()["chunks"], 384)
        assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-3)
        query = shipped.embedder().embed_query("bicycle brakes")
        assert query.shape == (384,) and query.dtype == np.float32
        assert app.status()["embed_model"] == fingerprint and app.status()["vectors_live"]
    finally:
        app.close()


def test_long_chunks_use_the_full_256_token_window(shipped):
    embedder = shipped.embedder()
    assert embedder.max_tokens == SHIPPED_MINILM_MAX_TOKENS == 256
    head = "The sourdough starter is fed with rye flour every evening before baking. " * 9
    tail_a = "Afterwards the loaf rests on a wire rack until it has cooled completely. " * 6
    tail_b = "The server cluster failed over to the standby database during the outage. " * 6
    # the shared head alone fills more than 128 tokens; each whole text still fits in 256
    assert embedder.count_tokens(head) > 130
    assert embedder.count_tokens(head + tail_a) <= 256 and embedder.count_tokens(head + tail_b) <= 256
    a, b = embedder.embed_documents([head + tail_a, head + tail_b])
    # cut at 128 tokens, both texts would read only the shared head and embed identically
    assert _cos(a, b) < 0.98
    # and the chunker, with the real tokenizer, fills chunks past 128 tokens but never past 256
    text = "# Log\n\n" + "\n\n".join(f"Entry {i}: " + head[: 150 + 7 * i] for i in range(12)) + "\n"
    chunks = chunk_note(parse_note("/v/log.md", text), embedder.count_tokens, embedder.max_tokens)
    sizes = [embedder.count_tokens(c.embed_text) for c in chunks]
    assert max(sizes) <= 256 and max(sizes) > 128 and len(chunks) > 1


@pytest.mark.parametrize("setting", ["shipped:minilm", "shipped:minilm-int8"])
def test_the_shipped_model_without_fastembed_gives_fastembeds_vectors_bit_for_bit(model_cache, setting):
    spec = parse_model_setting(setting, model_cache)
    direct = Models(setting, "none", model_cache, rerank=False).embedder()
    assert isinstance(direct, ShippedEmbedder)
    shape = EmbedShape(prepare_weights=spec.weights != ":fp32")
    through_fastembed = FastEmbedEmbedder(spec, model_cache, shape)
    texts = ["short", "x", "", "naïve café, 日本語, a literal [SEP] and [MASK]", "bike chain wax " * 12,
             "garden sensors, batteries and soil moisture " * 40]  # the last is cut at the 256-token window
    assert np.array_equal(direct.embed_documents(texts), through_fastembed.embed_documents(texts))
    assert np.array_equal(direct.embed_query("soil moisture"), through_fastembed.embed_query("soil moisture"))
    assert [direct.count_tokens(t) for t in texts] == [through_fastembed.count_tokens(t) for t in texts]
    assert (direct.max_tokens, direct.fingerprint) == (through_fastembed.max_tokens, through_fastembed.fingerprint)
    assert direct.embed_documents([]).shape == (0, 384)


def test_loading_and_running_the_shipped_model_never_imports_fastembed(model_cache, shipped):
    code = ("import sys; from pathlib import Path; from vault_index.engine.embedding.models import Models; "
            f"e = Models('shipped:minilm', 'none', Path({str(model_cache)!r}), rerank=False).embedder(); "
            "assert e is not None; e.embed_documents(['soil']); e.embed_query('soil'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fastembed', 'PIL', 'huggingface_hub')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_paraphrase_finds_the_right_note_in_vector_mode(tmp_path, shipped):
    vault = tmp_path / "vault"
    write(vault, "bike.md", BIKE)
    write(vault, "garden.md", GARDEN)
    write(vault, "sourdough.md", SOURDOUGH)
    app = App.open(make_settings(tmp_path), models=shipped)
    try:
        app.index([str(vault)])
        query = "making bread with wild yeast"  # shares no content word with the note
        assert app.search(query, mode="keyword").hits == ()
        result = app.search(query, mode="vector", limit=3)
        assert result.vector_used and os.path.basename(result.hits[0].path) == "sourdough.md"
        result = app.search("how often should I replace worn stopping pads on my bicycle", mode="hybrid")
        assert result.hits[0].heading == "Bike maintenance > Brakes"
    finally:
        app.close()


def _tiny_cross_encoder(folder: Path, tokenizer_source: Path) -> None:
    """A real ONNX graph with a cross-encoder's interface: logits = mean of a per-token weight."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    (folder / "onnx").mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copyfile(tokenizer_source / name, folder / name)
    vocab = json.loads((tokenizer_source / "config.json").read_text())["vocab_size"]
    table = np.random.default_rng(7).standard_normal((vocab, 1)).astype(np.float32)
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["per_token"], axis=0),  # [batch, seq, 1]
        helper.make_node("ReduceMean", ["per_token", "axes"], ["logits"], keepdims=0),  # [batch, 1]
    ]
    initializers = [numpy_helper.from_array(table, "table"),
                    numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")]
    graph = helper.make_graph(nodes, "tiny-cross-encoder", inputs, [output], initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    onnx.save(model, folder / RERANK_MODEL_FILE)


def test_a_tiny_onnx_cross_encoder_loads_through_fastembed_and_reranks(tmp_path, shipped, model_cache):
    from fastembed.rerank.cross_encoder.onnx_text_cross_encoder import supported_onnx_models

    described = {m.model: m.model_file for m in supported_onnx_models}
    assert described[RERANK_NAME] == RERANK_MODEL_FILE
    folder = tmp_path / "tiny-reranker"
    _tiny_cross_encoder(folder, prepare_shipped_minilm(model_cache / "shipped-minilm"))
    reranker = FastEmbedReranker(ModelSpec(RERANK_NAME, folder), tmp_path / "rerank-cache")
    documents = ["brake pads wear", "sourdough starter", "capacitive probe", "brake pads wear"]
    scores = reranker.score("brake pads", documents)
    assert len(scores) == len(documents) and all(isinstance(s, float) for s in scores)
    assert scores[0] == scores[3] and len(set(scores[:3])) == 3  # a function of the text, not a constant
    assert reranker.name.startswith(RERANK_NAME)

    vault = tmp_path / "vault"
    write(vault, "bike.md", BIKE)
    write(vault, "garden.md", GARDEN)
    write(vault, "sourdough.md", SOURDOUGH)
    app = App.open(make_settings(tmp_path), models=Models.fixed(shipped.embedder(), reranker))
    try:
        app.index([str(vault)])
        result = app.search("brake pads", mode="hybrid+rerank", explain=True)
        assert result.vector_used and result.reranked and result.hits
        assert all(h.explain["rerank"] is not None for h in result.hits)
        ranked = [h.explain["rerank"]["score"] for h in result.hits]
        assert ranked == sorted(ranked, reverse=True)
    finally:
        app.close()


def test_two_processes_building_the_shipped_model_at_once_both_get_a_whole_model(tmp_path):
    """Two builds racing on one cache (a server and a hook, two evals): once they shared one staging
    folder and the later one deleted the earlier one's half-built model (FileNotFoundError)."""
    import multiprocessing

    target = tmp_path / "models" / "shipped-minilm"
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        folders = pool.map(prepare_shipped_minilm, [target] * 4)
    assert folders == [target] * 4
    assert (target / "vault-index.json").is_file() and (target / "model.onnx").stat().st_size > 0
    assert sorted(p.name for p in target.parent.iterdir()) == ["shipped-minilm"]  # no staging folder left


def test_a_build_killed_halfway_leaves_nothing_after_the_next_build(tmp_path):
    import time

    from vault_index.engine.embedding.models import STALE_BUILD_S

    target = tmp_path / "models" / "shipped-minilm"
    dead = target.parent / "shipped-minilm.partial-dead"
    running = target.parent / "shipped-minilm.partial-running"
    for folder in (dead, running):
        folder.mkdir(parents=True)
        (folder / "model.onnx").write_bytes(b"half")
    old = time.time() - STALE_BUILD_S - 60
    os.utime(dead, (old, old))
    prepare_shipped_minilm(target)
    assert not dead.exists() and running.exists()  # a recent one may be another process's build
