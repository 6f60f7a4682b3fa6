"""PostgreSQL's keyword index: FTS5's own terms (engine/stores/fts_terms), postings with each
term's count in each chunk, per-term document counts and the corpus totals, all written in the
transaction that writes the chunks, and FTS5's bm25 computed from them in SQL (ADR 0028).

Tables (m004_keyword_terms):
- chunks.terms: the chunk's terms in order, columns (title, heading, body) on their own line,
  terms separated by one space (FTS5 terms hold neither); chunks.length: how many (FTS5's
  row size, the D of bm25). Phrases are checked against `terms`, and a chunk's postings found
  from it when the chunk goes.
- postings(term, chunk_id) INCLUDE (tf, length): read by index-only scans, one range per term.
- term_stats(term, df): chunks holding the term (FTS5's nHit of a one-term phrase).
- keyword_stats: the one row of totals, chunks and terms (FTS5's row count and total size).
Every write transaction already holds the store's WRITE_LOCK, so updates to term_stats and
keyword_stats never contend with another writer's (ADR 0028 weighs per-writer delta rows).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

from vault_index.engine.stores.fts_terms import terms as fts_terms

# FTS5's bm25 (sqlite ext/fts5/fts5_aux.c, fts5Bm25Function): k1, b, and the floor of an IDF.
K1, B, IDF_FLOOR = 1.2, 0.75, 1e-6
COLUMN_SEP, TERM_SEP = "\n", " "
# One phrase's term of bm25 for a chunk, as fts5_aux.c computes it: idf * (f * (k1 + 1)) /
# (f + k1 * (1 - b + b * D / avgdl)); parameters idf, k1 + 1, k1, 1 - b, b, avgdl.
_TERM_SCORE = "%s * (({f} * %s) / ({f} + %s * (%s + %s * {d} / %s)))"

_MATCH_TOKEN = re.compile(r'"(?:[^"]|"")*"|\S+')


def parse_match(match: str) -> tuple[list[str], str]:
    """(terms, "OR" or "AND") of the FTS5 text services/query.fts_match and quote() build.

    That grammar only (quoted terms joined by one operator): anything else is a programming
    error, refused rather than guessed at.
    """
    tokens = _MATCH_TOKEN.findall(match)
    terms, ops = tokens[0::2], set(tokens[1::2])
    if not terms or ops - {"OR", "AND"} or len(ops) > 1 or not all(len(t) >= 2 and t[0] == t[-1] == '"' for t in terms):
        raise ValueError(f"not a keyword query of services/search/query.py: {match!r}")
    return [t[1:-1].replace('""', '"') for t in terms], (ops.pop() if ops else "OR")


def chunk_terms(title: str | None, heading: str | None, text: str | None) -> tuple[str, int, Counter]:
    """(terms column, length, term counts) of one chunk, as FTS5 indexes its three columns."""
    return chunks_terms([(title, heading, text)])[0]


def chunks_stored(chunks: list[tuple[str | None, str | None, str | None]]) -> list[tuple[str, int]]:
    """(terms column, length) of many chunks: what the bulk copy stores (migrate_store)."""
    columns = fts_terms().tokens_of([part or "" for chunk in chunks for part in chunk])
    return [(f"{TERM_SEP.join(columns[i])}{COLUMN_SEP}{TERM_SEP.join(columns[i + 1])}{COLUMN_SEP}"
             f"{TERM_SEP.join(columns[i + 2])}", len(columns[i]) + len(columns[i + 1]) + len(columns[i + 2]))
            for i in range(0, len(columns), 3)]


def chunks_terms(chunks: list[tuple[str | None, str | None, str | None]]) -> list[tuple[str, int, Counter]]:
    """chunk_terms of many chunks at once (one pass through FTS5 for the words not seen before)."""
    columns = fts_terms().tokens_of([part or "" for chunk in chunks for part in chunk])
    out = []
    for i in range(0, len(columns), 3):
        title, heading, body = columns[i : i + 3]
        counts = Counter(title)
        counts.update(heading)
        counts.update(body)
        out.append((f"{TERM_SEP.join(title)}{COLUMN_SEP}{TERM_SEP.join(heading)}{COLUMN_SEP}{TERM_SEP.join(body)}",
                    len(title) + len(heading) + len(body), counts))
    return out


def phrase_count(stored: str, phrase: tuple[str, ...]) -> int:
    """Instances of `phrase` in a chunk's terms column (within one column, overlaps counted, as
    FTS5 counts a phrase's instances)."""
    n, k = 0, len(phrase)
    for column in stored.split(COLUMN_SEP):
        seq = column.split(TERM_SEP) if column else []
        n += sum(1 for j in range(len(seq) - k + 1) if tuple(seq[j : j + k]) == phrase)
    return n


def m004_keyword_terms(db) -> None:
    """FTS5's terms in PostgreSQL (ADR 0028): the `english` tsvector and its GIN index go; the
    terms, postings and counts come, filled for the chunks already stored."""
    for statement in (
        "ALTER TABLE chunks DROP COLUMN tsv",
        "ALTER TABLE chunks ADD COLUMN terms TEXT NOT NULL DEFAULT '', ADD COLUMN length INTEGER NOT NULL DEFAULT 0",
        'CREATE TABLE postings(term TEXT COLLATE "C" NOT NULL, chunk_id BIGINT NOT NULL, tf INTEGER NOT NULL, '
        "length INTEGER NOT NULL, CONSTRAINT postings_pkey PRIMARY KEY (term, chunk_id) INCLUDE (tf, length))",
        'CREATE TABLE term_stats(term TEXT COLLATE "C" PRIMARY KEY, df BIGINT NOT NULL)',
        "CREATE TABLE keyword_stats(id INTEGER PRIMARY KEY CHECK (id = 1), chunks BIGINT NOT NULL, "
        "tokens BIGINT NOT NULL)",
        "INSERT INTO keyword_stats VALUES (1, 0, 0)",
    ):
        db.execute(statement)
    after = 0
    while rows := db.execute("SELECT id, title, heading, text FROM chunks WHERE id > %s ORDER BY id LIMIT 1000",
                             (after,)).fetchall():
        made = []
        for (cid, *_), (stored, length, counts) in zip(rows, chunks_terms([r[1:] for r in rows]), strict=True):
            db.execute("UPDATE chunks SET terms = %s, length = %s WHERE id = %s", (stored, length, cid))
            made.append((cid, length, counts))
        add_postings(db, made)
        after = rows[-1][0]


def add_postings(db, chunks: list[tuple[int, int, Counter]]) -> None:
    """Postings and counts for new chunks (chunk id, length, term counts), in the caller's transaction."""
    if not chunks:
        return
    term, cid, tf, length = [], [], [], []
    df: Counter = Counter()
    for chunk_id, n, counts in chunks:
        for t, c in counts.items():
            term.append(t)
            cid.append(chunk_id)
            tf.append(c)
            length.append(n)
        df.update(counts.keys())
    db.execute("INSERT INTO postings(term, chunk_id, tf, length) "
               "SELECT * FROM unnest(%s::text[], %s::bigint[], %s::int[], %s::int[])", (term, cid, tf, length))
    _count(db, df, len(chunks), sum(n for _, n, _ in chunks))


def remove_postings(db, file_ids: Iterable[int]) -> None:
    """Postings and counts of the chunks of these files go (before the chunks themselves)."""
    rows = db.execute("SELECT id, terms, length FROM chunks WHERE file_id = ANY(%s)", (list(file_ids),)).fetchall()
    if not rows:
        return
    term, cid = [], []
    df: Counter = Counter()
    for chunk_id, stored, _ in rows:
        distinct = set(stored.split()) if stored else set()
        term.extend(distinct)
        cid.extend([chunk_id] * len(distinct))
        df.update({t: -1 for t in distinct})
    db.execute("DELETE FROM postings p USING unnest(%s::text[], %s::bigint[]) AS d(term, chunk_id) "
               "WHERE p.term = d.term AND p.chunk_id = d.chunk_id", (term, cid))
    _count(db, df, -len(rows), -sum(n for _, _, n in rows))


def _count(db, df: Counter, chunks: int, tokens: int) -> None:
    """Apply document-count and total deltas; a term no chunk holds any more leaves term_stats."""
    changed = sorted(t for t, d in df.items() if d)
    if changed:
        db.execute("INSERT INTO term_stats(term, df) SELECT * FROM unnest(%s::text[], %s::bigint[]) "
                   "ON CONFLICT (term) DO UPDATE SET df = term_stats.df + EXCLUDED.df",
                   (changed, [df[t] for t in changed]))
        db.execute("DELETE FROM term_stats WHERE term = ANY(%s) AND df <= 0", (changed,))
    db.execute("UPDATE keyword_stats SET chunks = chunks + %s, tokens = tokens + %s WHERE id = 1", (chunks, tokens))


class PgKeywords:
    """PgStore's keyword reads (a mixin): FTS5's terms, counts and bm25, from the tables above."""

    def chunk_count(self) -> int:
        """Chunks in the index: the kept total, one indexed row (no count at query time)."""
        return self.db.execute("SELECT chunks FROM keyword_stats WHERE id = 1").fetchone()[0]

    def _phrases(self, texts: list[str]) -> list[tuple[str, ...]]:
        """Each quoted query text as FTS5 reads it: the phrase of its terms."""
        return [tuple(t) for t in fts_terms().tokens_of(texts)]

    def _phrase_hits(self, phrase: tuple[str, ...]) -> dict[int, tuple[int, int]]:
        """{chunk id: (instances, length)} of a phrase of several terms: chunks holding all of its
        terms (postings), then the order checked on their terms column."""
        distinct = sorted(set(phrase))
        rows = self.db.execute(
            "SELECT c.id, c.terms, c.length FROM chunks c WHERE c.id IN (SELECT chunk_id FROM postings "
            "WHERE term = ANY(%s) GROUP BY chunk_id HAVING COUNT(*) = %s)", (distinct, len(distinct))).fetchall()
        hits = {cid: (phrase_count(stored, phrase), n) for cid, stored, n in rows}
        return {cid: hit for cid, hit in hits.items() if hit[0]}

    def _counts(self, phrases: list[tuple[str, ...]], multi: dict[int, dict]) -> tuple[int, int, list[int]]:
        """(chunks, terms in all chunks, each phrase's document count), in one round trip."""
        singles = sorted({p[0] for p in phrases if len(p) == 1})
        rows = self.db.execute("SELECT k.chunks, k.tokens, t.term, t.df FROM keyword_stats k LEFT JOIN term_stats t "
                               "ON t.term = ANY(%s) WHERE k.id = 1", (singles,)).fetchall()
        df = {term: n for _, _, term, n in rows if term is not None}
        per_phrase = [len(multi[i]) if i in multi else (df.get(p[0], 0) if p else 0) for i, p in enumerate(phrases)]
        return rows[0][0], rows[0][1], per_phrase

    def term_doc_count(self, match: str, cap: int) -> int:
        texts, _ = parse_match(match)
        phrases = self._phrases(texts)
        multi = {i: self._phrase_hits(p) for i, p in enumerate(phrases) if len(p) > 1}
        return min(cap, sum(self._counts(phrases, multi)[2]))

    def keyword(self, match: str, limit: int) -> list[tuple[int, float]]:
        """FTS5's bm25 over FTS5's terms, higher is better (the SQLite side's flipped bm25).

        The same arithmetic as fts5_aux.c, in the same order (each phrase's IDF from its document
        count, floored at 1e-6; its instances f and the chunk's length D; the phrases' terms added
        in query order), so scores agree with SQLite's to the last bit and rank alike.
        """
        texts, op = parse_match(match)
        phrases = self._phrases(texts)
        if (op == "AND" and not all(phrases)) or not any(phrases):
            return []
        multi = {i: self._phrase_hits(p) for i, p in enumerate(phrases) if len(p) > 1}
        n_rows, n_tokens, n_hits = self._counts(phrases, multi)
        if not n_rows:
            return []
        idf = []
        for n_hit in n_hits:
            value = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
            idf.append(value if value > 0.0 else IDF_FLOOR)
        avgdl = float(n_tokens) / float(n_rows)
        sources, args = [], []
        for i, p in enumerate(phrases):
            if not p:
                continue
            term = _TERM_SCORE.format(f="tf::float8", d="length::float8")
            if len(p) == 1:
                sources.append(f"SELECT chunk_id, {term} AS s FROM postings WHERE term = %s")
                args += [idf[i], K1 + 1.0, K1, 1 - B, B, avgdl, p[0]]
            else:
                hits = multi[i]
                sources.append(f"SELECT chunk_id, {_TERM_SCORE.format(f='f', d='d')} AS s FROM "
                               "unnest(%s::bigint[], %s::float8[], %s::float8[]) AS m(chunk_id, f, d)")
                args += [idf[i], K1 + 1.0, K1, 1 - B, B, avgdl, list(hits),
                         [float(f) for f, _ in hits.values()], [float(n) for _, n in hits.values()]]
        if op == "OR":
            # a chunk holding one or two of the phrases gets FTS5's sum exactly (addition commutes);
            # with three or more the order of the additions may move the last bit
            statement = (f"SELECT chunk_id, SUM(s) AS score FROM ({' UNION ALL '.join(sources)}) h "
                         "GROUP BY chunk_id ORDER BY score DESC, chunk_id LIMIT %s")
        else:  # every phrase in every chunk: joined on the chunk, terms added in query order as FTS5 adds them
            joined = " JOIN ".join(f"({src}) p{k}" + (f" ON p{k}.chunk_id = p0.chunk_id" if k else "")
                                   for k, src in enumerate(sources))
            score = " + ".join(["0.0::float8"] + [f"p{k}.s" for k in range(len(sources))])
            statement = f"SELECT p0.chunk_id, {score} AS score FROM {joined} ORDER BY score DESC, p0.chunk_id LIMIT %s"
        return [(int(c), float(v)) for c, v in self.db.execute(statement, (*args, limit))]
