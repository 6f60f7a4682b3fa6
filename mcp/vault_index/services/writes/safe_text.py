"""One rule for text an agent supplies that lands in a commit, a trailer, tensions.md or a note name.

Trigger: a `reason` holding \\x1e/\\x1f and newlines forged a whole commit (author, date, role) in
`vault-index provenance`, and a NUL byte made git refuse the commit after the file was staged.
Why: these fields are read back by people and by parsers; a control character in them is never
text anyone meant. Outcome: control characters (C0, C1, DEL), line and paragraph separators and
bidirectional overrides are refused; newlines and tabs only where several lines are meant.
"""

from __future__ import annotations

import unicodedata

_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_MULTILINE_OK = frozenset("\n\t")


def text_problem(value: str | None, *, one_line: bool) -> str | None:
    """Why `value` may not be written into provenance or a file name, or None when it may."""
    if value is None:
        return None
    for char in value:
        if not one_line and char in _MULTILINE_OK:
            continue
        kind = unicodedata.category(char)
        if kind in ("Cc", "Zl", "Zp") or char in _BIDI:
            what = "a line break" if char in "\n\r\u2028\u2029\x85" else f"the control character U+{ord(char):04X}"
            return f"holds {what}" + ("; give one line" if one_line else "")
    return None


def unsafe_write(caller, path, why: str):
    """`invalid` when a field that reaches the commit, its trailers or the file name holds control text."""
    from vault_index.services.writes.write_types import WriteOutcome

    checks = (("path", str(path), True), ("reason", why, False), ("agent", caller.agent, True),
              ("role", caller.role, True), ("identity", caller.identity, True))
    problems = tuple({"field": name, "rule": "text", "message": f"{name} {problem}"}
                     for name, value, one_line in checks if (problem := text_problem(value, one_line=one_line)))
    if not problems:
        return None
    shown = " ".join(str(path).split()) if problems[0]["field"] != "path" else repr(str(path))[:200]
    return WriteOutcome("invalid", shown, f"not written: {problems[0]['message']} (control characters never go "
                        "into a note name or its history)", problems=problems)
