"""SQLite FTS5's own tokenizer, used from Python: the terms PostgreSQL indexes and searches (ADR 0028).

The keyword side of both backends must see the same terms, so PostgreSQL does not tokenize at
all: every term is made by FTS5 itself, through Python's sqlite3 (the very library the SQLite
store runs), with the tokenizer options of the SQLite schema (TOKENIZE). unicode61 splits text
into maximal runs of token characters, a property of each code point alone, and then folds and
stems each run on its own. So:

- which code points are token characters is asked of FTS5 once per code point seen (ASCII at
  start-up), by tokenizing "a<c>a" in an in-memory FTS5 table and reading it back through an
  fts5vocab 'instance' table: one token means <c> is a token character;
- each run is stemmed by FTS5 once per distinct run (the same table, read back the same way),
  then cached; a run that folds to nothing gives no term.

Tests compare the result with FTS5's own index of whole texts (tests/engine/test_fts_terms.py).
"""

from __future__ import annotations

import re
import sqlite3
import threading

# chunks_fts's tokenizer (sqlite_schema.m001_initial); the terms here are only FTS5's if they agree.
TOKENIZE = "porter unicode61 remove_diacritics 2"
STEM_CACHE_MAX = 500_000  # distinct runs remembered (a large vault has well under this many words)
_BATCH = 2000  # runs stemmed per round trip through the in-memory FTS5 table


class Terms:
    """FTS5's tokenizer on Python strings; thread-safe, one per process (`terms()`)."""

    def __init__(self, tokenize: str = TOKENIZE):
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(f"CREATE VIRTUAL TABLE stem USING fts5(x, tokenize='{tokenize}', content='')")
        self._db.execute("CREATE VIRTUAL TABLE stem_v USING fts5vocab(stem, instance)")
        self._stems: dict[str, str | None] = {}
        self._token_char: dict[str, bool] = {}
        self._classify([chr(c) for c in range(1, 128)])
        ascii_chars = "".join(re.escape(c) for c, ok in self._token_char.items() if ok)
        # Runs of ASCII token characters or of anything beyond ASCII (split further by code point).
        self._runs = re.compile(f"[{ascii_chars}\u0080-\U0010ffff]+")

    def _fts(self, texts: list[str]) -> dict[int, list[str]]:
        """FTS5's terms of each text (by its index), in order of position."""
        found: dict[int, list[tuple[int, str]]] = {}
        for start in range(0, len(texts), _BATCH):
            part = texts[start : start + _BATCH]
            self._db.executemany("INSERT INTO stem(rowid, x) VALUES (?, ?)",
                                 [(start + i + 1, t) for i, t in enumerate(part)])
            for doc, offset, term in self._db.execute("SELECT doc, offset, term FROM stem_v"):
                found.setdefault(doc - 1, []).append((offset, term))
            self._db.execute("INSERT INTO stem(stem) VALUES ('delete-all')")
        return {i: [t for _, t in sorted(pairs)] for i, pairs in found.items()}

    def _classify(self, chars: list[str]) -> None:
        out = self._fts([f"a{c}a" for c in chars])
        for i, c in enumerate(chars):
            self._token_char[c] = len(out.get(i, ())) == 1

    def _split(self, text: str) -> list[str]:
        """Maximal runs of token characters, as unicode61 finds them."""
        if text.isascii():
            return self._runs.findall(text)
        runs = []
        for run in self._runs.findall(text):
            if run.isascii():
                runs.append(run)
                continue
            unknown = sorted({c for c in run if c not in self._token_char})
            if unknown:
                self._classify(unknown)
            current: list[str] = []
            for c in run:
                if self._token_char[c]:
                    current.append(c)
                elif current:
                    runs.append("".join(current))
                    current = []
            if current:
                runs.append("".join(current))
        return runs

    def tokens_of(self, texts: list[str]) -> list[list[str]]:
        """FTS5's terms of each text, in order (a text's position i is its i-th term)."""
        with self._lock:
            split = [self._split(t) if t else [] for t in texts]
            missing = list(set().union(*split).difference(self._stems)) if split else []
            if missing:
                if len(self._stems) + len(missing) > STEM_CACHE_MAX:
                    self._stems.clear()
                out = self._fts(missing)
                for i, run in enumerate(missing):
                    got = out.get(i, [])
                    self._stems[run] = got[0] if got else None
            stem = self._stems.__getitem__
            made = []
            for runs in split:
                terms = list(map(stem, runs))
                made.append([t for t in terms if t is not None] if None in terms else terms)
            return made

    def tokens(self, text: str) -> list[str]:
        return self.tokens_of([text])[0]


_TERMS: Terms | None = None
_TERMS_LOCK = threading.Lock()


def terms() -> Terms:
    """The process's tokenizer (its caches are worth keeping)."""
    global _TERMS
    with _TERMS_LOCK:
        if _TERMS is None:
            _TERMS = Terms()
        return _TERMS
