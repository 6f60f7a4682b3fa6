"""Issue 22 (Low): a note that chunks past MAX_CHUNKS_PER_NOTE has its first chunks indexed and is
reported as a problem in `status` (as files over the byte limit are). On the old code every chunk
was stored and embedded (one 713 KB note: 30,000 chunks, 12 minutes) and nothing was reported."""

from __future__ import annotations

from helpers import FakeEmbedder, write
from vault_index.engine import indexer


def test_a_note_past_the_chunk_cap_is_cut_and_reported(tmp_path, open_app, monkeypatch):
    monkeypatch.setattr(indexer, "MAX_CHUNKS_PER_NOTE", 40)  # the rule, at a size a test embeds quickly
    notes = tmp_path / "notes"
    sections = "".join(f"## Part {i}\n\n{'lorem ipsum dolor sit amet ' * 60}section{i}\n\n" for i in range(300))
    write(notes, "huge.md", f"# Huge\n\n{sections}")
    write(notes, "small.md", "# Small\n\njust one part\n")
    embedder = FakeEmbedder()
    app = open_app(embedder)
    report = app.index([str(notes)])
    huge = str(notes / "huge.md")
    kept = app.store.db.execute("SELECT COUNT(*) FROM chunks JOIN files ON files.id = chunks.file_id "
                                "WHERE files.path = ?", (huge,)).fetchone()[0]
    assert kept == 40
    problems = {p["path"]: p["message"] for p in app.status()["problems"]}
    assert "only the first 40 of its" in problems[huge] and "split the note" in problems[huge]
    assert str(notes / "small.md") not in problems
    assert any(path == huge and "per-note cap" in message for path, message in report.problems)
    assert app.search("section5", mode="keyword").hits  # what was kept is searchable
