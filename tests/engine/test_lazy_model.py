"""A sync or an edit re-index that finds nothing to embed never constructs the embedder (issue 26).

The real indexer, store and App; the model setting is a real `NAME@FOLDER` whose fingerprint the
real code computes from the folder's files. Only the embedder class is swapped for one that
counts how often it is constructed (loading ONNX Runtime is what these paths must not pay).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace

import pytest
from helpers import BIKE, GARDEN, FakeEmbedder, make_settings, write
from vault_index.engine.embedding import models as models_module
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App


class CountingEmbedder(FakeEmbedder):
    """Stands in for FastEmbedEmbedder(spec, cache, shape): the fingerprint the real one would have."""

    made = 0

    def __init__(self, spec, cache, shape=None):
        super().__init__(fingerprint=models_module._fingerprint(spec))
        type(self).made += 1


@pytest.fixture
def setup(tmp_path, monkeypatch):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"weights")
    (folder / "tokenizer.json").write_text("{}")
    monkeypatch.setattr(models_module, "FastEmbedEmbedder", CountingEmbedder)
    CountingEmbedder.made = 0
    settings = replace(make_settings(tmp_path), embed_model=f"some/model@{folder}")
    vault = tmp_path / "vault"
    write(vault, "garden.md", GARDEN)
    write(vault, "bike.md", BIKE)

    def fresh_app() -> App:  # a new process: its own Models, nothing loaded yet
        return App.open(settings, models=Models(settings.embed_model, "none", settings.model_cache, rerank=False))

    return settings, vault, fresh_app


def test_a_sync_with_nothing_changed_loads_no_model(setup):
    _, vault, fresh_app = setup
    app = fresh_app()
    first = app.index([str(vault)])
    assert CountingEmbedder.made == 1 and first.chunks_embedded > 0
    app.close()

    app = fresh_app()
    again = app.index()
    assert CountingEmbedder.made == 1, "a sync with nothing to embed constructed the embedder"
    assert again.unchanged == 2 and again.indexed == 0 and again.chunks_embedded == 0
    assert again.vector_used  # the index is complete under this model: vectors are live
    status = app.status()
    assert status["vectors_live"] and status["embed_model"] == first_fingerprint(app)
    assert app.reindex_file(str(vault / "bike.md")).unchanged == 1
    assert CountingEmbedder.made == 1, "re-indexing an unchanged note constructed the embedder"
    app.close()


def test_an_edit_loads_the_model_once_and_embeds_only_its_changed_chunk(setup):
    _, vault, fresh_app = setup
    app = fresh_app()
    app.index([str(vault)])
    app.close()
    write(vault, "bike.md", BIKE.replace("degreaser", "citrus degreaser"))

    app = fresh_app()
    report = app.index()
    assert report.indexed == 1 and report.chunks_embedded == 1
    assert CountingEmbedder.made == 2  # the first sync's and this one's: needed to embed the chunk
    assert app.store.chunks_missing_vectors(first_fingerprint(app)) == []
    app.close()


def test_a_moved_note_is_rechunked_but_embeds_nothing(setup, monkeypatch):
    """A moved note (new path, same text) is chunked again with the model's tokenizer (so its
    chunks cut as before), and every chunk finds its vector by hash: the sync neither waits for
    the embedding lock (another run may be embedding for hours) nor embeds."""
    from vault_index.engine import indexer

    _, vault, fresh_app = setup
    app = fresh_app()
    app.index([str(vault)])
    app.close()
    (vault / "bike.md").rename(vault / "cycling.md")
    turns = []
    real_turn = indexer._embedding_turn
    monkeypatch.setattr(indexer, "_embedding_turn", lambda *args: turns.append(args) or real_turn(*args))

    app = fresh_app()
    report = app.index()
    assert report.indexed == 1 and report.removed == 1 and report.chunks_embedded == 0
    assert turns == [] and report.vector_used
    assert app.store.chunks_missing_vectors(first_fingerprint(app)) == []
    app.close()


def test_a_model_that_cannot_load_leaves_no_model_recorded(tmp_path):
    settings = replace(make_settings(tmp_path), embed_model=f"some/model@{tmp_path / 'missing'}")
    vault = tmp_path / "vault"
    write(vault, "bike.md", BIKE)
    app = App.open(settings)
    report = app.index([str(vault)])
    assert not report.vector_used and "does not exist" in app.models.embed_error
    assert app.status()["embed_model"] is None
    app.close()


@pytest.mark.parametrize("setting", ["{tmp}/no/such", "./no/such", "../no-such", "~/no-such-vault-index-model"])
def test_a_setting_that_is_a_missing_path_is_a_missing_folder_not_a_hub_name(tmp_path, setting):
    """Walkthrough C: VAULT_EMBED_MODEL=/tmp/no/such/folder was fetched as a hub model's name."""
    from vault_index.errors import ModelUnavailableError

    with pytest.raises(ModelUnavailableError, match="model folder .* does not exist"):
        models_module.parse_model_setting(setting.format(tmp=tmp_path), tmp_path)
    write(tmp_path, "model.onnx", "")
    with pytest.raises(ModelUnavailableError, match="is not a folder"):
        models_module.parse_model_setting(str(tmp_path / "model.onnx"), tmp_path)
    spec = models_module.parse_model_setting("BAAI/bge-small-en-v1.5", tmp_path)  # a slash, not a path
    assert (spec.name, spec.folder) == ("BAAI/bge-small-en-v1.5", None)


def _shipped_folder(tmp_path, monkeypatch):
    """A shipped-model folder with the real tokenizer.json and no weights; the model setting
    resolves to it ("none" still turns the model off)."""
    from vault_index.engine.embedding.models import SHIPPED_TOKENIZER, ModelSpec

    folder = tmp_path / "shipped"
    folder.mkdir(exist_ok=True)
    (folder / "tokenizer.json").write_bytes((SHIPPED_TOKENIZER / "tokenizer.json").read_bytes())
    spec = ModelSpec("shipped", folder, shipped=True)
    monkeypatch.setattr(models_module, "parse_model_setting",
                        lambda setting, cache: None if setting == "none" else spec)
    return folder


def test_the_shipped_model_loads_on_a_thread_while_the_sync_walks_on(tmp_path, monkeypatch):
    """The shipped model's tokenizer sizes the chunks at once; its session loads meanwhile on a
    thread, and the embedding waits for it. Here the load is held until the walk has gone past a
    second changed note: a sync that loaded before going on would never get there."""
    import threading

    _shipped_folder(tmp_path, monkeypatch)
    walked_on, loads, seen = threading.Event(), [], []

    def held_load(spec, cache, shape=None):
        assert walked_on.wait(30), "the sync waited for the model before walking on"
        loads.append(threading.current_thread().name)
        return FakeEmbedder(fingerprint=models_module._fingerprint(spec))

    monkeypatch.setattr(models_module, "open_embedder", held_load)
    from vault_index.engine import indexer

    real_prepare = indexer._prepare

    def prepare(store, here, path, report, sizing):
        seen.append(os.path.basename(path))
        if len(seen) == 2:
            walked_on.set()  # the second note's turn came while the model was still loading
        return real_prepare(store, here, path, report, sizing)

    monkeypatch.setattr(indexer, "_prepare", prepare)
    vault = tmp_path / "vault"
    write(vault, "bike.md", BIKE)
    write(vault, "garden.md", GARDEN)
    settings = replace(make_settings(tmp_path), embed_model="shipped:minilm")
    app = App.open(settings, models=Models("shipped:minilm", "none", settings.model_cache, rerank=False))
    report = app.index([str(vault)])
    assert loads == ["embedder-load"] and report.chunks_embedded == app.store.counts()["chunks"] > 0
    app.close()


def test_the_sync_lists_what_to_embed_while_the_model_still_loads(tmp_path, monkeypatch):
    """The fingerprint of a model loading on a thread is known without waiting for the load, so
    the sync's listing of chunks to embed overlaps the load. Here the load is held until the
    listing has begun: a sync whose fingerprint waited for the model would never list."""
    import threading

    from vault_index.engine.stores.store import Store

    _shipped_folder(tmp_path, monkeypatch)
    listing, loads = threading.Event(), []

    def held_load(spec, cache, shape=None):
        loads.append(listing.wait(10))
        return FakeEmbedder(fingerprint=models_module._fingerprint(spec))

    monkeypatch.setattr(models_module, "open_embedder", held_load)
    real_list = Store.chunks_missing_vectors

    def chunks_missing_vectors(self, *args, **kwargs):
        listing.set()
        return real_list(self, *args, **kwargs)

    monkeypatch.setattr(Store, "chunks_missing_vectors", chunks_missing_vectors)
    vault = tmp_path / "vault"
    write(vault, "bike.md", BIKE)
    settings = replace(make_settings(tmp_path), embed_model="shipped:minilm")
    app = App.open(settings, models=Models("shipped:minilm", "none", settings.model_cache, rerank=False))
    report = app.index([str(vault)])
    assert loads == [True], "the model's load finished before the sync listed what to embed"
    assert report.chunks_embedded == app.store.counts()["chunks"] > 0
    app.close()


def first_fingerprint(app: App) -> str:
    return app.models.embed_fingerprint()


# --- the stat shortcut (issue 26): trusted only when the last look was not racy ---------------


def test_an_edit_within_the_mtime_granularity_of_the_last_look_is_not_missed(tmp_path, monkeypatch):
    """A note indexed right after it was written, then changed to the same size with the same
    mtime (a file system whose mtimes have a coarse tick): the stat says nothing changed, the
    content did. The racy look recorded no mtime, so the next sync hashes the file."""
    from vault_index.engine import indexer

    monkeypatch.setattr(indexer, "RACY_FINE_SECONDS", 60.0)  # the look counts as racy however slow the machine
    app = App.open(make_settings(tmp_path))
    note = write(tmp_path / "vault", "bike.md", BIKE)
    app.index([str(note.parent)])
    before = note.stat()
    note.write_text(BIKE.replace("degreaser", "degreasor"), encoding="utf-8")  # same size
    os.utime(note, ns=(before.st_atime_ns, before.st_mtime_ns))  # same mtime, as a coarse tick leaves it
    assert note.stat().st_size == before.st_size
    report = app.index()
    assert report.indexed == 1, "a same-size edit within the mtime tick of the last look was missed"
    assert any("degreasor" in text for _, text in app.store.db.execute("SELECT id, text FROM chunks"))
    app.close()


def test_an_old_unchanged_note_is_trusted_by_its_stat_and_not_read(tmp_path, monkeypatch):
    from vault_index.engine import indexer

    app = App.open(make_settings(tmp_path))
    note = write(tmp_path / "vault", "bike.md", BIKE)
    hour_ago = note.stat().st_mtime - 3600
    os.utime(note, (hour_ago, hour_ago))
    app.index([str(note.parent)])
    reads = []
    real = indexer._read_note
    monkeypatch.setattr(indexer, "_read_note", lambda *a: reads.append(a) or real(*a))
    assert app.index().unchanged == 1 and reads == []
    note.write_text(BIKE + "\nmore\n", encoding="utf-8")  # a fresh edit: read, indexed, then racy
    monkeypatch.setattr(indexer, "RACY_FINE_SECONDS", 60.0)
    assert app.index().indexed == 1 and len(reads) == 1
    assert app.index().unchanged == 1 and len(reads) == 2  # racy look: hashed once more, same content
    app.close()


def test_the_racy_window_follows_the_mtime_granularity():
    from types import SimpleNamespace

    from vault_index.engine import indexer

    def stat(seconds_ago: float, whole: bool):
        mtime = time.time() - seconds_ago
        mtime = float(int(mtime)) if whole else mtime
        ns = int(mtime) * 1_000_000_000 if whole else int(mtime * 1e9) | 1  # a fraction of a second
        return SimpleNamespace(st_mtime=mtime, st_mtime_ns=ns)

    assert indexer._trusted_mtime(stat(0.01, whole=False)) is None  # within a fine tick of now
    assert indexer._trusted_mtime(stat(1.0, whole=False)) is not None
    assert indexer._trusted_mtime(stat(0.5, whole=True)) is None  # seconds-only file system: 2 s window
    assert indexer._trusted_mtime(stat(5.0, whole=True)) is not None
    assert indexer._trusted_mtime(stat(-3600, whole=False)) is not None  # touched an hour into the future


def test_a_hub_model_missing_from_the_cache_offline_fails_without_importing_fastembed(tmp_path):
    """Every cold hybrid search asks for the reranker; offline and uncached, the answer must not
    cost fastembed's import. A cache entry carrying the model's name still goes to fastembed."""
    import subprocess
    import sys

    code = """if True:
        import sys
        from pathlib import Path
        from vault_index.engine.embedding.models import Models
        empty, named = Path(sys.argv[1]), Path(sys.argv[2])
        models = Models("none", "Xenova/ms-marco-MiniLM-L-6-v2", empty)
        assert models.reranker() is None and "not in the model cache" in models.rerank_error, models.rerank_error
        embed = Models("BAAI/bge-small-en-v1.5", "none", empty, rerank=False)
        assert embed.embedder() is None and "not in the model cache" in embed.embed_error, embed.embed_error
        assert "fastembed" not in sys.modules
        (named / "models--Xenova--ms-marco-MiniLM-L-6-v2").mkdir(parents=True)
        models = Models("none", "Xenova/ms-marco-MiniLM-L-6-v2", named)
        assert models.reranker() is None and "not in the model cache" not in models.rerank_error
        assert "fastembed" in sys.modules  # fastembed looked, and found no model files
    """
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "empty"), str(tmp_path / "named")],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr


def test_a_resync_reads_the_checkouts_copies_once_not_once_per_note(tmp_path, monkeypatch):
    """Issue 26: the stat shortcut of 20,000 notes asked the copies table 20,000 times. Now one
    query per checkout serves the unchanged notes; a changed note still reads its current record."""
    app = App.open(make_settings(tmp_path))
    vault = tmp_path / "vault"
    for i in range(5):
        note = write(vault, f"n{i}.md", f"# Note {i}\n\nbody {i}\n")
        os.utime(note, (time.time() - 3600, time.time() - 3600))  # old: not racy, the stat is trusted
    app.index([str(vault)])
    asked: list[str] = []
    real = type(app.store).copy_state
    monkeypatch.setattr(type(app.store), "copy_state", lambda self, c, p: asked.append(p) or real(self, c, p))
    assert app.index().unchanged == 5 and asked == []
    (vault / "n2.md").write_text("# Note 2\n\nchanged\n", encoding="utf-8")
    report = app.index()
    assert report.indexed == 1 and report.unchanged == 4 and asked == [str((vault / "n2.md").resolve())]
    app.close()


# --- a model that fails to load on its thread (found in review) ------------------------------

def _shipped_that_fails(tmp_path, monkeypatch, load_s: float = 0.6):
    """The shipped model's setting, a real tokenizer, and a session load that fails after
    `load_s`; each note's preparation takes 0.2 s, so the load is under way when the walk ends."""
    from vault_index.engine import indexer
    from vault_index.errors import ModelUnavailableError

    _shipped_folder(tmp_path, monkeypatch)

    def failing_load(spec, cache, shape=None):
        time.sleep(load_s)
        raise ModelUnavailableError("the shipped embedding model could not load (test)")

    monkeypatch.setattr(models_module, "open_embedder", failing_load)
    real_prepare = indexer._prepare
    monkeypatch.setattr(indexer, "_prepare", lambda *args: (real_prepare(*args), time.sleep(0.2))[0])
    settings = replace(make_settings(tmp_path), embed_model="shipped:minilm")
    return settings, lambda: App.open(settings, models=Models("shipped:minilm", "none", settings.model_cache,
                                                                rerank=False))


def test_a_sync_whose_model_fails_neither_waits_for_another_runs_embedding_nor_claims_vectors(
        tmp_path, monkeypatch):
    import subprocess
    import sys

    settings, fresh_app = _shipped_that_fails(tmp_path, monkeypatch)
    vault = tmp_path / "vault"
    write(vault, "bike.md", BIKE)
    write(vault, "garden.md", GARDEN)
    app = fresh_app()
    lock = str(app.store.embedding_lock().lock_file)
    holder = subprocess.Popen(  # another run, embedding for a long time
        [sys.executable, "-c", f"from filelock import FileLock; held = FileLock({lock!r}); held.acquire(); "
         "print('held', flush=True); import time; time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        phases: list[str] = []
        started = time.monotonic()
        report = app.index([str(vault)], progress=lambda phase, done, total: phases.append(phase))
        assert "wait" not in phases and time.monotonic() - started < 10
        assert report.indexed == 2 and not report.vector_used and "could not load" in app.models.embed_error
    finally:
        holder.kill()
        holder.wait()
        app.close()


def test_a_moved_note_with_a_model_that_fails_is_not_reported_as_embedded(tmp_path, monkeypatch):
    settings, fresh_app = _shipped_that_fails(tmp_path, monkeypatch)
    vault = tmp_path / "vault"
    write(vault, "bike.md", BIKE)
    working = lambda spec, cache, shape=None: FakeEmbedder(fingerprint=models_module._fingerprint(spec))  # noqa: E731
    with monkeypatch.context() as first_run:
        first_run.setattr(models_module, "open_embedder", working)
        app = fresh_app()
        assert app.index([str(vault)]).chunks_embedded > 0
        app.close()
    (vault / "bike.md").rename(vault / "cycling.md")  # every chunk has its vector; the model now fails
    app = fresh_app()
    report = app.index()
    assert report.indexed == 1 and not report.vector_used  # the CLI says "no vectors (...)"
    assert app.store.get_meta("embed_model") == ""
    app.close()


def test_an_edit_is_keyword_indexed_when_the_models_files_cannot_be_read(tmp_path, monkeypatch):
    folder = _shipped_folder(tmp_path, monkeypatch)
    (folder / "model.onnx").symlink_to(tmp_path / "gone.onnx")  # a dangling link: the fingerprint cannot stat it
    settings = replace(make_settings(tmp_path), embed_model="shipped:minilm")
    vault = tmp_path / "vault"
    write(vault, "bike.md", BIKE)
    app = App.open(settings, models=Models("none", "none", settings.model_cache, rerank=False))
    app.index([str(vault)])
    app.close()
    write(vault, "bike.md", BIKE + "\nsprocket\n")
    app = App.open(settings, models=Models("shipped:minilm", "none", settings.model_cache, rerank=False))
    report = app.reindex_file(str(vault / "bike.md"))
    assert report.indexed == 1 and app.store.keyword('"sprocket"', 5) and not report.vector_used
    app.close()


def test_an_edit_drops_the_vector_of_the_chunk_it_replaced(setup):
    _, vault, fresh_app = setup
    app = fresh_app()
    app.index([str(vault)])
    fingerprint = first_fingerprint(app)
    before = set(app.store.vectors_by_hash(fingerprint))
    app.close()
    write(vault, "bike.md", BIKE.replace("chain", "belt drive"))

    app = fresh_app()
    report = app.index()
    after = set(app.store.vectors_by_hash(fingerprint))
    live = {h for (_, _, h) in app.store.chunk_keys()}
    assert report.indexed == 1 and report.chunks_embedded >= 1
    assert after == live and before - after, "the replaced chunk's vector is still there"
    app.close()
