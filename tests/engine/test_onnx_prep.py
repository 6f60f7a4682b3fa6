"""engine/embedding/onnx_prep.py: the prepared int8 graph computes what the original computes.

A tiny model with the shipped MiniLM's two patterns (an int8 embedding table with per-row scales
read by Gather, an int8 weight with per-column scales read by MatMul) runs through ONNX Runtime
before and after; then the real shipped model, old session against prepared one.
"""

from __future__ import annotations

import numpy as np
import pytest
from vault_index.engine.embedding import onnx_prep
from vault_index.engine.embedding.models import ADR0010_SHAPE, EmbedShape, Models

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def tiny_model(path, rng):
    table = rng.integers(-127, 128, size=(50, 8), dtype=np.int8)
    table_scale = rng.random((50, 1), dtype=np.float32) / 50
    weight = rng.integers(-127, 128, size=(8, 4), dtype=np.int8)
    weight_scale = rng.random((1, 4), dtype=np.float32) / 50
    inits = [numpy_helper.from_array(table, "table_q"), numpy_helper.from_array(table_scale, "table_scale"),
             numpy_helper.from_array(weight, "w_q"), numpy_helper.from_array(weight_scale, "w_scale")]
    nodes = [helper.make_node("Cast", ["table_q"], ["table_f"], to=TensorProto.FLOAT, name="table_cast"),
             helper.make_node("Mul", ["table_f", "table_scale"], ["table"], name="table_mul"),
             helper.make_node("Gather", ["table", "ids"], ["rows"], axis=0, name="lookup"),
             helper.make_node("Cast", ["w_q"], ["w_f"], to=TensorProto.FLOAT, name="w_cast"),
             helper.make_node("Mul", ["w_f", "w_scale"], ["w"], name="w_mul"),
             helper.make_node("MatMul", ["rows", "w"], ["out"], name="project")]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("ids", TensorProto.INT64, [None, None])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [None, None, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def run(path, ids):
    options = ort.SessionOptions()
    session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"],
                                   disabled_optimizers=["ConstantFolding"])
    return session.run(None, {"ids": ids})[0]


def test_prepared_tiny_graph_gives_the_same_numbers_and_no_per_run_dequantize(tmp_path):
    source, target = tmp_path / "m.onnx", tmp_path / "m.prepared.onnx"
    tiny_model(source, np.random.default_rng(3))
    assert onnx_prep.prepare(source, target)
    prepared = onnx.load(str(target))
    ops = [n.op_type for n in prepared.graph.node]
    # the weight is a float initializer now; the table stays int8 and only gathered rows are cast
    assert ops.count("Cast") == 1 and ops.index("Gather") < ops.index("Cast")
    kinds = {i.name: i.data_type for i in prepared.graph.initializer}
    assert kinds["table_q"] == TensorProto.INT8 and kinds["w"] == TensorProto.FLOAT and "w_q" not in kinds
    ids = np.array([[0, 7, 49, 7], [3, 3, 1, 0]], dtype=np.int64)
    assert np.array_equal(run(source, ids), run(target, ids))


def test_a_graph_without_int8_weights_is_left_alone_and_remembered(tmp_path):
    source = tmp_path / "float.onnx"
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([node], "f", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(source))
    cache = tmp_path / "cache"
    assert onnx_prep.prepared_path(source, cache) is None
    assert [p.name.endswith(onnx_prep.NOTHING_TO_DO) for p in (cache / onnx_prep.RUNTIME_FOLDER).iterdir()] == [True]
    assert onnx_prep.prepared_path(source, cache) is None  # the marker answers; no second child


def test_a_changed_source_gets_a_new_prepared_copy(tmp_path):
    source, cache = tmp_path / "m.onnx", tmp_path / "cache"
    tiny_model(source, np.random.default_rng(1))
    first = onnx_prep.prepared_path(source, cache)
    assert first is not None and first.is_file()
    assert onnx_prep.prepared_path(source, cache) == first
    tiny_model(source, np.random.default_rng(2))
    second = onnx_prep.prepared_path(source, cache)
    assert second is not None and second != first
    ids = np.array([[5, 6]], dtype=np.int64)
    assert np.array_equal(run(source, ids), run(second, ids))


@pytest.mark.real_model
def test_prepared_shipped_minilm_gives_the_old_sessions_vectors(tmp_path):
    cache = tmp_path / "models"
    texts = ["short", "garden sensors, batteries and soil moisture " * 12, "x", "bike chain wax " * 40]
    old = Models("shipped:minilm-int8", "none", cache, rerank=False, embed_shape=ADR0010_SHAPE).embedder()
    assert old is not None
    new = Models("shipped:minilm-int8", "none", cache, rerank=False, embed_shape=EmbedShape()).embedder()
    assert list((cache / onnx_prep.RUNTIME_FOLDER).glob("*.onnx")), "the prepared copy was not made"
    assert new.model_path == old.model_path and new._session._model_path != old._session._model_path
    assert float(np.abs(old.embed_documents(texts) - new.embed_documents(texts)).max()) < 1e-5
    assert float(np.abs(old.embed_query("soil moisture") - new.embed_query("soil moisture")).max()) < 1e-5
    assert new.fingerprint == old.fingerprint  # stored vectors stay valid: nothing re-embeds
