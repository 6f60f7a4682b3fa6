"""Several indexers on one PostgreSQL index, over two checkouts of ONE team source (ADR 0019): four
processes (two per checkout) in two rounds with edits between them, while sixteen searchers query.
Afterwards the database must hold each note exactly once, at its newest version: exactly what a
fresh SQLite index of the checkout with the newest versions holds, compared by relative path,
heading, lines and chunk hash; every chunk hash has one vector per model. Then a process that sees
only Bob's checkout (Alice's folder renamed away) gets every hit and note under Bob's root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import FakeEmbedder, make_settings, write
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App

pytestmark = [pytest.mark.faults, pytest.mark.extras]  # the postgres extra, through pg_database

TESTS = Path(__file__).resolve().parents[1]
NOTES = 40  # in each checkout at the start; B ends with one added and one deleted
T0 = 1_700_000_000  # the notes' mtime at the start: both checkouts alike, as two clones of one commit
INDEXER = textwrap.dedent("""
    import sys
    from dataclasses import replace
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from helpers import FakeEmbedder, make_settings
    from vault_index.engine.embedding.models import Models
    from vault_index.services.app import App
    settings = replace(make_settings(Path(sys.argv[2]), "local.db"), index_url=sys.argv[3])
    app = App.open(settings, models=Models.fixed(FakeEmbedder(), None))
    report = app.index([sys.argv[4]], name="team", checkout=True)
    app.close()
    print(report.indexed, report.removed, report.stale, report.chunks_embedded)
""")
# A searcher in a process of its own, on a machine (as far as it can tell) with one checkout only.
ONE_CHECKOUT_SEARCHER = textwrap.dedent("""
    import json, sys
    from dataclasses import replace
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from helpers import FakeEmbedder, make_settings
    from vault_index.engine.embedding.models import Models
    from vault_index.services.app import App
    settings = replace(make_settings(Path(sys.argv[2]), "local.db"), index_url=sys.argv[3])
    app = App.open(settings, models=Models.fixed(FakeEmbedder(), None))
    seen = []
    for query in ("chain brake section1", "sprockets", "garden words", "note7 section2"):
        for mode in ("keyword", "vector", "hybrid"):
            for hit in app.search(query, mode=mode, limit=10).hits:
                note = app.get_note(hit.path)
                seen.append([hit.path, note["path"], note["indexed"], note["total_lines"] >= hit.line_end])
    links = [x["path"] for x in app.store.links("backlinks", sys.argv[4])]
    print(json.dumps({"hits": seen, "backlinks": links, "sources": app.sources()}))
    app.close()
""")


def _note(i: int, extra: str = "") -> str:
    sections = "\n\n".join(f"## Part {j}\n\nnote{i} section{j} chain brake garden words {i * j}" for j in range(3))
    link = "\n\nSee [[n0]].\n" if i else ""
    return f"# Note {i}\n\n{sections}\n{extra}{link}"


def _put(root: Path, rel: str, text: str, mtime: float) -> None:
    path = write(root, rel, text)
    os.utime(path, (mtime, mtime))


def _index_round(url: str, tmp_path: Path, checkouts: list[Path]) -> tuple[list[str], float]:
    started = time.monotonic()
    procs = [
        subprocess.Popen([sys.executable, "-c", INDEXER, str(TESTS), str(tmp_path / f"p{n}"), url, str(checkout)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for n, checkout in enumerate(checkouts * 2)  # two processes per checkout
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        outputs.append(out.strip())
    return outputs, time.monotonic() - started


def _relative(path: str, roots: tuple[Path, ...]) -> str:
    for root in roots:
        if Path(path).is_relative_to(root):
            return Path(path).relative_to(root).as_posix()
    raise AssertionError(f"{path} is under no checkout")


def _contents(store, roots: tuple[Path, ...]) -> list[tuple]:
    """(relative path, heading, line_start, line_end, hash) of every chunk, sorted; duplicates kept."""
    keys = store.chunk_keys()
    rows = store.chunk_rows(cid for cid, _, _ in keys)
    return sorted((_relative(rows[c].path, roots), rows[c].heading, rows[c].line_start, rows[c].line_end, h)
                  for c, _, h in keys)


def test_four_indexers_on_two_checkouts_of_one_team_source_and_sixteen_searchers(tmp_path, pg_database):
    url = pg_database()
    a, b = tmp_path / "alice" / "team-vault", tmp_path / "bob" / "team-vault"
    for i in range(NOTES):
        _put(a, f"notes/n{i}.md", _note(i), T0)
    shutil.copytree(a, b)  # the same files and mtimes: one commit, two checkouts
    setup = App.open(replace(make_settings(tmp_path, "setup.db"), index_url=url), models=Models.fixed(None, None))
    setup.store.add_source(str(a), "team")  # Alice made the team source (docs/postgres.md): A's root is canonical
    setup.close()

    stop, errors, searches = threading.Event(), [], [0]

    def searcher():
        app = App.open(replace(make_settings(tmp_path, "s.db"), index_url=url),
                       models=Models.fixed(FakeEmbedder(), None))
        try:
            while not stop.is_set():
                hits = app.search("chain brake section1", mode="hybrid", limit=10).hits
                assert all(Path(h.path).is_relative_to(a) or Path(h.path).is_relative_to(b) for h in hits)
                spots = [(_relative(h.path, (a, b)), h.line_start) for h in hits]
                assert len(set(spots)) == len(spots), spots  # one note is never stored twice
                searches[0] += 1
                stop.wait(0.02)  # 16 searchers, not 16 busy loops starving the indexers of 2 cores
        except Exception as exc:  # noqa: BLE001 - every error counts
            errors.append(exc)
        finally:
            app.close()

    threads = [threading.Thread(target=searcher) for _ in range(16)]
    for t in threads:
        t.start()
    try:
        first, first_s = _index_round(url, tmp_path, [a, b])
        # Between the rounds Bob's checkout moves ahead, Alice's stays behind: a note edited in B only,
        # a note added in B only, a note deleted in B only, and a note both edited (Bob later).
        _put(b, "notes/n3.md", _note(3, "\n## Added\n\nan added section about sprockets\n"), T0 + 100)
        _put(b, "notes/new.md", _note(99), T0 + 100)
        (b / "notes" / "n5.md").unlink()
        _put(a, "notes/n7.md", _note(7, "\n## Alice\n\nalice's draft of note7, older\n"), T0 + 50)
        _put(b, "notes/n7.md", _note(7, "\n## Bob\n\nbob's edit of note7, newer\n"), T0 + 150)
        second, second_s = _index_round(url, tmp_path, [a, b])
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert errors == [] and searches[0] > 0
    print(f"\n4 indexers x 2 rounds ({first_s:.1f} s, {second_s:.1f} s), {searches[0]} searches by 16 "
          f"searchers; per process 'indexed removed stale embedded': {first} then {second}")

    fake = FakeEmbedder()
    pg = App.open(replace(make_settings(tmp_path, "check.db"), index_url=url), models=Models.fixed(fake, None))
    sqlite = App.open(make_settings(tmp_path, "fresh-b.db"), models=Models.fixed(FakeEmbedder(), None))
    try:
        sqlite.index([str(b)])  # what a fresh index of the checkout with the newest versions holds
        expected = _contents(sqlite.store, (b,))
        got = _contents(pg.store, (a, b))
        assert got == expected  # each note once, at its newest version: no duplicate, missing or stale chunk
        assert len(set(got)) == len(got)
        [source] = pg.sources()
        assert source["files"] == NOTES and [c["path"] for c in source["checkouts"]] == [str(a), str(b)]
        assert pg.store.counts() == {"sources": 1, "files": NOTES, "chunks": len(expected)}
        assert pg.store.chunks_missing_vectors(fake.fingerprint) == []
        hashes = {h for *_, h in got}
        stored = pg.store.vectors_by_hash(fake.fingerprint)
        assert set(stored) == hashes and pg.store.vector_count(fake.fingerprint) == len(got)
        assert pg.store.db.execute("SELECT COUNT(*), COUNT(DISTINCT (hash, model)) FROM embeddings").fetchone() == (
            len(hashes), len(hashes))  # one vector per chunk hash and model
        texts = [row.text for row in pg.store.chunk_rows(c for c, _, _ in pg.store.chunk_keys()).values()]
        assert sum("sprockets" in t for t in texts) == 1  # B's edit landed, once
        assert any("bob's edit" in t for t in texts) and not any("alice's draft" in t for t in texts)
        assert source["path"] == str(a)  # both folders are here: paths are shown as stored (under A)
        # the keyword counts the indexers kept (ADR 0028) are those of the stored chunks, and SQLite's
        db = pg.store.db
        assert db.execute("SELECT term, df FROM term_stats ORDER BY term").fetchall() == db.execute(
            "SELECT term, COUNT(*) FROM postings GROUP BY term ORDER BY term").fetchall()
        assert db.execute("SELECT chunks, tokens FROM keyword_stats").fetchone() == db.execute(
            "SELECT COUNT(*), SUM(length) FROM chunks").fetchone()
        for term in ("sprockets", "note", "chain", "section1"):
            assert pg.store.term_doc_count(f'"{term}"', 10**6) == sqlite.store.term_doc_count(f'"{term}"', 10**6)
    finally:
        sqlite.close()
        pg.close()

    # Must-show 2: Alice's folder goes away; a process that sees only Bob's checkout.
    a.rename(a.with_name("moved-away"))
    proc = subprocess.run([sys.executable, "-c", ONE_CHECKOUT_SEARCHER, str(TESTS), str(tmp_path / "only"), url,
                           str(b / "notes" / "n0.md")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert len(seen["hits"]) >= 20
    for hit_path, note_path, indexed, fits in seen["hits"]:
        assert Path(hit_path).is_relative_to(b) and note_path == hit_path and indexed and fits, hit_path
    linking = [f"n{i}" for i in range(1, NOTES) if i != 5] + ["new"]
    assert sorted(seen["backlinks"]) == sorted(str(b / "notes" / f"{n}.md") for n in linking)
    assert seen["sources"][0]["path"] == str(b)
    print(f"one-checkout searcher: {len(seen['hits'])} hits, every one and its get_note under {b}")
