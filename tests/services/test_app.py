"""App: incremental indexing counted with the fake embedder, note access, sources and status."""

from __future__ import annotations

import os

import pytest
from helpers import BIKE, FakeEmbedder
from vault_index.errors import NotFoundError, OutsideSourcesError, UsageError


def _distinct_chunks(app) -> int:
    return app.store.db.execute("SELECT COUNT(DISTINCT hash) FROM chunks").fetchone()[0]


def _bump_mtime(path, seconds: int = 10) -> None:
    """Make sure an edit is seen whatever the file system's timestamp granularity."""
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + seconds * 1_000_000_000))


def _paths(result) -> set[str]:
    return {os.path.basename(h.path) for h in result.hits}


def test_first_sync_embeds_every_chunk_and_an_unchanged_resync_embeds_nothing(vault, open_app, fake_embedder):
    app = open_app(fake_embedder)
    report = app.index([str(vault)])
    chunks = app.store.counts()["chunks"]
    assert chunks >= 8
    assert fake_embedder.count == _distinct_chunks(app) == chunks == report.chunks_embedded
    assert app.store.vector_count(fake_embedder.fingerprint) == chunks
    assert report.indexed == 4 and report.vector_used  # secrets/ and .hidden/ are not notes

    again = app.index()
    assert fake_embedder.count == chunks  # 0 more texts
    assert again.chunks_embedded == 0 and again.indexed == 0 and again.unchanged == 4


def test_editing_one_section_reembeds_only_that_chunk_and_search_returns_the_new_text(
    vault, open_app, fake_embedder
):
    app = open_app(fake_embedder)
    app.index([str(vault)])
    before = fake_embedder.count
    bike = vault / "bike.md"
    bike.write_text(BIKE.replace("Tubeless tyres need fresh sealant", "Tubeless tyres need quokkasealant"))
    _bump_mtime(bike)
    report = app.index()
    new_texts = fake_embedder.embedded[before:]
    assert len(new_texts) == 1 and "quokkasealant" in new_texts[0]
    assert report.chunks_embedded == 1 and report.indexed == 1
    for mode in ("keyword", "vector", "hybrid"):
        result = app.search("quokkasealant tubeless", mode=mode, limit=3)
        assert result.hits[0].path == str(bike) and "quokkasealant" in result.hits[0].snippet, mode
    assert not any("fresh sealant" in h.snippet for h in app.search("fresh sealant", mode="keyword").hits)
    # the old chunk's vector is pruned with it
    assert app.store.db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] == _distinct_chunks(app)


def test_adding_a_section_shifts_lines_but_reembeds_only_the_new_chunk(vault, open_app, fake_embedder):
    app = open_app(fake_embedder)
    app.index([str(vault)])
    before = fake_embedder.count
    bike = vault / "bike.md"
    bike.write_text(BIKE.replace("## Chain", "## Saddle\n\nRaise the saddle a little.\n\n## Chain"))
    _bump_mtime(bike)
    app.index()
    assert fake_embedder.count - before == 1 and "Saddle" in fake_embedder.embedded[-1]
    hit = app.search("degreaser derailleur", mode="keyword").hits[0]
    lines = bike.read_text().split("\n")
    assert "degreaser" in lines[hit.line_start - 1]  # line numbers follow the edit


def test_deleting_a_note_removes_it_from_results(vault, open_app, fake_embedder):
    app = open_app(fake_embedder)
    app.index([str(vault)])
    assert "sourdough.md" in _paths(app.search("sourdough starter rye", mode="hybrid"))
    (vault / "kitchen" / "sourdough.md").unlink()
    report = app.index()
    assert report.removed == 1 and fake_embedder.count == _distinct_chunks(app) + 1
    for mode in ("keyword", "vector", "hybrid", "grep"):
        assert "sourdough.md" not in _paths(app.search("sourdough starter rye", mode=mode)), mode


def test_touching_mtime_without_changing_content_embeds_nothing(vault, open_app, fake_embedder):
    app = open_app(fake_embedder)
    app.index([str(vault)])
    before = fake_embedder.count
    garden = vault / "garden.md"
    _bump_mtime(garden, 100)
    report = app.index()
    assert fake_embedder.count == before and report.indexed == 0 and report.unchanged == 4
    checkout = app.store.checkouts()[0][0]
    # recorded as this checkout's copy: not re-read next time; the stored version keeps the mtime of
    # the copy that brought its content in (ADR 0019: the newest-mtime rule compares with it)
    assert app.store.copy_state(checkout, str(garden)).mtime == garden.stat().st_mtime
    assert app.store.file_state(str(garden)).mtime == pytest.approx(garden.stat().st_mtime - 100)


def test_a_model_change_reembeds_everything(vault, open_app, fake_embedder):
    app = open_app(fake_embedder)
    app.index([str(vault)])
    chunks = app.store.counts()["chunks"]
    app.close()
    other = FakeEmbedder(fingerprint="fake-bow-64-v2")
    app2 = open_app(other)
    report = app2.index()
    assert other.count == chunks == report.chunks_embedded
    assert app2.store.vector_count("fake-bow-64-v2") == chunks
    assert app2.status()["embed_model"] == "fake-bow-64-v2"
    assert app2.search("capacitive probe", mode="vector").vector_used


def test_reindex_file_updates_one_note_and_ignores_files_outside_sources(vault, open_app, fake_embedder, tmp_path):
    app = open_app(fake_embedder)
    app.index([str(vault)])
    before = fake_embedder.count
    new = vault / "new-note.md"
    new.write_text("# Wombat\n\nwombatcount is three\n")
    report = app.reindex_file(str(new))
    assert report is not None and report.indexed == 1 and fake_embedder.count == before + 1
    assert _paths(app.search("wombatcount", mode="keyword")) == {"new-note.md"}
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# x\n\nwombatcount\n")
    assert app.reindex_file(str(outside)) is None
    new.unlink()
    assert app.reindex_file(str(new)).removed == 1
    assert app.search("wombatcount", mode="keyword").hits == ()


def test_get_note_returns_a_window_of_lines(vault, open_app):
    app = open_app(None)
    app.index([str(vault)])
    note = app.get_note("bike.md", start_line=3, max_lines=2)
    lines = (vault / "bike.md").read_text().splitlines()
    assert note["content"] == "\n".join(lines[2:4])
    assert (note["line_start"], note["line_end"], note["total_lines"]) == (3, 4, len(lines))
    assert note["truncated"] and note["indexed"] and note["title"] == "Bike maintenance"
    full = app.get_note(str(vault / "garden.md"))
    assert full["content"] == (vault / "garden.md").read_text().rstrip("\n")
    assert full["frontmatter"]["status"] == "canonical" and not full["truncated"]


def test_get_note_errors(vault, open_app, tmp_path):
    app = open_app(None)
    with pytest.raises(NotFoundError):
        app.get_note("bike.md")  # nothing registered yet
    app.index([str(vault)])
    with pytest.raises(NotFoundError):
        app.get_note("no-such-note.md")
    with pytest.raises(UsageError):
        app.get_note("bike.md", start_line=0)
    with pytest.raises(UsageError):
        app.get_note("bike.md", max_lines=100_000)
    with pytest.raises(OutsideSourcesError):
        app.get_note(str(tmp_path / "index.db"))


def test_sources_remove_and_status(vault, open_app, fake_embedder, tmp_path):
    app = open_app(fake_embedder)
    other = tmp_path / "other"
    other.mkdir()
    (other / "o.md").write_text("# Other\n\notterword\n")
    app.index([str(vault), str(other)])
    stats = {s["path"]: s for s in app.sources()}
    assert stats[str(vault)]["files"] == 4 and stats[str(other)]["files"] == 1
    status = app.status()
    assert status["files"] == 5 and status["vectors"] == status["chunks"] and status["vectors_live"]
    assert app.remove(str(other)) == 1
    assert [s["path"] for s in app.sources()] == [str(vault)]
    assert app.search("otterword", mode="keyword").hits == ()
    with pytest.raises(NotFoundError):
        app.remove(str(other))


def test_index_of_a_missing_path_is_a_clear_error(open_app, tmp_path):
    app = open_app(None)
    with pytest.raises(NotFoundError, match="does not exist"):
        app.index([str(tmp_path / "nope")])
