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


def test_the_readmes_token_line_names_a_role_a_new_vault_has(tmp_path):
    """Issue 39: the README's remote section said `token new --role owner`, which a vault made by
    `vault-index init` refuses (its roles are editor and reader)."""
    from vault_index.services.curation.scaffold import scaffold
    from vault_index.services.vault.vault import Vault

    scaffold(tmp_path / "vault")
    roles = Vault.open(tmp_path / "vault").role_names
    for doc in (REPO / "README.md", REPO / "docs" / "remote.md"):
        first = re.search(r"token new --role (\w+)", doc.read_text(encoding="utf-8"))
        assert first and first.group(1) in roles, (doc.name, first and first.group(1), roles)


def test_the_progress_interval_in_docs_is_the_codes():
    """Issue 39: docs/cli.md said "every 10 seconds"; a plain line waits for the end of a batch of
    EMBED_COMMIT_BATCH chunks, so with the shipped model the lines came about every 20 s."""
    from vault_index.engine.indexer import EMBED_COMMIT_BATCH
    from vault_index.surfaces.cli_common import PLAIN_PROGRESS_SECONDS

    text = " ".join((REPO / "docs" / "cli.md").read_text(encoding="utf-8").split())
    sentence = re.search(r"when stderr is not a terminal.*?end of each phase", text)
    assert sentence, "docs/cli.md lost its sentence on progress lines off a terminal"
    assert f"{EMBED_COMMIT_BATCH} chunks" in sentence.group(0)
    assert f"{PLAIN_PROGRESS_SECONDS:g} seconds or more after the last line" in sentence.group(0)


def test_the_plugin_size_in_getting_started_is_measured():
    """Issue 39: docs said "about 2 MB" for a plugin cache of 4.4 MB. The page now gives the size of
    the source the plugin's links reach (what a fresh clone has) and says __pycache__ adds to it.
    Walkthrough A: "2.3 MB" had drifted to a measured 2.43 MB; the page rounds, "about 2.5 MB"."""
    import subprocess

    text = " ".join((REPO / "docs" / "getting-started.md").read_text(encoding="utf-8").split())
    stated = re.search(r"plugin cache, about (\d+(?:\.\d)?) MB of source \(`find -L plugin", text)
    assert stated and "__pycache__" in text[stated.start():stated.start() + 400]
    linked = [p.resolve().relative_to(REPO) for p in (REPO / "plugin").iterdir() if p.is_symlink()]
    listed = subprocess.run(["git", "ls-files", "-z", "--", *map(str, linked)], cwd=REPO, check=True,
                            capture_output=True).stdout.decode().split("\0")
    size = sum((REPO / rel).stat().st_size for rel in listed if rel and (REPO / rel).is_file())
    size += sum(p.stat().st_size for d in (".claude", ".claude-plugin") for p in (REPO / "plugin" / d).rglob("*")
                if p.is_file())
    assert abs(size / 1e6 - float(stated.group(1))) <= 0.15 * float(stated.group(1)), size  # "about"
