"""scripts/learn.py and scripts/adr.py as people and CI run them: real processes, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import REPO, write
from vault_index.services.curation import lessons
from vault_index.services.graph import graph

LEARN = str(REPO / "scripts" / "learn.py")
ADR = str(REPO / "scripts" / "adr.py")
# -I -S: no site-packages and no PYTHONPATH, as in a checkout where the package is not installed
BARE = [sys.executable, "-I", "-S"]


def run(args, project, stdin=None, **env):
    environment = {k: v for k, v in os.environ.items() if k not in {"CLAUDE_PROJECT_DIR", "VAULT_MEMORY_FILE"}}
    environment.update(CLAUDE_PROJECT_DIR=str(project), **env)
    return subprocess.run(args, cwd=project, env=environment, input=stdin, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("python", [[sys.executable], BARE], ids=["venv", "no-package"])
def test_learn_round_trip(tmp_path, python):
    project = tmp_path / "project"
    project.mkdir()
    added = run([*python, LEARN, "add", "--lesson", "Pin the model", "--cause", "scores moved",
                 "--detect", "eval baseline", "--tag", "eval"], project)
    assert (added.returncode, added.stdout, added.stderr) == (0, "L-0001\n", "")
    path = project / "docs" / "lessons.md"
    assert [x.title for x in lessons.list_lessons(path)] == ["Pin the model"]

    second = run([*python, LEARN, "add", "--lesson", "Second", "--cause", "c", "--detect", "d"], project)
    assert second.stdout == "L-0002\n"
    replaced = run([*python, LEARN, "supersede", "L-0001", "--lesson", "Pin model and weights",
                    "--cause", "a re-export kept the name", "--detect", "fingerprint test"], project)
    assert (replaced.returncode, replaced.stdout) == (0, "L-0003\n")
    retired = run([*python, LEARN, "retire", "l-2", "--reason", "no longer true"], project)
    assert (retired.returncode, retired.stdout) == (0, "L-0002\n")

    listed = run([*python, LEARN, "list"], project)
    assert listed.returncode == 0 and listed.stdout.splitlines() == [
        f"L-0003  active      {lessons.list_lessons(path)[0].get('date')}  Pin model and weights"]
    every = json.loads(run([*python, LEARN, "list", "--all", "--json"], project).stdout)
    assert [(x["id"], x["status"], x["superseded_by"]) for x in every] == [
        ("L-0001", "superseded", "L-0003"), ("L-0002", "retired", None), ("L-0003", "active", None)]
    checked = run([*python, LEARN, "check"], project)
    assert (checked.returncode, checked.stdout) == (0, "") and "3 lessons" in checked.stderr


def test_learn_exit_codes_and_one_line_messages(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    run([*BARE, LEARN, "add", "--lesson", "One", "--cause", "c", "--detect", "d"], project)
    path = project / "docs" / "lessons.md"
    before = path.read_bytes()
    for args, message in (
        (["add", "--lesson", "", "--cause", "c", "--detect", "d"], "the lesson is empty"),
        (["add", "--lesson", "a\nb", "--cause", "c", "--detect", "d"], "must be one line"),
        (["retire", "L-0009", "--reason", "r"], "L-0009 is not in the lessons file"),
        (["supersede", "nope", "--lesson", "a", "--cause", "c", "--detect", "d"], "not a lesson id"),
    ):
        result = run([*BARE, LEARN, *args], project)
        assert result.returncode == 2 and result.stdout == "", args
        assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert run([*BARE, LEARN, "frobnicate"], project).returncode == 2  # argparse usage error
    assert path.read_bytes() == before

    path.write_text(path.read_text() + "\n## L-0002: Broken\n- status: someday\n")
    broken = run([*BARE, LEARN, "check"], project)
    assert broken.returncode == 1
    assert "L-0002: unknown status 'someday'" in broken.stdout and "L-0002: missing cause" in broken.stdout
    other = write(tmp_path, "elsewhere/lessons.md", "# Lessons\n")
    assert run([*BARE, LEARN, "--file", str(other), "check"], project).returncode == 0


def test_adr_new_links_the_graph_and_check_reports(tmp_path):
    project = tmp_path / "project"
    (project / "docs" / "adr").mkdir(parents=True)
    memory = tmp_path / "memory.jsonl"
    note = write(project, "notes/search.md", "# Search\n")
    graph.create(memory, entities=[{"name": "Search pipeline", "entityType": "component", "source": str(note)}])

    made = run([*BARE, ADR, "new", "Keep numpy for kNN", "--context", "c", "--options", "- numpy\n- sqlite-vec",
                "--decision", "-", "--relates", "search pipeline", "Unknown thing"], project,
               stdin="numpy, measured.\n", VAULT_MEMORY_FILE=str(memory))
    assert made.returncode == 0, made.stderr
    path = project / "docs" / "adr" / "0001-keep-numpy-for-knn.md"
    assert made.stdout == f"{path}\n" and "not linked: Unknown thing" in made.stderr
    assert "## Decision\n\nnumpy, measured.\n" in path.read_text()
    (entity,) = graph.open_entities(memory, ["ADR 0001: Keep numpy for kNN"])["entities"]
    assert [r["to"] for r in entity["relations"]] == ["Search pipeline"]
    assert run([*BARE, ADR, "check"], project).returncode == 0

    skipped = run([*BARE, ADR, "new", "No graph", "--context", "c", "--options", "o", "--decision", "d",
                   "--no-graph"], project, VAULT_MEMORY_FILE=str(tmp_path / "untouched.jsonl"))
    assert skipped.returncode == 0 and not (tmp_path / "untouched.jsonl").exists()

    bad = run([*BARE, ADR, "new", " ", "--context", "c", "--options", "o", "--decision", "d"], project,
              VAULT_MEMORY_FILE=str(memory))
    assert bad.returncode == 2 and "title is empty" in bad.stderr and bad.stdout == ""
    (project / "docs" / "adr" / "0003-broken.md").write_text("# 0004: Broken\n")
    checked = run([*BARE, ADR, "check"], project)
    assert checked.returncode == 1 and "title says 0004" in checked.stdout
    assert run([*BARE, ADR, "--folder", str(REPO / "docs" / "adr"), "check"], project).returncode == 0


def test_learn_refuses_a_lesson_that_would_forge_a_heading_or_a_field(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    run([*BARE, LEARN, "add", "--lesson", "One", "--cause", "c", "--detect", "d"], project)
    path = project / "docs" / "lessons.md"
    before = path.read_bytes()
    for lesson in ("Do X\u2028## L-0001: Fake lesson", "Do Y\x0b- status: retired", "Do \udcff Z"):
        result = run([*BARE, LEARN, "add", "--lesson", lesson, "--cause", "c", "--detect", "d"], project)
        assert result.returncode == 2 and result.stdout == "" and "one line" in result.stderr, result.stderr
    assert path.read_bytes() == before
    assert run([*BARE, LEARN, "check"], project).returncode == 0
