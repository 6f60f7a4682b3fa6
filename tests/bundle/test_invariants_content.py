"""scripts/_invariant_content.py's checks (sources, index, graph, golden set, lessons and records, context
budget) on the wired project of invariants_harness, one thing broken at a time."""

from __future__ import annotations

import json

import pytest
from helpers import write
from invariants_harness import (
    ADR,
    LESSONS,
    NOTE,
    Project,
    invariants,
    run_script,
    token_counter,
    wired_project,
)
from vault_index.config import Settings
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App


@pytest.fixture
def project(tmp_path, monkeypatch) -> Project:
    return wired_project(tmp_path, monkeypatch)


def test_sources_fail_when_a_registered_folder_is_gone(project, tmp_path):
    extra = write(tmp_path, "elsewhere/note.md", "# Elsewhere\n\ntext\n").parent
    app = App.open(Settings.from_env(), models=Models.fixed(None, None))
    try:
        app.index([str(extra)])
    finally:
        app.close()
    assert project.result(invariants.check_sources).status == "ok"
    (extra / "note.md").unlink()
    extra.rmdir()
    result = project.result(invariants.check_sources)
    assert result.status == "fail" and str(extra) in result.detail


def test_sources_warn_when_nothing_is_indexed(project, monkeypatch, tmp_path):
    monkeypatch.setenv("VAULT_INDEX_DB", str(tmp_path / "none.db"))
    result = project.result(invariants.check_sources)
    assert result.status == "warn" and not (tmp_path / "none.db").exists()  # checking creates nothing


def test_index_fresh_counts_changed_new_and_deleted_notes(project):
    assert project.result(invariants.check_index_fresh).status == "ok"
    project.note.write_text(NOTE + "\nMore text.\n")
    write(project.root, "notes/new.md", "# New\n\nnot indexed yet\n")
    result = project.result(invariants.check_index_fresh)
    assert result.status == "warn" and result.detail.startswith("2 notes changed")
    (project.root / "notes" / "new.md").unlink()
    project.note.unlink()
    result = project.result(invariants.check_index_fresh)
    assert result.status == "warn" and "deleted" in result.detail


def test_index_fresh_caps_its_walk(project):
    for i in range(5):
        write(project.root, f"notes/n{i}.md", f"# N{i}\n\ntext\n")
    result = invariants.check_index_fresh(project.context(), cap=3)
    assert "first 3 files checked" in result.detail


def test_graph_fails_on_a_malformed_line(project):
    with project.memory.open("a") as f:
        f.write("{not json\n")
        f.write(json.dumps({"type": "relation", "from": "Garden sensor", "to": "Nobody", "relationType": "x",
                            "source": str(project.note), "created": "2026-11-30T12:00:00Z"}) + "\n")
    result = project.result(invariants.check_graph)
    assert result.status == "fail" and "2 problems" in result.detail
    assert project.result(invariants.check_graph_sources).status == "ok"  # a separate concern


def test_graph_sources_fail_when_a_source_file_is_gone(project):
    project.note.unlink()
    result = project.result(invariants.check_graph_sources)
    assert result.status == "fail" and str(project.note) in result.detail
    assert project.result(invariants.check_graph).status == "ok"


def test_graph_checks_follow_the_declared_memory_file(project, monkeypatch, tmp_path):
    other = write(tmp_path, "other.jsonl", "garbage\n")
    monkeypatch.setenv("VAULT_MEMORY_FILE", str(other))  # the ${VAULT_MEMORY_FILE:-...} in .mcp.json
    assert project.result(invariants.check_graph).status == "fail"


@pytest.mark.parametrize("label", [
    {"file": "notes/missing.md", "heading": "Garden sensor"},
    {"file": "notes/garden.md", "heading": "Garden sensor > Watering"},
    {"file": "notes/garden.md", "heading": "Garden sensor > Batt"},  # a prefix of a word is not a path
])
def test_golden_fails_on_a_label_that_points_nowhere(project, label):
    line = {"id": "q2", "query": "x", **label}
    with (project.root / "eval" / "golden.jsonl").open("a") as f:
        f.write(json.dumps(line) + "\n")
    result = project.result(invariants.check_golden)
    assert result.status == "fail" and "q2:" in result.detail


def test_lessons_adrs_fail_on_a_malformed_lesson_or_record(project):
    lessons = project.root / "docs" / "lessons.md"
    lessons.write_text(LESSONS.replace("- status: active\n", ""))
    assert project.result(invariants.check_lessons_adrs).status == "fail"
    lessons.write_text(LESSONS)
    write(project.root, "docs/adr/0002-no-sections.md", "# 0002: Nothing here\n")
    result = project.result(invariants.check_lessons_adrs)
    assert result.status == "fail" and "0002" in result.detail


def test_lessons_adrs_checks_and_names_the_series_the_project_uses(project):
    """Issue 39: with the records in docs/decisions (where adr_create writes), the check read
    docs/adr, which does not exist, and said "docs/lessons.md and docs/adr/ ... well formed"."""
    (project.root / "docs" / "adr" / "0001-keep-the-index-in-sqlite.md").unlink()
    (project.root / "docs" / "adr").rmdir()
    write(project.root, "docs/decisions/0001-keep-the-index-in-sqlite.md", ADR)
    report = json.loads(run_script(project, "--json").stdout)
    detail = next(c["detail"] for c in report["checks"] if c["id"] == "lessons-adrs")
    assert "docs/decisions/" in detail and "docs/adr" not in detail, detail
    write(project.root, "docs/decisions/0002-no-sections.md", "# 0002: Nothing here\n")
    run = run_script(project, "--hook", stdin=json.dumps({"hook_event_name": "SessionStart", "source": "startup",
                                                          "cwd": str(project.root)}))
    context = json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "lessons-adrs" in context and "docs/decisions/0002-no-sections.md" in context, context


def test_a_teams_own_decision_series_is_not_held_to_this_tools_template(project):
    """A walkthrough of issue 39: adr-tools records (`# 1. Title`, `## Status`, no `## Options
    measured`) failed this check, and every session start told the agent to rewrite them."""
    (project.root / "docs" / "adr" / "0001-keep-the-index-in-sqlite.md").unlink()
    (project.root / "docs" / "adr").rmdir()
    write(project.root, "docs/decisions/0001-record-architecture-decisions.md",
          "# 1. Record architecture decisions\n\nDate: 2024-01-01\n\n## Status\n\nAccepted\n\n"
          "## Context\n\nWe record decisions.\n\n## Decision\n\nADRs.\n\n## Consequences\n\nSee above.\n")
    result = project.result(invariants.check_lessons_adrs)
    assert result.status == "ok" and "docs/decisions/ is the project's own series" in result.detail, result.detail
    run = run_script(project, "--hook", stdin=json.dumps({"hook_event_name": "SessionStart", "source": "startup",
                                                          "cwd": str(project.root)}))
    assert "lessons-adrs" not in (run.stdout or ""), run.stdout


def test_context_budget_counts_imports_and_warns_over_budget(project):
    ok = project.result(invariants.check_context_budget)
    assert ok.status == "ok" and "2 always-loaded files" in ok.detail
    write(project.root, "docs/guide.md", "word " * 4000)
    result = project.result(invariants.check_context_budget)
    assert result.status == "warn" and result.fix
    assert ("tiktoken" in result.detail) or ("estimate" in result.detail)  # says how it counted


def test_context_budget_ignores_imports_in_code_and_emails(project):
    write(project.root, "CLAUDE.md", "Mail me@example.com. `@docs/guide.md` in code.\n```\n@docs/guide.md\n```\n")
    assert "1 always-loaded files" in project.result(invariants.check_context_budget).detail


def test_context_budget_warns_on_a_missing_import(project):
    write(project.root, "CLAUDE.md", "See @docs/gone.md\n")
    result = project.result(invariants.check_context_budget)
    assert result.status == "warn" and "docs/gone.md" in result.detail


def test_token_counter_uses_an_offline_encoding_or_says_it_estimates():
    count, how = token_counter()
    assert count("") == 0 and count("a b c d e f g h") > 0
    try:
        import tiktoken  # noqa: F401
    except ImportError:
        assert how.startswith("estimate") and count("x" * 400) == 100
