"""The one rule for text that must stay on its line in a curated file (lessons, ADR titles, graph facts)."""

from __future__ import annotations

import unicodedata

ZERO_WIDTH_JOINER = "\u200d"


def unsafe_char(text: str, allow: str = "") -> str | None:
    """The first character of `text` that can break or hide in a line, as 'U+2028'; None if none.

    Trigger: str.splitlines() also breaks at U+000B, U+000C, U+001C-U+001E, U+0085, U+2028 and
    U+2029, not only at "\n" and "\r".
    Why: a lesson holding U+2028 was written as one line and read back as two, forging a heading.
    Outcome: one-line fields refuse every control character (Cc) and line or paragraph separator
    (Zl, Zp); a multi-line field passes the few it keeps in `allow` (e.g. "\n\t").
    Also refused: format characters (Cf: bidi overrides, zero-width and invisible tag characters,
    which hide text from the person while an agent still reads it; the zero-width joiner inside
    emoji is kept) and lone surrogates (Cs), which cannot be written as UTF-8.
    """
    for char in text:
        if char in allow or char == ZERO_WIDTH_JOINER:
            continue
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            return f"U+{ord(char):04X}"
    return None
