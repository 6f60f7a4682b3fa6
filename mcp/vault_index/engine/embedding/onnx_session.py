"""ONNX Runtime sessions with our options, and the shipped MiniLM run on one without fastembed.

Why the shipped model skips fastembed: importing fastembed loads its image, sparse and model-hub
modules (PIL, requests, huggingface_hub): 0.84 s against 0.25 s for numpy, ONNX Runtime and
tokenizers alone, paid by every process that embeds (an edit hook, a re-index, a cold CLI search).
The shipped folder holds one ONNX file and a tokenizer.json that already carries the truncation
and padding fastembed would set, so the remaining work is mean pooling and normalisation, done as
fastembed does them (float64 sums, then float32); a test compares both on the same texts.
Other models (hub names, NAME@FOLDER) still load through fastembed, which knows their pooling.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

# Padded tokens per ONNX run, and texts per run at most. Memory grows with batch x length (and
# attention with batch x length^2) and ONNX Runtime's arena keeps the largest shape it has seen:
# 32 texts of 256 tokens peaked near 1 GB. Chosen by measurement: docs/adr/0010-embedding-footprint.md.
EMBED_BATCH_TOKENS = 1024
EMBED_BATCH_TEXTS = 64


@dataclass(frozen=True)
class EmbedShape:
    """How texts are fed to the ONNX session (docs/adr/0010-embedding-footprint.md).

    - batch: texts per run;
    - sort_by_length: batch texts of similar token length together (padding is wasted work),
      then put the vectors back in the caller's order;
    - cpu_arena: ONNX Runtime's CPU memory arena (off measured worse here: the allocator then
      fragments across threads);
    - fold_constants: ONNX Runtime's constant folding, which dequantizes int8 weights into a
      float copy at load (same vectors to 1e-6 either way, measured);
    - mem_pattern: ONNX Runtime's memory pattern, which plans one block for all of a run's
      intermediate tensors per input shape; with many run shapes (sorted runs of every length)
      the arena kept growing by such blocks (off: 266 against 299 MB after 320 long texts, same
      vectors);
    - prepare_weights: load a prepared copy of an int8 model whose MatMul weights are dequantized
      once and whose embedding tables are dequantized after the gather (engine/embedding/onnx_prep.py);
      without it, a session with folding off dequantizes every weight on every run.
    """

    batch_tokens: int | None = EMBED_BATCH_TOKENS  # None: a fixed count of texts per run
    batch_texts: int = EMBED_BATCH_TEXTS
    sort_by_length: bool = True
    cpu_arena: bool = True
    fold_constants: bool = False
    prepare_weights: bool = True
    arena_same_as_requested: bool = False  # the arena grows by what a run asks, not by doubling
    mem_pattern: bool = False  # ONNX Runtime's memory pattern planning: one block per input shape


DEFAULT_SHAPE = EmbedShape()  # today's shape
# What the embedder did before issue 13: fastembed's batches of 32 in the caller's order, its
# session with constant folding (which turns the int8 weights into a second, float copy: +170 MB
# resident for the shipped MiniLM). Kept so `vault-index bench` measures old and new in one run.
LEGACY_SHAPE = EmbedShape(batch_tokens=None, batch_texts=32, sort_by_length=False, fold_constants=True,
                          prepare_weights=False, mem_pattern=True)
# What ADR 0010 shipped before the weights were prepared (issue 13, second round): sorted runs
# under the token budget, folding off, so every run dequantized all weights again.
ADR0010_SHAPE = EmbedShape(batch_tokens=2048, prepare_weights=False, mem_pattern=True)
# What ADR 0016 left (issue 13, second round): prepared weights, runs of 2,048 padded tokens.
ADR0016_SHAPE = EmbedShape(batch_tokens=2048, mem_pattern=True)


def plan_batches(lengths: list[int], shape) -> list[list[int]]:
    """Positions of the texts, cut into ONNX runs; the caller restores the original order.

    Trigger: a run pads every text to its longest member. Why: a 40-token chunk batched with a
    250-token one costs as much as a 250-token one, and a run's memory follows its padded size.
    Outcome: sort by length (stable), then cut a run before it passes the token or text budget.
    """
    order = sorted(range(len(lengths)), key=lengths.__getitem__) if shape.sort_by_length else range(len(lengths))
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for i in order:
        padded = max(longest, lengths[i], 1) * (len(current) + 1)
        if current and (len(current) >= shape.batch_texts or (shape.batch_tokens and padded > shape.batch_tokens)):
            batches.append(current)
            current, longest = [], 0
        current.append(i)
        longest = max(longest, lengths[i])
    if current:
        batches.append(current)
    return batches


def open_session(source: Path, shape, cache: Path | None = None, threads: int | None = None):
    """An InferenceSession on `source` with the options of `shape` (models.EmbedShape).

    Trigger: fastembed builds its session with every graph optimisation on. Why: constant folding
    turns the shipped int8 MiniLM's weights into float at load (peak 262 MB against 90 MB, same
    vectors to 1e-6, no faster here). Outcome: the session is ours; folding only where asked.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_cpu_mem_arena = shape.cpu_arena
    options.enable_mem_pattern = shape.mem_pattern
    if shape.cpu_arena and shape.arena_same_as_requested:
        _register_same_as_requested_arena(ort)
        options.add_session_config_entry("session.use_env_allocators", "1")
    if threads:
        options.intra_op_num_threads = options.inter_op_num_threads = threads
    prepared = None
    if shape.prepare_weights and not shape.fold_constants and cache is not None:
        from vault_index.engine.embedding.onnx_prep import prepared_path

        prepared = prepared_path(source, cache)
    return ort.InferenceSession(
        str(prepared or source), sess_options=options,
        providers=["CPUExecutionProvider"], disabled_optimizers=[] if shape.fold_constants else ["ConstantFolding"],
    )


@functools.cache
def _register_same_as_requested_arena(ort) -> None:
    """One process-wide CPU arena that extends by the size requested (kSameAsRequested), for the
    sessions that opt in (session.use_env_allocators)."""
    info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
    ort.create_and_register_allocator(info, ort.OrtArenaCfg(0, 1, -1, -1))


class TokenCounter:
    """The shipped model's tokens and window, from its tokenizer.json alone (milliseconds): the
    chunker sizes notes with it while the session loads (models.Models.token_counter)."""

    def __init__(self, folder: Path):
        from tokenizers import Tokenizer

        self._counter = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # tokenizer.json carries the window (truncation) and batch-longest padding
        self.max_tokens = int((self._counter.truncation or {}).get("max_length") or 512)
        self._counter.no_truncation()
        self._counter.no_padding()

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text).ids)

    def lengths(self, texts: list[str]) -> list[int]:
        """Token counts as the model will see them (capped at its window: longer is cut)."""
        return [min(len(e.ids), self.max_tokens) for e in self._counter.encode_batch(texts)]


class ShippedEmbedder:
    """all-MiniLM-L6-v2 from the folder models.prepare_shipped_minilm assembles: tokens, one ONNX
    run per batch, the mean of the real tokens' states, unit length."""

    def __init__(self, folder: Path, shape, cache: Path, fingerprint: str, notice: str = ""):
        from tokenizers import Tokenizer

        self.shape, self.fingerprint, self.notice = shape, fingerprint, notice
        self.model_path = folder / "model.onnx"
        self._session = open_session(self.model_path, shape, cache)
        self._inputs = {node.name for node in self._session.get_inputs()}
        self._dim = int(self._session.get_outputs()[0].shape[-1])
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._counter = TokenCounter(folder)
        self.max_tokens = self._counter.max_tokens

    def count_tokens(self, text: str) -> int:
        return self._counter.count_tokens(text)

    def embed_documents(self, texts: list[str]):
        import numpy as np

        vectors = np.zeros((len(texts), self._dim), dtype=np.float32)
        lengths = self._counter.lengths(texts)
        for part in plan_batches(lengths, self.shape):
            vectors[part] = self._run([texts[i] for i in part])
        return vectors

    def embed_query(self, text: str):
        return self._run([text])[0]

    def _run(self, texts: list[str]):
        import numpy as np

        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        states = self._session.run(None, feed)[0]
        summed = np.sum(states, axis=1, where=mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32)
