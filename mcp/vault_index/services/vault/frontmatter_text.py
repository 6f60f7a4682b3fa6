"""Frontmatter edits that keep the person's text: named fields set or dropped line by line.

Trigger: in a person's own notes folder (no vault config) an append re-rendered the whole block
through YAML: it stamped the curated vault's fields, overwrote their `collection:` and dropped
their comments and spacing (issue 36). Why: outside a curated vault a write may change only what
its operation names. Outcome: `set_fields` replaces the lines of the fields it is given (a value
with its indented continuation lines), adds new ones before the closing fence and removes those
set to None; every other byte of the block stays. When the result would not read back as the
fields meant (a key written in flow style, a quoted key), the block is rendered whole instead.
"""

from __future__ import annotations

import re

from vault_index.services.vault import frontmatter as fm


def newline_of(text: str) -> str:
    """The line ending a text uses: CRLF, LF, or CR alone (old Mac files); LF for one line."""
    if "\r\n" in text:
        return "\r\n"
    if "\n" not in text and "\r" in text:
        return "\r"
    return "\n"


def set_fields(head: str, changes: dict) -> str:
    """The frontmatter block `head` (as split from the note, fences included, or "") with `changes`
    applied: a value sets the field, None removes it; everything else is kept byte for byte."""
    if not changes:
        return head
    old, _, problems = fm.parse(head + "\n") if head else ({}, "", [])
    wanted = {**old, **changes}
    wanted = {k: v for k, v in wanted.items() if v is not None}
    if not head:
        return fm.render(wanted, "") if wanted else ""
    crlf = "\r\n" in head
    lines = head.replace("\r\n", "\n").split("\n")
    close = max(i for i, line in enumerate(lines) if i and line.strip() in (fm.FENCE, "..."))
    for name, value in changes.items():
        rendered = [] if value is None else _render_one(name, value)
        start = next((i for i in range(1, close) if re.match(rf"{re.escape(name)}[ \t]*:", lines[i])), None)
        if start is None:
            lines[close:close] = rendered
            close += len(rendered)
            continue
        end = start + 1
        while end < close and (lines[end][:1] in (" ", "\t") or (lines[end][:1] == "-" and not
                                                                   lines[end].startswith(fm.FENCE))):
            end += 1
        lines[start:end] = rendered
        close += len(rendered) - (end - start)
    text = "\n".join(lines)
    text = text.replace("\n", "\r\n") if crlf else text
    again, _, later = fm.parse(text + "\n")
    if problems or later or again != wanted:
        return fm.render(fm.ordered(wanted, old.keys()), "").replace("\n", "\r\n" if crlf else "\n")
    return text


def _render_one(name: str, value) -> list[str]:
    return fm.render({name: value}, "").split("\n")[1:-2]
