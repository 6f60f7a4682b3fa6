"""Prepare an int8 ONNX model so that ONNX Runtime does not dequantize every weight on every run.

The shipped MiniLM stores each weight as an int8 tensor followed by `Cast` (to float) and `Mul`
(by its scale). With constant folding off (ADR 0010: folding doubled the load peak), ONNX Runtime
runs those two nodes on every call: all 22.7M weights, about 100 MB of temporaries in its arena
and about 90 ms of CPU per call even for a six-token query (measured: 116 ms CPU per query
against 22 ms once prepared; issue 13). The prepared graph computes the same numbers:

- a weight used by a `MatMul` is dequantized once, here, with the same float32 operations
  (`float(q) * scale`), and stored as a float initializer (about 42 MB for MiniLM);
- an embedding table read by `Gather` stays int8 (its 30,522 x 384 rows are half the model):
  the rows are gathered first and only those are dequantized, with their per-row scales.

Vectors equal the unprepared session's to about 2e-6 (the same difference constant folding
gives; tests/engine/test_onnx_prep.py checks 1e-5 through the real model). Any graph without the
pattern is left as it is. The rewrite needs the `onnx` package and runs in a child process
(`python -m vault_index.engine.embedding.onnx_prep SRC DST`), so parsing the model never adds to the peak
of the process that embeds; the result is cached and reused while the source file is unchanged.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

PREP_VERSION = 1  # bump when the rewrite changes: a new cache key, so old files are not reused
PREP_TIMEOUT_S = 300.0
RUNTIME_FOLDER = "runtime-onnx"  # under the model cache
NOTHING_TO_DO = ".none"  # marker: this source has no int8 weights to prepare


def prepared_path(source: Path, cache: Path) -> Path | None:
    """The prepared copy of `source`, made on first use; None when there is nothing to prepare
    or it cannot be made (no `onnx` package, an unreadable graph): load `source` as it is."""
    try:
        stat = source.stat()
    except OSError:
        return None
    identity = f"{PREP_VERSION}:{source.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    key = hashlib.sha256(identity.encode()).hexdigest()[:20]
    folder = cache / RUNTIME_FOLDER
    target = folder / f"{source.stem}-{key}.onnx"
    if target.is_file():
        return target
    if (folder / f"{target.name}{NOTHING_TO_DO}").exists():
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "vault_index.engine.embedding.onnx_prep", str(source), str(target)]
        done = subprocess.run(command,
                              capture_output=True, timeout=PREP_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return target if done.returncode == 0 and target.is_file() else None


def graph_maps(graph) -> tuple[dict, dict, dict[str, list], set[str]]:
    """An ONNX graph's lookups: initializers by name, each tensor's producing node, the nodes that
    read each tensor, and the graph's output names."""
    initializers = {i.name: i for i in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    users: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(name, []).append(node)
    return initializers, producer, users, {o.name for o in graph.output}


def prepare(source: Path, target: Path) -> bool:
    """Write the prepared graph of `source` to `target` (atomically); False when nothing matched
    (a marker file then records it, so the next load does not try again)."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    initializers, producer, users, outputs = graph_maps(graph)
    dropped_nodes: set[int] = set()
    added_nodes: list = []
    float_weights: list = []
    for mul in graph.node:
        found = dequantize_pair(mul, producer, initializers, users, outputs)
        if found is None:
            continue
        cast, quantized, scale = found
        readers = users.get(mul.output[0], [])
        if readers and all(_row_gather(r, mul.output[0]) for r in readers) and _per_row(scale, quantized):
            for reader in readers:  # gather the int8 rows (and their scales), then dequantize those
                dropped_nodes.add(id(reader))
                added_nodes += _gather_then_dequantize(helper, reader, cast.input[0], mul.input[1], scale)
        else:
            weight = quantized.astype(np.float32) * scale  # what Cast then Mul compute, once
            float_weights.append(numpy_helper.from_array(weight.astype(np.float32, copy=False), mul.output[0]))
        dropped_nodes |= {id(cast), id(mul)}
    if not dropped_nodes:
        Path(f"{target}{NOTHING_TO_DO}").touch()
        return False
    nodes = _topological([n for n in graph.node if id(n) not in dropped_nodes] + added_nodes,
                         {i.name for i in graph.input} | set(initializers) | {w.name for w in float_weights})
    used = set_nodes(graph, nodes)
    kept = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept + float_weights)
    save_atomically(model, target)
    return True


def set_nodes(graph, nodes: list) -> set[str]:
    """Replace the graph's nodes; the names they read (to keep only the initializers still used)."""
    del graph.node[:]
    graph.node.extend(nodes)
    return {name for node in nodes for name in node.input}


def save_atomically(model, target: Path) -> None:
    """Write the model beside `target` and rename it over: a half-written model is never loaded."""
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        partial.write_bytes(model.SerializeToString())
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def dequantize_pair(mul, producer, initializers, users, outputs):
    """(cast, int8 array, float32 scale) when `mul` is Mul(Cast(int8 initializer), float32
    initializer) and nothing else reads the Cast; else None."""
    import numpy as np
    from onnx import numpy_helper

    if mul.op_type != "Mul" or len(mul.input) != 2 or mul.output[0] in outputs:
        return None
    cast = producer.get(mul.input[0])
    if cast is None or cast.op_type != "Cast" or cast.input[0] not in initializers:
        return None
    if mul.input[1] not in initializers or len(users.get(cast.output[0], [])) != 1:
        return None
    quantized = numpy_helper.to_array(initializers[cast.input[0]])
    scale = numpy_helper.to_array(initializers[mul.input[1]])
    to_float = any(a.name == "to" and a.i == 1 for a in cast.attribute)  # 1: FLOAT
    if quantized.dtype != np.int8 or scale.dtype != np.float32 or not to_float:
        return None
    return cast, quantized, scale


def _row_gather(node, data: str) -> bool:
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
    return node.op_type == "Gather" and node.input[0] == data and axis == 0


def _per_row(scale, quantized) -> bool:
    """A scale that follows the gathered rows: one per row ([rows, 1]) or one for all."""
    return scale.size == 1 or (scale.ndim == 2 and scale.shape == (quantized.shape[0], 1))


def _gather_then_dequantize(helper, gather, quantized: str, scale_name: str, scale) -> list:
    indices, out = gather.input[1], gather.output[0]
    nodes = [helper.make_node("Gather", [quantized, indices], [f"{out}__q"], axis=0, name=f"{gather.name}__q"),
             helper.make_node("Cast", [f"{out}__q"], [f"{out}__f"], to=1, name=f"{gather.name}__cast")]
    if scale.size == 1:
        return nodes + [helper.make_node("Mul", [f"{out}__f", scale_name], [out], name=f"{gather.name}__mul")]
    return nodes + [
        helper.make_node("Gather", [scale_name, indices], [f"{out}__s"], axis=0, name=f"{gather.name}__s"),
        helper.make_node("Mul", [f"{out}__f", f"{out}__s"], [out], name=f"{gather.name}__mul")]


def _topological(nodes: list, available: set[str]) -> list:
    """`nodes` in an order where each one's inputs exist before it (ONNX requires it)."""
    ordered, pending = [], list(nodes)
    while pending:
        ready = [n for n in pending if all(not name or name in available for name in n.input)]
        if not ready:
            raise ValueError("the prepared graph has a cycle or a missing input")
        ready_ids = {id(n) for n in ready}
        for node in ready:
            ordered.append(node)
            available.update(node.output)
        pending = [n for n in pending if id(n) not in ready_ids]
    return ordered


if __name__ == "__main__":
    sys.exit(0 if prepare(Path(sys.argv[1]), Path(sys.argv[2])) else 3)
