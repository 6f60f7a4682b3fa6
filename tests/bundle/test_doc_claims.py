"""Claims of the README and docs/ that can be checked mechanically, checked against the code:
the README's tool list is the server's registered tools, the lint severities in docs/mcp.md and
docs/links.md are those of services/curation/curation.py, no markdown table is broken in two, and the
header a project's docs/lessons.md gets names no script the project does not have."""

from __future__ import annotations

import re

import anyio
from helpers import REPO
from vault_index.services.curation import curation, lessons

DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _registered_tools(tmp_path) -> set[str]:
    from vault_index.config import Settings
    from vault_index.engine.embedding.models import Models
    from vault_index.services.app import App
    from vault_index.surfaces.server import build_server

    settings = Settings(tmp_path / "i.db", "none", "none", False, tmp_path / "m", "auto")
    app = App.open(settings, models=Models.fixed(None))
    try:
        return {t.name for t in anyio.run(build_server(app, tmp_path / "memory.jsonl").list_tools)}
    finally:
        app.close()


def test_the_readme_names_exactly_the_tools_the_server_registers(tmp_path):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.search(r"serves MCP over stdio:(.*?)\(all\s+declared in", readme, re.S)
    assert match, "README.md lost its sentence listing the MCP tools"
    listed = set(re.findall(r"`([a-z_]+)`", match.group(1)))
    assert listed == _registered_tools(tmp_path)


def _severities_in_mcp_md() -> dict[str, str]:
    text = (REPO / "docs" / "mcp.md").read_text(encoding="utf-8")
    bullet = re.search(r"^- Lint checks .*?(?=^- |\Z)", text, re.S | re.M)
    assert bullet, "docs/mcp.md lost its lint checks bullet"
    found = {}
    # "errors: `a`, `b`; warnings: `c` (why), ...; info: `d` (why)"
    for label, body in re.findall(r"\b(errors|warnings|info):(.*?)(?=\b(?:errors|warnings|info):|\Z)",
                                  bullet.group(0), re.S):
        severity = {"errors": "error", "warnings": "warning", "info": "info"}[label]
        for name in re.findall(r"`([a-z_]+)`", re.sub(r"\([^)]*\)", "", body)):
            found[name] = severity
    return found


def _severities_in_links_md() -> dict[str, str]:
    text = (REPO / "docs" / "links.md").read_text(encoding="utf-8")
    found = {}
    for names, severity in re.findall(r"^\| ((?:`[a-z_]+`(?:, )?)+) \| (error|warning|info) \|", text, re.M):
        found.update(dict.fromkeys(re.findall(r"`([a-z_]+)`", names), severity))
    return found


def test_the_lint_severities_in_the_docs_are_the_codes():
    assert _severities_in_links_md() == curation.CHECKS
    assert _severities_in_mcp_md() == curation.CHECKS


def test_no_markdown_table_in_the_docs_is_broken_in_two():
    # A table with a paragraph in the middle leaves its last rows as `| a | b |` lines of a
    # paragraph: markdown-it (GFM tables) sees them as plain text, as a reader's viewer does.
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    broken = []
    for doc in DOCS:
        tokens = md.parse(doc.read_text(encoding="utf-8"))
        for opening, inline in zip(tokens, tokens[1:], strict=False):
            if opening.type == "paragraph_open" and any(
                    line.lstrip().startswith("|") for line in inline.content.splitlines()):
                broken.append(f"{doc.relative_to(REPO)}:{opening.map[0] + 1}")
    assert broken == [], f"table rows outside a table: {broken}"


def test_a_projects_lessons_file_names_no_script_the_project_lacks(tmp_path):
    project = tmp_path / "project"
    path = project / "docs" / "lessons.md"
    lessons.add(path, "Check the lock first", "two writers", "a test")
    header = path.read_text(encoding="utf-8").split("\n## ", 1)[0]
    scripts = re.findall(r"[\w./-]+\.py\b", header)
    assert [s for s in scripts if not (project / s).exists()] == [], header


def test_docs_say_lessons_and_records_are_committed_only_where_the_code_commits():
    """Issue 39: docs/mcp.md said lesson_add and adr_create make "one commit"; in a plain project
    they never commit (tests/surfaces/test_tools_write.py pins that), and the page must say so."""
    text = (REPO / "docs" / "mcp.md").read_text(encoding="utf-8")
    section = re.search(r"^## Lesson and decision-record tools\n(.*?)^\| tool", text, re.S | re.M)
    assert section, "docs/mcp.md lost its lesson and decision-record section"
    prose = " ".join(section.group(1).split())
    assert "one commit" not in prose
    assert "plain project" in prose and "VAULT_GIT_COMMIT=1" in prose and "git.commit: true" in prose
