"""What the index holds and lacks, as a workspace sees it: sources, files, status, and the
chunks still waiting for vectors (the pending notices every search with vectors carries).

Functions of the App (services/app.py), which delegates to them; split from it by concern.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from vault_index.engine.embedding.models import OFF_SETTINGS, setting_notice
from vault_index.errors import NotFoundError
from vault_index.services.search.search import RERANK_MODE
from vault_index.types import SyncReport

if TYPE_CHECKING:
    from vault_index.services.app import App

RERANK_OFF_BY_DEFAULT = ("off by default: searches are hybrid. VAULT_RERANK=1 reranks every search (one "
                         "search: --mode hybrid+rerank; MCP mode \"hybrid+rerank\") with the cross-encoder "
                         "{model}, which fastembed downloads once; offline it must be in the model cache")


def pending_vectors(app: App) -> dict[str, int]:
    """{source root: its chunks with no vector for the loaded model}, for the sources this
    workspace sees; read once per change of the index (its generation), not per search."""
    embedder = app.models.embedder() if app.models.embed_fingerprint(wait=False) else None
    if embedder is None:
        return {}
    key = (app.store.generation(), embedder.fingerprint)
    if app._pending is None or app._pending[0] != key:
        app._pending = (key, app.store.pending_vectors(embedder.fingerprint), None)
    seen = app._seen()
    return {root: count for root, count in app._pending[1].items() if seen(root)}


# Trigger: while a project was embedded, hybrid fused chunks scored on both sides with chunks that
# had keywords only, so a right note still waiting ranked under an embedded wrong one and the answer
# said "nothing relevant" (0.07 with 98% waiting; 0.78 five seconds later). Outcome: when more than
# this share of the chunks a search reaches wait for vectors, it runs keyword-only and says so.
# Measured (eval/sweep_pending.py, ADR 0038): hybrid with holes beats keyword-only up to about half.
KEYWORD_ONLY_SHARE = 0.5


def waiting_in(app: App, prefix: str | None) -> tuple[int, int]:
    """(chunks waiting for a vector, chunks) of the sources a search reaches (those `prefix` touches)."""
    pending = pending_vectors(app)
    if not pending:
        return 0, 0
    if app._pending[2] is None:  # chunks per source, read once per generation while any wait
        stats = app.store.source_stats(app._pending[0][1])
        app._pending = (*app._pending[:2], {row["path"]: row["chunks"] for row in stats})
    seen = app._seen()
    reached = [root for root in app._pending[2] if seen(root) and (not prefix or _touches(root, prefix))]
    return sum(pending.get(root, 0) for root in reached), sum(app._pending[2][root] for root in reached)


def keyword_only_notice(waiting: int, total: int) -> str | None:
    """The notice of a hybrid search run keyword-only because more than KEYWORD_ONLY_SHARE of the
    `total` chunks it reaches wait for vectors; None when few enough do."""
    if not total or waiting <= KEYWORD_ONLY_SHARE * total:
        return None
    if waiting == total:
        which = "the one chunk searched has no" if total == 1 else f"none of the {total} chunks searched has a"
        return f"keyword-only: {which} vector yet (hybrid once embedded)"
    return (f"keyword-only: {waiting} of the {total} chunks searched have no vector yet, and hybrid would rank "
            "every note that has one above them (hybrid again once they are embedded)")


def _touches(root: str, prefix: str) -> bool:
    """Whether a search under `prefix` reaches the source at `root` (either holds the other)."""
    root, prefix = root.rstrip("/") + "/", prefix.rstrip("/") + "/"
    return root.startswith(prefix) or prefix.startswith(root)


def pending_notices(app: App, vector_only: bool = False) -> list[str]:
    """What a search with vectors could not use: "N chunks of SOURCE have no vectors yet"; a vector
    search did not search them at all (walkthrough I: it said "keyword-only for them", with 0 hits)."""
    pending = pending_vectors(app)
    if not pending:
        return []
    names = {path: name for name, path in app.store.source_names().items()}
    skipped = "not searched in vector mode" if vector_only else None
    return [f"{count} chunks of {names.get(root, root)} ({root}) have no vectors yet: "
            f"{skipped or 'keyword-only for them'} "
            "(a running server embeds them; `vault-index index` embeds them now)" if count != 1 else
            f"1 chunk of {names.get(root, root)} ({root}) has no vector yet: {skipped or 'keyword-only for it'} "
            "(a running server embeds it; `vault-index index` embeds it now)"
            for root, count in sorted(pending.items())]


def sources(app: App, model: str | None = None) -> list[dict]:
    """The sources this workspace sees: name, path, files, chunks, `vectors` (its chunks that have
    a vector of `model`, default the model the index was last embedded with), and the `kind` of
    another agent's memory (read-only here)."""
    from vault_index.services.access.agent_memory import kind_of

    visible = app.visible_roots()
    found = [s for s in app.store.source_stats(model or app.store.get_meta("embed_model"))
             if visible is None or s["path"] in visible]
    return [{**s, "kind": kind} if (kind := kind_of(s["path"])) else s for s in found]


def files(app: App, source: str | None = None) -> list[dict]:
    """Every indexed file this workspace sees (of the source named `source`): path, source (its
    name), chunks and vectors (as `sources`)."""
    seen = app._seen()
    if source is not None:
        names = {n for n, p in app.store.source_names().items() if seen(p)}
        if source not in names:
            raise NotFoundError(f"no source is named {source!r} in {app.workspace.describe()}; "
                                f"sources: {', '.join(sorted(names)) or '(none)'}")
    rows = app.store.file_stats(app.store.get_meta("embed_model"))
    return [{k: v for k, v in row.items() if k != "source_path"} for row in rows
            if seen(row["source_path"]) and (source is None or row["source"] == source)]


def status(app: App, probe_models: bool = False) -> dict:
    """Index state without loading any model (the server builds its instructions from it).

    `probe_models` (the terminal's `status`, where a person waits anyway): where VAULT_RERANK=1
    turned rerank on, try loading the reranker, so "on" is said only when it can run here.
    """
    from vault_index.engine.embedding.vectors import sqlite_vec_connection

    # the model this process embeds with (its fingerprint, known without loading it), not the
    # last one the index recorded: after a change of model, status names the new one (issue 39)
    loaded = app.models.embed_fingerprint()
    model = loaded or app.store.get_meta("embed_model")
    # VAULT_EMBED_MODEL=none: the vectors the index holds are counted, and said unused (walkthrough A)
    # ... and a setting that cannot resolve (a missing model folder): said with its error
    off_reason = None if loaded else ("VAULT_EMBED_MODEL=none turns vector search off"
                                      if app.models.embed_setting.strip().lower() in OFF_SETTINGS
                                      else app.models.embed_error)
    if off_reason is None and probe_models:  # the terminal's status: a hub model that cannot load here
        off_reason = _hub_model_absent(app)
    off = off_reason is not None
    found = sources(app, model)
    # Trigger: vectors were counted over the whole index and chunks over this workspace, so
    # status could show more vectors than chunks. Outcome: both from the same sources: the
    # chunks this workspace sees, those with a vector of the model, and those still waiting.
    counts = {"sources": len(found), "files": sum(s["files"] for s in found),
              "chunks": sum(s["chunks"] for s in found)}
    vectors = sum(s["vectors"] for s in found) if model else 0
    backend = app.store.vector_backend or "numpy"
    if app.store.vector_backend is None and app.settings.vector_backend == "sqlite-vec":
        backend = "sqlite-vec" if sqlite_vec_connection(app.store.path) else "numpy (sqlite-vec cannot load here)"
    return {
        "db": app.store.location, "db_bytes": app.store.size_bytes(), **counts,
        "workspace": {"kind": app.workspace.kind, "root": app.workspace.key or None,
                      "sees": app.workspace.describe()},
        "sources": found, "embed_model": model or None,
        "embed_setting": app.settings.embed_model, "vectors": vectors,
        "vectors_pending": counts["chunks"] - vectors if model and not off else 0,
        "vectors_live": bool(vectors) and not off, "embed_off": off,
        "embed_off_reason": off_reason, "vector_backend": backend,
        "rerank": app.settings.rerank, "rerank_model": app.settings.rerank_model,
        "rerank_state": _rerank_state(app, probe_models, off, not off and model is not None
                                      and counts["chunks"] - vectors > KEYWORD_ONLY_SHARE * counts["chunks"]),
        "problems": [{"path": p, "message": m} for p, m in app._seen_problems(
            SyncReport(problems=list(app.store.problems()))).problems],
        "recovered_from": str(app.store.recovered_from) if app.store.recovered_from else None,
        "read_only": app.store.read_only, "notices": app.index_notices() + _model_notices(app),
    }


def _model_notices(app: App) -> list[str]:
    """An embedding model the eval suite has not measured, or the shipped one without its fp32
    weights: status says it every time (the search surfaces say it once)."""
    notice = setting_notice(app.settings.embed_model)
    return [notice] if notice else []


def _hub_model_absent(app: App) -> str | None:
    """Why a hub model (`BAAI/bge-small-en-v1.5`) cannot load here, without loading it: not in the
    model cache while the hub is out of reach (walkthrough E: status said "searches are hybrid")."""
    from vault_index.engine.embedding import models

    setting = app.models.embed_setting.strip()
    if setting in models.SHIPPED_SETTINGS or "@" in setting:
        return None
    try:
        spec = models.parse_model_setting(setting, app.models.cache)
    except Exception:  # noqa: BLE001 - a setting that cannot resolve is reported as embed_error
        return None
    if spec is None or not models._absent_offline(spec, app.models.cache):
        return None
    return f"embedding model {spec.name} is not in the model cache and the model hub cannot be reached"


def _rerank_state(app: App, probe: bool, off: bool = False, most_waiting: bool = False) -> str:
    """"off by default (how to turn it on)", "off (why)", "on", "on, not loadable here (why)", or
    "on (not checked)" without a probe.

    Read from the models this process searches with (not only the settings), so what status
    says is what a search does. Off by default, status is the one place that says how to turn it
    on, and it loads nothing to say so (a probe could download a model).
    """
    if not app.models.rerank_enabled:
        return "off (VAULT_RERANK=0)"
    if app.models.rerank_setting.strip().lower() in ("", "none", "off", "0"):
        return "off (VAULT_RERANK_MODEL=none)"
    if app.default_mode != RERANK_MODE:
        said = RERANK_OFF_BY_DEFAULT.format(model=app.models.rerank_setting)
        # with vectors off, searches are keyword-only and rerank (on hybrid) would not run either
        if off:
            return said.replace("searches are hybrid", "searches are keyword-only (no vectors)")
        # most chunks wait for vectors: a hybrid search runs keyword-only (ADR 0038; walkthrough I)
        return said.replace("searches are hybrid", "searches are keyword-only until most chunks have vectors, "
                            "then hybrid") if most_waiting else said
    if not probe:
        return "on (not checked)"
    if app.models.reranker() is not None:
        return "on"
    error = app.models.rerank_error or "no rerank model"
    if "turned off" in error:
        return f"off ({error})"
    return f"on, not loadable here ({error}); searches use fusion order"


def registered_unindexed(app: App) -> list[Path]:
    """The project's own folders and README.md registered as sources with no note indexed yet,
    though they hold markdown: walkthrough I saw `claude mcp list`'s health check register them and
    stop before indexing, and the next server's instructions count them as none."""
    own = {str(p) for p in [*app.workspace.own_folders(), *filter(None, [app.workspace.readme()])]}
    empty = [Path(s["path"]) for s in app.store.source_stats() if s["path"] in own and not s["files"]]
    return [p for p in empty if p.is_file() or next(p.rglob("*.md"), None) is not None]

