"""A note whose frontmatter holds `.nan` or `.inf` (valid YAML) must not break filtered search.

Python's json writes them as NaN/Infinity, which SQLite's JSON functions call "malformed JSON";
that word also made the recovery code take a healthy index for a damaged one.
"""

import sqlite3

from helpers import FakeEmbedder, write
from vault_index.engine.stores import recovery
from vault_index.services.search.search import Filters


def test_filtering_by_collection_works_beside_a_note_with_nan_in_its_frontmatter(tmp_path, open_app):
    root = tmp_path / "v"
    write(root, "a.md", "---\ncollection: work\nscore: .nan\nlimit: -.inf\n---\n# A\n\nalpha words\n")
    write(root, "b.md", "---\ncollection: work\n---\n# B\n\nalpha beta\n")
    write(root, "c.md", "---\ncollection: home\n---\n# C\n\nalpha gamma\n")
    app = open_app(FakeEmbedder())
    app.index([str(root)])
    result = app.search("alpha", "keyword", 5, Filters(collection="work"))
    assert sorted(h.path.rsplit("/", 1)[-1] for h in result.hits) == ["a.md", "b.md"]
    damage = [n for n in result.notices if not n.startswith("nothing relevant")]  # the confidence's say is not damage
    assert not damage and not list(tmp_path.glob("index.db.corrupt-*"))


def test_an_sql_error_that_says_malformed_is_not_damage_when_sqlite_says_otherwise():
    db = sqlite3.connect(":memory:")
    try:
        db.execute("SELECT json_extract('{\"a\": NaN}', '$.a')")
    except sqlite3.OperationalError as exc:
        assert "malformed" in str(exc)
        assert not recovery.is_damage(exc)
    finally:
        db.close()
