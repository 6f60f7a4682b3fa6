"""Markdown parsing: tolerant frontmatter, title, heading-path sections, wikilinks and tags.

Parsing never raises on content: a note with broken YAML keeps its body searchable and carries
the error so the indexer can report it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

from vault_index.types import Note, Section

HEADING_PATH_SEPARATOR = " > "
MAX_ALIASES = 20  # names a note is also known by; more is not a list of aliases
# A heading's attribute block, MkDocs/Python-Markdown (`## CORS { #cors-setup }`, `{: .note }`) or
# Pandoc (`{#id .class key=value}`, `{-}`): markup for the site, not words of the heading. Kept, it
# put `{ #cors-setup }` in every heading path a hit shows and in the text embedded for its chunks.
_ATTRIBUTE = r"""(?:[#.][^\s{}"']+|-|[A-Za-z_][\w.:-]*=(?:"[^"]*"|'[^']*'|[^\s{}"']+))"""
_HEADING_ATTRIBUTES = re.compile(rf"\s*\{{:?\s*{_ATTRIBUTE}(?:\s+{_ATTRIBUTE})*\s*\}}\s*$")
# A raw HTML anchor (`<a id="legacy"></a>`, `<a name=x/>`): a link target the page never shows.
HTML_ANCHOR = re.compile(r"""<a\s+(?:name|id)\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]*?)\s*/?>(?:\s*</a>)?""", re.IGNORECASE)
# An HTML comment (`<!-- Old headings. Do not remove or links may break. -->`, one line or many): a
# note to the writer the page never shows; unclosed, it runs to the end, as CommonMark's HTML block
# does. A fence or code span is matched first and kept whole: a comment there is shown as code.
_COMMENT = r"<!--(?:(?!-->).)*(?:-->|\Z)"  # tempered: never runs past its own `-->`
_COMMENT_OR_CODE = re.compile(
    r"(?P<code>^ {0,3}(?P<fence>`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}(?P=fence)[ \t]*$|\Z)"
    r"|(?P<span>`+)(?!`)(?:[^\n]|\n(?![ \t]*\n))+?(?P=span)(?!`))"
    rf"|^[ \t]*{_COMMENT}[ \t]*(?:\n|\Z)|[ \t]*{_COMMENT}",  # its own lines go whole; in a line, one space
    re.MULTILINE | re.DOTALL)
_WIKILINK = re.compile(r"\[\[([^\]\|#\n]+)(?:#[^\]\|\n]*)?(?:\|[^\]\n]*)?\]\]")
# Frontmatter is metadata: a few KB at most. A cap and no aliases keep a hostile note from
# expanding into gigabytes ("billion laughs": 284 bytes of nested aliases made a 56 MB index).
MAX_FRONTMATTER_CHARS = 65_536
# Real frontmatter nests two or three levels. Deeper is kept out of the index: the loader recurses
# per level (a 64 KB "[[[[..." raised RecursionError out of the whole sync) and so does every
# later json.dumps of the frontmatter.
MAX_FRONTMATTER_DEPTH = 20
_USE_LIBYAML = True  # tests turn it off to compare with the Python loader alone


@functools.cache
def _yaml() -> SimpleNamespace:
    """PyYAML and the loaders used here, imported at the first frontmatter read: the store imports
    this module, and the MCP handshake must not wait for PyYAML (issue 26)."""
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        def compose_node(self, parent, index):
            if self.check_event(yaml.events.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, "YAML aliases (*name) are not allowed in frontmatter", event.start_mark
                )
            return super().compose_node(parent, index)

    return SimpleNamespace(
        yaml=yaml, no_alias=NoAliasLoader,
        c_safe=getattr(yaml, "CSafeLoader", None),  # present when PyYAML was built with libyaml
        # What a value can raise while YAML constructs it: "date: 2024-02-30" matches the timestamp
        # pattern and then fails in datetime (ValueError); nesting past Python's stack, RecursionError.
        errors=(yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError),
        opens=(yaml.MappingStartEvent, yaml.SequenceStartEvent), closes=(yaml.MappingEndEvent, yaml.SequenceEndEvent),
    )


# `key: {{date:YYYY-MM-DD}}` or `- {{title}}`: a value that is one placeholder, maybe with text around.
_PLACEHOLDER_VALUE = re.compile(r"""^([ \t]*(?:-[ \t]+|[^:#\n]+:[ \t]+))((?!["'])\S*\{\{[^\n]*?\}\}[^\n]*?)[ \t]*$""",
                                re.MULTILINE)
_INLINE_TAG = re.compile(r"(?<![\w#&/])#([A-Za-z][\w/-]*)")


def split_frontmatter(text: str) -> tuple[dict, str | None, int]:
    """Return (frontmatter, error, index of the first body line).

    A file that opens with `---` but never closes it has no frontmatter: the whole file is body.
    """
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return {}, None, 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            raw = "\n".join(lines[1:i])
            if len(raw) > MAX_FRONTMATTER_CHARS:
                return {}, f"frontmatter over {MAX_FRONTMATTER_CHARS:,} characters was not read", i + 1
            if _flow_depth(raw) > MAX_FRONTMATTER_DEPTH:
                return {}, f"frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels and was not read", i + 1
            try:
                data = _load_yaml(raw)
            except _yaml().errors as exc:
                return {}, _yaml_problem(exc), i + 1
            if data is None:
                return {}, None, i + 1
            if not isinstance(data, dict):
                return {}, "frontmatter is not a mapping of keys to values", i + 1
            if _data_depth(data) > MAX_FRONTMATTER_DEPTH:
                return {}, f"frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels and was not read", i + 1
            return {_no_nul(str(k)): _no_nul(v) for k, v in data.items()}, None, i + 1
    return {}, None, 0


def _no_nul(value):
    """`value` with every NUL in its strings as U+FFFD (YAML's "\\0" escape makes one in a file that
    has none). Trigger: PostgreSQL text cannot hold NUL: a note whose frontmatter held one was
    searchable there yet reported skipped at every sync, and its links never resolved (issue 36).
    Outcome: both stores index the same U+FFFD. Depth is bounded by MAX_FRONTMATTER_DEPTH (checked first)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_no_nul(k): _no_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nul(v) for v in value]
    return value


def _load_yaml(raw: str):
    """YAML frontmatter; a template's `{{date}}` placeholders are read as the strings they are.

    Trigger: `date: {{date}}` is a YAML flow mapping whose key is a mapping, an error.
    Why: templates (Obsidian core Templates, Templater) are valid notes-to-be, not broken files.
    Outcome: only when the frontmatter does not load and holds placeholders, each bare
    placeholder value is quoted and the frontmatter read again; any other error stays an error.
    """
    if not raw.strip():
        return {}
    fast = _load_with_libyaml(raw)
    if fast is not _ASK_PYTHON:
        return fast
    y = _yaml()
    try:
        return y.yaml.load(raw, Loader=y.no_alias)  # noqa: S506 - a SafeLoader without aliases
    except y.errors:
        if "{{" not in raw:
            raise
        quoted = _PLACEHOLDER_VALUE.sub(lambda m: m.group(1) + "'" + m.group(2).replace("'", "''") + "'", raw)
        return y.yaml.load(quoted, Loader=y.no_alias)  # noqa: S506


_ASK_PYTHON = object()


def _load_with_libyaml(raw: str):
    """The frontmatter read by libyaml, or _ASK_PYTHON when the Python loader must decide.

    Trigger: the pure-Python loader took about a quarter of keyword indexing (issue 26). Why:
    libyaml scans and parses in C, ten times faster; construction and tag resolution are the
    same Python classes (SafeConstructor, Resolver), so the values are the same. Outcome: the
    events are checked first (an alias, or nesting past MAX_FRONTMATTER_DEPTH: the C composer
    recurses per level); those and any error go to the Python loader, whose rules and
    messages stay the reported ones.
    """
    y = _yaml()
    if y.c_safe is None or not _USE_LIBYAML:
        return _ASK_PYTHON
    try:
        depth = 0
        for event in y.yaml.parse(raw, Loader=y.c_safe):
            if isinstance(event, y.opens):
                depth += 1
                if depth > MAX_FRONTMATTER_DEPTH:
                    return _ASK_PYTHON
            elif isinstance(event, y.closes):
                depth -= 1
            elif isinstance(event, y.yaml.AliasEvent):
                return _ASK_PYTHON
        return y.yaml.load(raw, Loader=y.c_safe)  # noqa: S506 - safe constructor; no alias (checked above)
    except Exception:  # noqa: BLE001 - the Python loader reads it again and says what is wrong
        return _ASK_PYTHON


def _yaml_problem(exc: BaseException) -> str:
    """One line saying what is wrong with the frontmatter, never a traceback."""
    if isinstance(exc, RecursionError):
        return "invalid YAML frontmatter: nested too deeply"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if not isinstance(exc, _yaml().yaml.YAMLError):  # a value YAML recognised but could not build
        return f"invalid value in YAML frontmatter: {first} (for example a date that does not exist)"
    return f"invalid YAML frontmatter: {first}"


def _flow_depth(raw: str) -> int:
    """How deep `[` and `{` nest outside quoted strings: checked before YAML recurses into them.

    A cheap upper bound for flow style only; block-style nesting is measured on the loaded data
    (_data_depth), and anything deeper than the stack still ends as RecursionError, caught.
    """
    depth = deepest = 0
    quote, escaped = "", False
    for char in raw:
        if quote:
            if escaped:
                escaped = False
            elif char == "\\" and quote == '"':
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(0, depth - 1)
    return deepest


def _data_depth(data: object) -> int:
    """Nesting depth of loaded frontmatter, without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, depth)
            if depth <= MAX_FRONTMATTER_DEPTH:
                items = value.values() if isinstance(value, dict) else value
                stack.extend((item, depth + 1) for item in items)
    return deepest


def _tags_from(frontmatter: dict, body: str) -> tuple[str, ...]:
    raw = frontmatter.get("tags") or []
    if isinstance(raw, str):
        raw = re.split(r"[,\s]+", raw)
    tags = [str(t).lstrip("#") for t in raw if str(t).strip()] if isinstance(raw, list) else []
    tags += _INLINE_TAG.findall(body)
    return tuple(dict.fromkeys(t.lower() for t in tags))


def parse_note(path: str, text: str) -> Note:
    """Parse one note. `text` is the decoded file content. Never raises on content.

    Trigger: any exception while reading the frontmatter or the structure of one note.
    Why: one odd file must not end a sync of thousands (the README promises the body is indexed).
    Outcome: parse again as plain body (no frontmatter) and carry the failure as the note's error.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        return _parse(path, text, *split_frontmatter(text))
    except Exception as exc:  # noqa: BLE001 - reported on the note, never raised
        detail = " ".join(str(exc).split())[:200] or "no detail"
        note = _parse(path, text, {}, None, _frontmatter_end(text.split("\n")))
        return replace(note, frontmatter_error=(
            f"could not be parsed ({type(exc).__name__}: {detail}); body indexed without frontmatter"))


def _frontmatter_end(lines: list[str]) -> int:
    """Index of the first body line: after a closed `---` block, else 0."""
    if lines and lines[0].rstrip() == "---":
        for i in range(1, len(lines)):
            if lines[i].rstrip() in ("---", "..."):
                return i + 1
    return 0


def _markdown():
    """The CommonMark parser, built once and imported lazily (never before the MCP handshake)."""
    global _MD
    if _MD is None:
        from markdown_it import MarkdownIt

        # Only what structure needs: headings, code, paragraphs. No HTML rendering, no linkify.
        _MD = MarkdownIt("commonmark")
        _MD.core.ruler.at("inline", _inline_where_tags_or_links_can_be)
    return _MD


def _inline_where_tags_or_links_can_be(state) -> None:
    """markdown-it's inline rule, run only on text that can hold a tag or a wikilink.

    The inline texts serve _INLINE_TAG and _WIKILINK alone, and both need a `#` or a `[`,
    which only those characters or an entity (`&num;`) can produce; other text keeps no
    children. Why: inline parsing was a third of parsing a note (issue 26)."""
    for token in state.tokens:
        if token.type == "inline":
            if token.children is None:
                token.children = []
            content = token.content
            if "#" in content or "[" in content or "&" in content:
                state.md.inline.parse(content, state.md, state.env, token.children)


_MD = None


def _structure(body: str) -> tuple[dict[int, tuple[int, int, str]], list[str]]:
    """({first line: (level, line after the heading, text)} of top-level headings, inline texts).

    Lines count from 0 within `body`. Trigger: headings, setext headings, fences and indented
    code were matched by hand-written regular expressions. Why: CommonMark has many corners
    (a `#` inside a list item or quote, `===` under a line, an unclosed fence); markdown-it-py
    implements the spec and its tokens carry line ranges (`.map`). Outcome: headings and code
    come from its tokens; the section text is still the file's own lines.
    """
    tokens = _markdown().parse(body)
    headings: dict[int, tuple[int, int, str]] = {}
    texts: list[str] = []
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0 and token.map:
            inline = tokens[index + 1]
            headings[token.map[0]] = (int(token.tag[1]), token.map[1], heading_text(inline.content))
        elif token.type == "inline":
            # Text only: code spans, autolinks and HTML hold no tags or wikilinks.
            texts.extend(child.content for child in token.children or () if child.type == "text")
    return headings, texts


def heading_text(raw: str) -> str:
    """A heading as words: no trailing attribute block, no HTML anchor (kept when that is all it
    has), no HTML comment (never kept: a heading that is only a comment has no words)."""
    raw = without_html_comments(raw)
    text = HTML_ANCHOR.sub("", raw).strip() if "<a" in raw or "<A" in raw else raw.strip()
    return _HEADING_ATTRIBUTES.sub("", text) or text or raw.strip()


def without_html_comments(text: str) -> str:
    """`text` without its HTML comments (code keeps them): for snippets and headings; the chunk
    text the index stores keeps them, so this changes no ranking."""
    if "<!--" not in text:
        return text
    return _COMMENT_OR_CODE.sub(lambda found: found["code"] or "", text)


def alias_title(note: Note) -> str:
    """The title with the note's aliases, as the index searches and embeds it.

    Obsidian finds a note by any name in `aliases`; giving them the title's place in the
    keyword index and in the embedded context lets a search by alias find the note.
    """
    return f"{note.title} ({', '.join(note.aliases)})" if note.aliases else note.title


def _aliases_from(frontmatter: dict) -> tuple[str, ...]:
    raw = frontmatter.get("aliases", frontmatter.get("alias")) or []
    if isinstance(raw, str):
        raw = raw.split(",")
    if not isinstance(raw, list):
        return ()
    names = [" ".join(str(name).split()) for name in raw if isinstance(name, (str, int, float))]
    return tuple(dict.fromkeys(name for name in names if name))[:MAX_ALIASES]


def _parse(path: str, text: str, frontmatter: dict, error: str | None, body_start: int) -> Note:
    lines = text.split("\n")
    headings, texts = _structure("\n".join(lines[body_start:]))
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []  # (level, heading text)
    first_h1: str | None = None
    current_heading = ""
    buffer_first_line = body_start + 1  # 1-based number of buffer[0]
    buffer: list[str] = []

    def flush() -> None:
        kept = [i for i, line in enumerate(buffer) if line.strip()]
        if kept:
            body = "\n".join(buffer[kept[0] : kept[-1] + 1])
            first, last = buffer_first_line + kept[0], buffer_first_line + kept[-1]
            sections.append(Section(current_heading, first, last, body))

    index = body_start
    while index < len(lines):
        heading = headings.get(index - body_start)
        if heading is None:
            buffer.append(lines[index])
            index += 1
            continue
        flush()
        level, after, name = heading
        if level == 1 and first_h1 is None:
            first_h1 = name
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, name))
        current_heading = HEADING_PATH_SEPARATOR.join(n for _, n in stack if n)  # a heading of no words adds none
        index = body_start + after  # a setext heading spans two lines
        buffer_first_line = index + 1
        buffer = []
    flush()

    title_value = frontmatter.get("title")
    title = (
        str(title_value).strip()
        if isinstance(title_value, (str, int, float)) and str(title_value).strip()
        else first_h1 or Path(path).stem
    )
    # Text before the first heading belongs to the note as a whole: give it the title as path.
    sections = [s if s.heading else Section(title, s.line_start, s.line_end, s.text) for s in sections]
    body = "\n".join(texts)
    return Note(
        path=path,
        title=title,
        frontmatter=frontmatter,
        frontmatter_error=error,
        tags=_tags_from(frontmatter, body),
        links=tuple(dict.fromkeys(m.strip() for m in _WIKILINK.findall(body))),
        sections=tuple(sections),
        aliases=_aliases_from(frontmatter),
    )
