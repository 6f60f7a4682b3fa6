"""Frontmatter read through libyaml gives exactly what the Python loader gives, or defers to it.

engine/parsing/parse.py reads frontmatter with libyaml first (issue 26: the pure-Python loader
was a quarter of keyword indexing); an alias, nesting past the cap, or any error go to the Python
loader, whose rules and messages are the reported ones. These texts cover the usual frontmatter
and the odd corners (every frontmatter of the example vault too).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from vault_index.engine.parsing import parse

REPO = Path(__file__).resolve().parents[2]

CORNERS = [
    "title: Garden soil\ntags: [garden, Soil]\nstatus: canonical",
    "tags: baking\nstatus: draft",
    "date: 2024-02-30",  # matches the timestamp pattern, not a real date: ValueError
    "date: 2024-02-03\nwhen: 2024-02-03 10:11:12\nzone: 2024-02-03T10:11:12+02:00",
    "a: &x [1, 2]\nb: *x",  # an alias: refused
    "n: 1_000\nf: 1.5e3\nh: 0x1F\no: 0o17\nb: yes\nnull_value: ~\ninf: .inf\nnan: .NaN",
    "quoted: 'it''s'\ndouble: \"tab\\there \\u00e9\"\nmulti: |\n  line one\n  line two\nfolded: >\n  a\n  b",
    "key: {{date:YYYY-MM-DD}}\nother: x",  # a template placeholder: the Python path quotes it
    "- a\n- b",  # not a mapping
    "just a string",
    "dup: 1\ndup: 2",
    "a:\n\tb: 1",  # a tab in indentation
    "a: [1, [2, [3, [4]]]]",
    "a:" + "\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 25)) + "  " * 25 + "v: 1",  # deep block nesting
    "[" * 30 + "]" * 30,
    "k: \x07bell",  # a non-printable character
    "k: v\n---\nsecond: doc",
    "? complex key\n: value",
    "k: !!str 12\nb: !!binary aGVsbG8=",
    "k: !custom tag",
    "unicode: Grüße, 日本語, emoji 🙂\n'quoted key': 1\n12: numeric key",
    "k: 'unterminated",
    "k: v\n  bad indent: x",
    "",
    "# only a comment",
]


def _python(raw: str):
    try:
        return ("ok", yaml.load(raw, Loader=parse._yaml().no_alias))  # noqa: S506
    except Exception as exc:  # noqa: BLE001
        return ("error", type(exc).__name__)


def _example_frontmatters() -> list[str]:
    found = []
    for path in sorted((REPO / "example-vault").rglob("*.md")):
        lines = path.read_text(encoding="utf-8").split("\n")
        if lines[0].rstrip() == "---":
            end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
            if end:
                found.append("\n".join(lines[1:end]))
    return found


@pytest.mark.skipif(parse._yaml().c_safe is None, reason="PyYAML without libyaml: the Python loader reads everything")
@pytest.mark.parametrize("raw", CORNERS + _example_frontmatters())
def test_libyaml_gives_the_python_loaders_value_or_defers(raw):
    fast = parse._load_with_libyaml(raw)
    kind, want = _python(raw)
    if fast is parse._ASK_PYTHON:
        return  # the Python loader decides, as before
    assert kind == "ok", f"libyaml accepted what the Python loader refuses ({want})"
    assert repr(fast) == repr(want)  # same values and same types (dates, ints, floats)


def test_the_fast_path_is_taken_for_ordinary_frontmatter_and_not_for_aliases_or_depth():
    if parse._yaml().c_safe is None:
        pytest.skip("PyYAML without libyaml")
    assert parse._load_with_libyaml("title: A\ntags: [x, y]") == {"title": "A", "tags": ["x", "y"]}
    assert parse._load_with_libyaml("a: &x 1\nb: *x") is parse._ASK_PYTHON
    deep = "a: " + "[" * (parse.MAX_FRONTMATTER_DEPTH + 1) + "]" * (parse.MAX_FRONTMATTER_DEPTH + 1)
    assert parse._load_with_libyaml(deep) is parse._ASK_PYTHON


@pytest.mark.parametrize("raw", CORNERS)
def test_split_frontmatter_reports_what_it_reported_before(raw, monkeypatch):
    text = f"---\n{raw}\n---\nbody\n"
    with_c = parse.split_frontmatter(text)
    monkeypatch.setattr(parse, "_USE_LIBYAML", False)  # the Python loader alone, as before issue 26
    assert repr(with_c) == repr(parse.split_frontmatter(text))
