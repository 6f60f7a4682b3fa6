"""SPEC section 11: each kind of bad input gets a report or a clear error, never a crash, and no
note file is ever modified by indexing, searching or reading (bytes and mtime compared)."""

from __future__ import annotations

import os
import sqlite3
import subprocess

import pytest
from helpers import CLI, FakeEmbedder, cli_env, snapshot, write
from vault_index.config import MAX_FILE_BYTES
from vault_index.errors import OutsideSourcesError, UsageError
from vault_index.services.search.search import MODES


@pytest.fixture
def untouched(vault):
    """Fails the test if any file under the vault changed (bytes or mtime)."""
    holder = {}
    yield holder
    assert holder, "the test must take its snapshot"
    assert snapshot(vault) == holder["before"], "a note file was modified"


def _problems(report, path) -> list[str]:
    return [m for p, m in report.problems if p == str(path)]


def test_malformed_yaml_is_reported_and_the_body_is_still_indexed(vault, open_app, untouched):
    bad = write(vault, "bad-yaml.md", "---\ntitle: [broken\n  : x\n---\n# Broken\n\nkookaburra lives here\n")
    untouched["before"] = snapshot(vault)
    app = open_app(FakeEmbedder())
    report = app.index([str(vault)])
    assert any("invalid YAML" in m and "body indexed" in m for m in _problems(report, bad))
    assert [p["path"] for p in app.status()["problems"]] == [str(bad)]
    for mode in MODES:
        assert app.search("kookaburra", mode=mode).hits[0].path == str(bad), mode
    assert "kookaburra" in app.get_note(str(bad))["content"]
    bad.write_text("# Fixed\n\nkookaburra\n")  # fixing the file clears the problem
    os.utime(bad, ns=(bad.stat().st_atime_ns, bad.stat().st_mtime_ns + 10**9))
    untouched["before"] = snapshot(vault)  # the test's own edit; indexing again must change nothing
    app.index()
    assert app.status()["problems"] == []


def test_no_frontmatter_and_an_empty_file_index_without_problems(vault, open_app, untouched):
    plain = write(vault, "plain.md", "no heading, no frontmatter: platypus\n")
    empty = write(vault, "empty.md", "")
    only_fm = write(vault, "only-frontmatter.md", "---\ntitle: Nothing else\n---\n")
    untouched["before"] = snapshot(vault)
    app = open_app(FakeEmbedder())
    report = app.index([str(vault)])
    assert report.problems == [] and report.indexed == 7
    hit = app.search("platypus", mode="hybrid").hits[0]
    assert hit.path == str(plain) and hit.heading == "plain"
    note = app.get_note(str(empty))
    # an empty file is one empty line, as an editor shows it: line_end is never below line_start
    assert note["content"] == "" and note["total_lines"] == 1 and note["indexed"]
    assert note["line_start"] == note["line_end"] == 1
    assert app.get_note(str(only_fm))["title"] == "Nothing else"


def test_a_binary_file_named_md_is_skipped_reported_and_not_served(vault, open_app, untouched):
    binary = vault / "image.md"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR binaryword" + bytes(range(256)))
    untouched["before"] = snapshot(vault)
    app = open_app(FakeEmbedder())
    report = app.index([str(vault)])
    assert _problems(report, binary) == ["skipped: binary file"]
    assert app.store.file_state(str(binary)) is None
    assert all(h.path != str(binary) for m in MODES for h in app.search("binaryword IHDR", mode=m).hits)
    with pytest.raises(UsageError, match="binary"):
        app.get_note(str(binary))


def test_a_file_that_turns_binary_is_dropped_from_the_index(vault, open_app, untouched):
    note = vault / "bike.md"
    app = open_app(FakeEmbedder())
    app.index([str(vault)])
    assert app.search("derailleur", mode="keyword").hits
    note.write_bytes(b"\x00" * 100)
    untouched["before"] = snapshot(vault)
    report = app.index()
    assert _problems(report, note) == ["skipped: binary file"]
    assert app.search("derailleur", mode="keyword").hits == ()


def test_a_non_utf8_file_is_skipped_and_reported(vault, open_app, untouched):
    latin = vault / "latin1.md"
    latin.write_bytes("# Café\n\ncrème brûlée wallaby\n".encode("latin-1"))
    untouched["before"] = snapshot(vault)
    app = open_app(FakeEmbedder())
    report = app.index([str(vault)])
    (message,) = _problems(report, latin)
    assert message.startswith("skipped: not UTF-8")
    assert app.search("wallaby", mode="keyword").hits == ()
    assert report.indexed == 4  # the rest of the vault is indexed
    assert "wallaby" in app.get_note(str(latin))["content"]  # still readable, with replacement chars


def test_a_utf8_bom_is_accepted(vault, open_app, untouched):
    bom = vault / "bom.md"
    bom.write_bytes("\ufeff---\ntags: [bomtag]\n---\n# BOM\n\nnumbat\n".encode())
    untouched["before"] = snapshot(vault)
    app = open_app(None)
    report = app.index([str(vault)])
    assert report.problems == []
    assert app.store.file_record(str(bom))["tags"] == ["bomtag"]


def test_a_huge_file_is_skipped_and_reported(vault, open_app, untouched):
    huge = vault / "huge.md"
    line = b"capybara " * 10 + b"\n"
    huge.write_bytes(line * (MAX_FILE_BYTES // len(line) + 2))
    assert huge.stat().st_size > MAX_FILE_BYTES
    untouched["before"] = snapshot(vault)
    fake = FakeEmbedder()
    app = open_app(fake)
    report = app.index([str(vault)])
    (message,) = _problems(report, huge)
    assert "over the" in message and "limit" in message
    assert not any("capybara" in t for t in fake.embedded)
    assert app.search("capybara", mode="keyword").hits == ()
    with pytest.raises(UsageError, match="over the 2,000,000 byte limit"):  # what is not indexed is not served
        app.get_note(str(huge), max_lines=2)


def test_a_symlink_loop_inside_a_source_terminates(vault, open_app, untouched):
    os.symlink(vault, vault / "kitchen" / "loop")  # dir symlink to an ancestor
    os.symlink(vault / "kitchen", vault / "kitchen" / "self")  # dir symlink to its own parent
    untouched["before"] = snapshot(vault)
    app = open_app(FakeEmbedder())
    report = app.index([str(vault)])
    assert report.scanned == 4 and report.indexed == 4
    assert app.store.counts()["files"] == 4
    assert len(app.search("sourdough starter", mode="keyword").hits) == 1


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink-out", "secrets", "secrets-absolute", "hidden"])
def test_paths_outside_the_sources_or_never_served_are_refused(vault, open_app, untouched, tmp_path, kind):
    outside = write(tmp_path, "outside.md", "# Outside\n\nnot yours\n")
    os.symlink(outside, vault / "link-out.md")
    untouched["before"] = snapshot(vault)
    app = open_app(FakeEmbedder())
    app.index([str(vault)])
    path = {
        "dotdot": "../outside.md",
        "absolute": str(outside),
        "symlink-out": "link-out.md",
        "secrets": "secrets/keys.md",
        "secrets-absolute": str(vault / "secrets" / "keys.md"),
        "hidden": ".hidden/notes.md",
    }[kind]
    with pytest.raises(OutsideSourcesError):
        app.get_note(path)


def test_secrets_are_never_indexed_nor_found(vault, open_app, untouched):
    untouched["before"] = snapshot(vault)
    fake = FakeEmbedder()
    app = open_app(fake)
    app.index([str(vault)])
    assert not any("zanzibar" in t for t in fake.embedded)
    assert app.store.db.execute("SELECT COUNT(*) FROM files WHERE path LIKE '%/secrets/%'").fetchone()[0] == 0
    for mode in MODES:
        assert not any("keys.md" in h.path or "hidden" in h.path for h in app.search("zanzibarkey api keys",
                                                                                    mode=mode).hits)


FTS_QUERIES = [
    '"', '""', '"unbalanced quote', 'soil AND', 'AND', 'OR NOT', 'NOT soil', 'soil*', '*', 'NEAR(soil moisture)',
    'NEAR(', '-soil', 'soil:', 'title:soil', '^soil', '(soil', 'soil)', '()', '{soil}', "soil's", 'a"b"c',
    'soil + moisture', 'col:"x" OR y*', '\x00soil', '🌱 soil',
]

# quoted, these still reach the word "soil" (an operator would have excluded or broken them)
MUST_FIND_SOIL = {"soil AND", "NOT soil", "soil*", "NEAR(soil moisture)", "-soil", "soil:", "^soil", "(soil",
                  "soil)", "{soil}", "soil + moisture", "\x00soil", "🌱 soil"}


def test_fts_operators_and_quotes_in_queries_never_raise(vault, open_app, untouched):
    untouched["before"] = snapshot(vault)
    app = open_app(FakeEmbedder(), None)
    app.index([str(vault)])
    for query in FTS_QUERIES:
        for mode in MODES:
            result = app.search(query, mode=mode)
            if mode == "keyword" and query in MUST_FIND_SOIL:
                assert any(h.path.endswith("garden.md") for h in result.hits), (query, mode)


def test_very_long_queries_are_handled(vault, open_app, untouched):
    untouched["before"] = snapshot(vault)
    app = open_app(FakeEmbedder())
    app.index([str(vault)])
    for query in ("soil " * 2000, "x" * 10_000, " ".join(f"w{i}" for i in range(3000)) + " derailleur",
                  'NOT "' * 2000):
        for mode in MODES:
            result = app.search(query, mode=mode)
            assert any("cut" in n for n in result.notices)


def test_two_processes_indexing_the_same_fresh_index_at_once(tmp_path):
    vault = tmp_path / "many"
    for i in range(80):
        text = f"---\ntags: [t{i}]\n---\n# Note {i}\n\n## Part\n\nuniq{i} alpha\n\n## More\n\nbeta {i}\n"
        write(vault, f"n{i:02}.md", text)
    before = snapshot(vault)
    db = tmp_path / "shared" / "index.db"
    env = cli_env(db)
    for _attempt in range(4):  # a race needs a few chances to show
        for part in db.parent.glob("*"):
            part.unlink()
        procs = [subprocess.Popen([CLI, "index", str(vault), "--json"], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outputs = [p.communicate(timeout=60) for p in procs]
        for proc, (_out, err) in zip(procs, outputs, strict=True):
            assert proc.returncode == 0, err
        leftovers = sorted(p.name for p in db.parent.iterdir() if "corrupt" in p.name)
        assert leftovers == [], "a healthy index was moved aside as corrupt"
        check = sqlite3.connect(db)
        try:
            assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert check.execute("SELECT COUNT(*) FROM files").fetchone()[0] == 80
            assert check.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] == 160
            assert check.execute("SELECT COUNT(*) FROM chunks_fts").fetchone()[0] == 160
            orphans = check.execute("SELECT COUNT(*) FROM chunks WHERE file_id NOT IN (SELECT id FROM files)")
            assert orphans.fetchone()[0] == 0
            assert check.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH 'uniq42'").fetchone()[0] == 1
        finally:
            check.close()
    assert snapshot(vault) == before


def test_a_deleted_index_file_is_rebuilt_on_next_open(vault, open_app, untouched, tmp_path):
    untouched["before"] = snapshot(vault)
    app = open_app(FakeEmbedder())
    app.index([str(vault)])
    chunks = app.store.counts()["chunks"]
    app.close()
    for suffix in ("", "-wal", "-shm"):
        part = tmp_path / f"index.db{suffix}"
        if part.exists():
            part.unlink()
    fake = FakeEmbedder()
    app2 = open_app(fake)
    assert app2.store.counts() == {"sources": 0, "files": 0, "chunks": 0}
    assert app2.store.recovered_from is None
    app2.index([str(vault)])
    assert app2.store.counts()["chunks"] == chunks == fake.count
    assert app2.search("derailleur", mode="hybrid").hits


@pytest.mark.parametrize("garbage", [b"this is not a database " * 500, b"SQLite format 3\x00" + b"\xff" * 8000])
def test_a_corrupt_index_file_is_moved_aside_and_rebuilt(vault, open_app, untouched, tmp_path, garbage):
    untouched["before"] = snapshot(vault)
    db = tmp_path / "index.db"
    db.write_bytes(garbage)
    app = open_app(FakeEmbedder())
    moved = app.store.recovered_from
    assert moved is not None and moved.read_bytes() == garbage
    assert app.status()["recovered_from"] == str(moved)
    report = app.index([str(vault)])
    assert report.indexed == 4 and app.search("derailleur", mode="hybrid").hits
