"""The README is a user's page, not a lab notebook (issue 24, must-show 2): at most 200 lines, the
two commands CI runs first, no run history (rounds, stop numbers, load averages), every measured
figure in a section that names the command producing it, and every doc it points to exists."""

from __future__ import annotations

import re

from helpers import REPO
from markdown_it import MarkdownIt

README = REPO / "README.md"
# .ci/fresh_clone.py runs these lines from the first ```sh block: kept byte for byte.
TWO_COMMANDS = (
    "python3 setup.py                  # .venv, Claude Code wiring, index notes/ into your personal index, checks\n"
    ".venv/bin/python -m pytest -q     # run the tests: 5-12 minutes on 2 cores\n"
)
# What a run's diary says and a user's page does not: "third round", "stop 19", "at load 9",
# "load average", "an earlier run", "on a faster machine". "round trip" is a latency, not a round.
NOTEBOOK = re.compile(
    r"\bround\b(?![ -]trip)|\brounds\b|\bstop \d|\bload (?:of |average )?\d|load average"
    r"|\bearlier runs?\b|\bfaster machine\b|\bbefore issue \d", re.I)
# A measured figure: a score (0.954), or a quantity with a unit of time, size or rate.
FIGURE = re.compile(r"\b0\.\d{2,}\b|\b\d[\d,.]*\s?(?:ms|s|MB|GB|chunks/s|minutes?)\b")
# The test suite's time is measured by running it: `python -m pytest` names its command too.
MEASURING = re.compile(r"vault-index (?:eval|bench)\b|python -m pytest\b")


def _text() -> str:
    return README.read_text(encoding="utf-8")


def _sections(text: str) -> list[str]:
    return re.split(r"^(?=## )", text, flags=re.M)


def test_the_readme_is_at_most_200_lines():
    assert len(_text().splitlines()) <= 200


def test_the_first_shell_block_is_the_two_commands_byte_for_byte():
    tokens = MarkdownIt("commonmark").parse(_text())
    fences = [t for t in tokens if t.type == "fence" and t.info.strip() == "sh"]
    assert fences and fences[0].content == TWO_COMMANDS
    # nothing but the title comes before it
    assert [t.type for t in tokens[:tokens.index(fences[0])]] == ["heading_open", "inline", "heading_close"]


def test_no_line_reads_as_run_history():
    diary = [line for line in _text().splitlines() if NOTEBOOK.search(line)]
    assert diary == []


def test_every_measured_figure_sits_beside_the_command_that_measures_it():
    orphans = [section.splitlines()[0] for section in _sections(_text())
               if FIGURE.search(section) and not MEASURING.search(section)]
    assert orphans == [], f"sections quoting figures without naming `vault-index eval|bench`: {orphans}"


def test_every_doc_the_readme_points_to_exists():
    text = _text()
    tokens = MarkdownIt("commonmark").parse(text)
    linked = {child.attrs["href"] for t in tokens if t.type == "inline" for child in t.children or ()
              if child.type == "link_open"}
    local = {href.split("#")[0] for href in linked if not re.match(r"[a-z]+:", href)}
    # paths named in the text too (docs/adr/0020-workspaces.md), but not a template's NNNN-title.md
    named = {p for p in re.findall(r"\b(?:docs|eval)/[\w./-]+\.md\b", text) if "NNNN" not in p}
    missing = sorted(p for p in local | named if not (REPO / p).is_file())
    assert local and named and missing == []


def test_the_test_command_has_a_time_and_it_is_the_adrs():
    """Issue 39: the README gave no time for its test command. The Development section gives the
    range of the command's line (walkthrough A: it said "about 5 minutes" beside "5-12"), and the
    quiet-machine figure it cites is ADR 0025's, the range's low end."""
    text = " ".join(_text().split())
    low, high, cores = re.search(r"run the tests: (\d+)-(\d+) minutes on (\d+) cores", TWO_COMMANDS).groups()
    stated = re.search(rf"\(on every core: {low}-{high} minutes on {cores} cores, (\d+) s on a quiet machine, "
                       r"(docs/adr/0025-[\w-]+\.md);", text)
    assert stated, "the README's Development section lost the test suite's time, or gives another"
    adr = " ".join((REPO / stated.group(2)).read_text(encoding="utf-8").split())
    assert f"main suite {stated.group(1)} s" in adr
    assert round(int(stated.group(1)) / 60) == int(low)
