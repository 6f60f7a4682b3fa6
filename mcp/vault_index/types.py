"""Plain data shared by every layer."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Section:
    """A run of body lines under one heading path."""

    heading: str
    line_start: int
    line_end: int
    text: str


@dataclass(frozen=True)
class Note:
    """A parsed markdown file."""

    path: str
    title: str
    frontmatter: dict
    frontmatter_error: str | None
    tags: tuple[str, ...]
    links: tuple[str, ...]  # wikilink targets, embeds included, without #heading or |alias
    sections: tuple[Section, ...]
    aliases: tuple[str, ...] = ()  # frontmatter `aliases`: other names the note is found by


@dataclass(frozen=True)
class Chunk:
    """A piece of a note small enough for the embedder's window."""

    ordinal: int
    heading: str
    line_start: int
    line_end: int
    text: str
    embed_text: str  # title/heading context + text: what the embedder reads
    hash: str  # of embed_text; the vector cache key together with the model fingerprint


@dataclass(frozen=True)
class Candidate:
    """One chunk as a retrieval stage saw it: 1-based rank and raw score."""

    chunk_id: int
    rank: int
    score: float


@dataclass(frozen=True)
class SectionRef:
    """Where another matched section of a hit's note lies: enough to read it, no text."""

    heading: str
    line_start: int
    line_end: int


@dataclass(frozen=True)
class Hit:
    path: str
    heading: str
    line_start: int
    line_end: int
    score: float
    snippet: str
    status: str = ""
    explain: dict = field(default_factory=dict)
    more: int = 0  # one hit per note: how many more of its chunks matched
    also: tuple[SectionRef, ...] = ()  # one hit per note: the first few of those, best first


@dataclass(frozen=True)
class SearchResult:
    query: str
    mode: str
    vector_used: bool
    reranked: bool
    hits: tuple[Hit, ...]
    notices: tuple[str, ...] = ()
    # The probability that the first hit is relevant (services/search/confidence.py), calibrated;
    # None where no model of it applies (grep mode). `relevant`: it clears the threshold, so a
    # surface may say the first hit answers; when false, "nothing relevant" is the honest answer.
    confidence: float | None = None
    relevant: bool = False
    signals: dict = field(default_factory=dict, compare=False)  # what the confidence was computed from
    # the confidence model that scored it (services/search/confidence.kind_of of `mode`, or keyword
    # for a hybrid run whose first hit has no vector yet); its threshold decides `relevant`
    judged_by: str | None = None


@dataclass
class SyncReport:
    """What one index run did. Mutable: the indexer fills it as it goes."""

    scanned: int = 0
    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    stale: int = 0  # copies older than the version another checkout indexed (ADR 0019): not written
    chunks_embedded: int = 0
    chunks_reused: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, message)
    notices: list[str] = field(default_factory=list)  # what the caller should know that is no problem
    vector_used: bool = False
    seconds: float = 0.0
    embed_seconds: float = 0.0

    def add(self, more: SyncReport) -> None:
        """`more`'s counts, problems and notices added to these (one answer for a run of several steps)."""
        for name in ("scanned", "indexed", "unchanged", "removed", "stale", "chunks_embedded", "chunks_reused",
                     "seconds", "embed_seconds"):
            setattr(self, name, getattr(self, name) + getattr(more, name))
        self.problems += more.problems
        self.notices += more.notices
        self.vector_used = self.vector_used or more.vector_used
