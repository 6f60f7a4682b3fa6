"""Heading-aware chunking sized by the embedder's own tokenizer.

Each chunk stays inside one section, is at most MAX_CHUNK_CHARS long, and its embed text (title
and heading path as context, then the chunk) fits the embedder's window. A chunk whose tail the
embedder cuts off is invisible to the vector side for everything in that tail, so the token check
is not optional: MiniLM reads 256 tokens, and 1,200 characters of prose often run to 280.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from vault_index.engine.parsing.status_block import no_prose
from vault_index.types import Chunk, Note, Section

# About one screen of prose; the reference measured 1,200 as a good size for notes like ours.
MAX_CHUNK_CHARS = 1200
# A title or heading path longer than this is cut for the embed text, so that the context can
# never take the whole token window (a 2,000-character heading once left no room for any text).
MAX_CONTEXT_CHARS = 160
# Used when no tokenizer is loaded (keyword-only runs): characters per token, on the safe side.
FALLBACK_CHARS_PER_TOKEN = 3

TokenCounter = Callable[[str], int]


def approximate_tokens(text: str) -> int:
    return len(text) // FALLBACK_CHARS_PER_TOKEN + 2


@dataclass(frozen=True)
class _Unit:
    line_start: int
    line_end: int
    text: str


def context_for(title: str, heading: str) -> str:
    """The subject line put in front of every chunk before embedding, at most MAX_CONTEXT_CHARS."""
    if not heading or heading == title or heading.startswith(title + " >"):
        context = heading or title
    else:
        context = f"{title} > {heading}"
    # Keep the end: the innermost heading says most about the chunk.
    return context if len(context) <= MAX_CONTEXT_CHARS else "…" + context[-(MAX_CONTEXT_CHARS - 1) :]


def embed_text_for(title: str, heading: str, text: str) -> str:
    """What the embedder reads for a chunk; the single definition used by chunking and sync."""
    return f"{context_for(title, heading)}\n\n{text}"


def _paragraphs(section: Section) -> list[_Unit]:
    """Blank-line separated blocks of the section, with their file line numbers."""
    units: list[_Unit] = []
    start, acc = None, []
    for offset, line in enumerate(section.text.split("\n")):
        number = section.line_start + offset
        if line.strip():
            start = number if start is None else start
            acc.append(line)
        elif acc:
            units.append(_Unit(start, number - 1, "\n".join(acc)))
            start, acc = None, []
    if acc:
        units.append(_Unit(start, start + len(acc) - 1, "\n".join(acc)))
    return units


def _finer(unit: _Unit) -> list[_Unit]:
    """Split a unit that is too big on its own: lines first, then words, then characters."""
    lines = unit.text.split("\n")
    if len(lines) > 1:
        return [_Unit(unit.line_start + i, unit.line_start + i, t) for i, t in enumerate(lines)]
    words = unit.text.split(" ")
    if len(words) > 1:
        half = len(words) // 2
        return [
            _Unit(unit.line_start, unit.line_end, " ".join(words[:half])),
            _Unit(unit.line_start, unit.line_end, " ".join(words[half:])),
        ]
    half = len(unit.text) // 2
    return [
        _Unit(unit.line_start, unit.line_end, unit.text[:half]),
        _Unit(unit.line_start, unit.line_end, unit.text[half:]),
    ]


def _labelled(section: Section, units: list[_Unit]) -> list[_Unit]:
    """A `## Status` section's word ("Accepted") as "Status: Accepted": carried away from its
    heading, the chunk still says what the word is."""
    name = section.heading.rsplit(">", 1)[-1].strip()
    if name.lower() != "status" or units[0].text.lower().startswith("status"):
        return units
    first = units[0]
    return [_Unit(first.line_start, first.line_end, f"{name}: {first.text}")] + units[1:]


def _carried(note: Note) -> list[tuple[Section, list[_Unit], list[_Unit]]]:
    """Each section with the status units carried into it, and its own paragraphs. A status block's
    section (status_block.no_prose) is carried into the next section that has prose, so that no
    chunk is a record's status alone: it ranked first and was shown as the answer in the chunk view
    too (issue 39 item 8). A note with nothing after its status block keeps it as its own chunk."""
    out: list[tuple[Section, list[_Unit], list[_Unit]]] = []
    carry: list[tuple[Section, list[_Unit], list[_Unit]]] = []
    for section in note.sections:
        units = _paragraphs(section)
        if units and no_prose(section.text, section.heading):
            carry.append((section, [], _labelled(section, units)))
        elif units:
            out.append((section, [unit for _, _, held in carry for unit in held], units))
            carry = []
    return out + carry


def chunk_note(
    note: Note, count_tokens: TokenCounter = approximate_tokens, max_tokens: int = 512
) -> list[Chunk]:
    chunks: list[Chunk] = []
    for section, carried, units in _carried(note):
        context = context_for(note.title, section.heading)

        def fits(text: str, context: str = context) -> bool:
            return len(text) <= MAX_CHUNK_CHARS and count_tokens(f"{context}\n\n{text}") <= max_tokens

        for group in _pack_carried(carried, units, fits):
            text = _join(group)
            embed_text = embed_text_for(note.title, section.heading, text)
            chunks.append(
                Chunk(
                    ordinal=len(chunks),
                    heading=section.heading,
                    line_start=group[0].line_start,
                    line_end=group[-1].line_end,
                    text=text,
                    embed_text=embed_text,
                    hash=hashlib.sha256(embed_text.encode()).hexdigest(),
                )
            )
    return chunks


def _join(units: list[_Unit]) -> str:
    """Units back into text as the file had them: paragraphs apart, lines together, words spaced."""
    parts = [units[0].text]
    for before, unit in zip(units, units[1:], strict=False):
        if unit.line_start <= before.line_end:
            parts.append(" ")  # pieces of one long line
        elif unit.line_start == before.line_end + 1:
            parts.append("\n")  # lines of one paragraph
        else:
            parts.append("\n\n")
        parts.append(unit.text)
    return "".join(parts)


def _pack_carried(carried: list[_Unit], units: list[_Unit], fits: Callable[[str], bool]) -> list[list[_Unit]]:
    """_pack with the carried status units in front; when they would fill a group alone (the first
    paragraph is too long to join them whole), they join the first piece of that paragraph."""
    groups = _pack(carried + units, fits)
    if not carried or len(groups) < 2 or any(unit in units for unit in groups[0]):
        return groups
    own = _pack(units, fits)
    return [carried + own[0]] + own[1:] if fits(_join(carried + own[0])) else groups


def _pack(units: list[_Unit], fits: Callable[[str], bool]) -> list[list[_Unit]]:
    """Greedy packing of units into groups whose joined text fits."""
    groups: list[list[_Unit]] = []
    current: list[_Unit] = []
    for unit in units:
        if len(unit.text) <= 1 and not fits(unit.text):
            # Nothing left to split: keep the character rather than recurse forever.
            if current:
                groups.append(current)
                current = []
            groups.append([unit])
            continue
        if fits(unit.text):
            candidate = current + [unit]
            if fits(_join(candidate)):
                current = candidate
                continue
            if current:
                groups.append(current)
            current = [unit]
            continue
        if current:
            groups.append(current)
        # the last piece stays open, so a short paragraph after a long one joins it: it was a
        # chunk of one line ("Open http://localhost:8040/docs ...") that outranked the steps before it
        *done, current = _pack(_finer(unit), fits)
        groups.extend(done)
    if current:
        groups.append(current)
    return groups
