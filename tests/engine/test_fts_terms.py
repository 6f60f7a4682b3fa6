"""FTS5's terms from Python (engine/stores/fts_terms): the same terms, in the same positions, as
FTS5's own index of the same texts, for prose, code, contractions and text beyond ASCII."""

from __future__ import annotations

import sqlite3

from vault_index.engine.stores.fts_terms import TOKENIZE, Terms

TEXTS = [
    "Can't stop: std::fs::read_to_string(path)?.unwrap_or_default() in Vec<T> and __init__.py",
    "Café naïve résumé Ǆemal ﬁle ½ Ⅻ 中文字 😀 ß İstanbul ΑΒΓ ab\u200bcd x \u0301 y e\u0301te",
    "running runs ran easily fairness x-ray 3.14 v1.2.3 e.g. o'neil rock'n'roll",
    "", "   \n\t ", "a" * 70 + " " + "ſtraße",
]


def _fts5_index(texts: list[str]) -> list[list[str]]:
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{TOKENIZE}')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    db.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(texts, 1))
    found: dict[int, list] = {}
    for doc, offset, term in db.execute("SELECT doc, offset, term FROM v"):
        found.setdefault(doc, []).append((offset, term))
    out = []
    for i in range(1, len(texts) + 1):
        pairs = sorted(found.get(i, []))
        assert [o for o, _ in pairs] == list(range(len(pairs)))  # positions without gaps
        out.append([t for _, t in pairs])
    return out


def test_terms_are_fts5s_own_for_prose_code_and_text_beyond_ascii():
    terms = Terms()
    assert terms.tokens_of(TEXTS) == _fts5_index(TEXTS)
    assert terms.tokens("Can't") == ["can", "t"] and terms.tokens("running") == ["run"]


def test_the_schema_indexes_chunks_with_the_tokenizer_the_terms_use(tmp_path):
    from vault_index.engine.stores.store import Store

    store = Store(tmp_path / "i.db")
    ddl = store.db.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()[0]
    assert f"tokenize='{TOKENIZE}'" in ddl
