"""Several indexers on one PostgreSQL index: four processes over two checkouts of one vault, in two
rounds with edits between them, while sixteen searchers query; afterwards the database must hold
exactly what a fresh SQLite index of each checkout holds (no duplicate, missing or stale chunk),
every chunk has its vector, and the two checkouts share one vector per chunk hash."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import FakeEmbedder, make_settings, write
from vault_index.engine.models import Models
from vault_index.services.app import App

pytestmark = pytest.mark.faults
pytest.importorskip("psycopg")

TESTS = Path(__file__).resolve().parents[1]
INDEXER = textwrap.dedent("""
    import sys
    from dataclasses import replace
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from helpers import FakeEmbedder, make_settings
    from vault_index.engine.models import Models
    from vault_index.services.app import App
    settings = replace(make_settings(Path(sys.argv[2]), "local.db"), index_url=sys.argv[3])
    app = App.open(settings, models=Models.fixed(FakeEmbedder(), None))
    report = app.index([sys.argv[4]])
    app.close()
    print(report.indexed, report.removed, report.chunks_embedded)
""")


def _note(i: int, extra: str = "") -> str:
    sections = "\n\n".join(f"## Part {j}\n\nnote{i} section{j} chain brake garden words {i * j}" for j in range(3))
    return f"# Note {i}\n\n{sections}\n{extra}"


def _index_round(url: str, tmp_path: Path, checkouts: list[Path]) -> list[str]:
    procs = [
        subprocess.Popen([sys.executable, "-c", INDEXER, str(TESTS), str(tmp_path / f"p{n}"), url, str(checkout)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for n, checkout in enumerate(checkouts * 2)  # two processes per checkout
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        outputs.append(out)
    return outputs


def _contents(store) -> list[tuple]:
    """(path, heading, line_start, line_end, hash) of every chunk, sorted; duplicates kept."""
    keys = store.chunk_keys()
    rows = store.chunk_rows(cid for cid, _, _ in keys)
    return sorted((rows[c].path, rows[c].heading, rows[c].line_start, rows[c].line_end, h) for c, _, h in keys)


def test_four_indexers_on_two_checkouts_and_sixteen_searchers_leave_exactly_the_files(tmp_path, pg_database):
    url = pg_database()
    a, b = tmp_path / "checkout-a", tmp_path / "checkout-b"
    for i in range(12):
        write(a, f"notes/n{i}.md", _note(i))
    shutil.copytree(a, b)

    stop, errors, searches = threading.Event(), [], [0]

    def searcher():
        app = App.open(replace(make_settings(tmp_path, "s.db"), index_url=url),
                       models=Models.fixed(FakeEmbedder(), None))
        try:
            while not stop.is_set():
                result = app.search("chain brake section1", mode="hybrid", limit=5)
                assert all(Path(h.path).is_relative_to(a) or Path(h.path).is_relative_to(b) for h in result.hits)
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
        _index_round(url, tmp_path, [a, b])
        # Between the rounds: an edit in A, a deletion and a new note in B.
        write(a, "notes/n3.md", _note(3, "\n## Added\n\nan added section about sprockets\n"))
        (b / "notes" / "n5.md").unlink()
        write(b, "notes/new.md", _note(99))
        _index_round(url, tmp_path, [a, b])
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert errors == [] and searches[0] > 0

    fake = FakeEmbedder()
    pg = App.open(replace(make_settings(tmp_path, "check.db"), index_url=url), models=Models.fixed(fake, None))
    expected = []
    for checkout in (a, b):  # what a fresh SQLite index of each checkout holds
        sqlite = App.open(make_settings(tmp_path, f"fresh-{checkout.name}.db"),
                          models=Models.fixed(FakeEmbedder(), None))
        sqlite.index([str(checkout)])
        expected += _contents(sqlite.store)
        sqlite.close()
    try:
        got = _contents(pg.store)
        assert got == sorted(expected)  # no duplicate, missing or stale chunk
        assert len(set(got)) == len(got)
        assert pg.store.chunks_missing_vectors(fake.fingerprint) == []
        hashes = {h for *_, h in got}
        assert pg.store.vector_count(fake.fingerprint) == len(got)
        stored = pg.store.vectors_by_hash(fake.fingerprint)
        assert set(stored) == hashes  # one vector per chunk hash, shared by both checkouts
        assert len(hashes) < len(got)  # (the checkouts do share most chunks)
        texts = [row.text for row in pg.store.chunk_rows(c for c, _, _ in pg.store.chunk_keys()).values()]
        assert sum("sprockets" in t for t in texts) == 1  # A's edit landed, once
    finally:
        pg.close()
