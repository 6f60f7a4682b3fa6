"""`vault-index backlinks|links|neighbors|related --json`: the link graph from the terminal, through
the real CLI on a real index of the lint fixture vault (docs/links.md, "Queries")."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from helpers import CLI, REPO, cli_env

FIXTURE = REPO / "tests" / "fixtures" / "lint-vault"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli-links")
    vault = shutil.copytree(FIXTURE, tmp / "v").resolve()
    env = cli_env(tmp / "index.db", VAULT_GIT_COMMIT="0")
    done = subprocess.run([CLI, "index", str(vault), "-s"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return vault, env


def cli(indexed, *args, code: int = 0):
    vault, env = indexed
    proc = subprocess.run([CLI, *args], env=env, cwd=vault, capture_output=True, text=True, timeout=120)
    assert proc.returncode == code, proc.stderr
    return json.loads(proc.stdout) if "--json" in args and code == 0 else proc


def test_backlinks_and_links(indexed):
    vault, _ = indexed
    back = cli(indexed, "backlinks", "home.md", "--json")
    assert (back["direction"], back["note"]) == ("backlinks", str(vault / "home.md"))
    assert [(r["path"], r["kind"], r["line"]) for r in back["results"]] == [(str(vault / "good-decision.md"),
                                                                            "wikilink", 12)]
    out = cli(indexed, "links", str(vault / "home.md"), "--json")["results"]
    assert [(r["raw"], r["status"]) for r in out if r["status"] != "resolved"] == \
        [("nowhere", "unresolved"), ("notes", "ambiguous")]
    assert len([r for r in out if r["status"] == "resolved"]) == 11  # code block and code span are not links
    typed = cli(indexed, "links", "old-way.md", "--types", "superseded_by", "--json")["results"]
    assert [(r["kind"], r["target"]) for r in typed] == [("superseded_by", str(vault / "good-decision.md"))]


def test_neighbors_depth_and_edge_types(indexed):
    vault, _ = indexed
    near = cli(indexed, "neighbors", "good-decision.md", "--depth", "2", "--json")["results"]
    by_path = {r["path"]: r for r in near}
    assert len(by_path) == len(near)  # each note once, at its nearest depth
    assert (by_path[str(vault / "home.md")]["depth"], by_path[str(vault / "old-way.md")]["depth"]) == (1, 1)
    assert by_path[str(vault / "stale-note.md")]["depth"] == 2  # through home.md
    assert by_path[str(vault / "stale-note.md")]["via"] == str(vault / "home.md")
    assert str(vault / "lonely.md") not in by_path
    one = cli(indexed, "neighbors", "good-decision.md", "--json")["results"]
    assert {r["depth"] for r in one} == {1}
    typed = cli(indexed, "neighbors", "good-decision.md", "--depth", "2", "--types", "supersedes,superseded_by",
                "--json")["results"]
    assert {(r["path"], r["depth"]) for r in typed} == {(str(vault / "old-way.md"), 1)}
    refused = cli(indexed, "neighbors", "good-decision.md", "--types", "bogus", code=2)
    assert "unknown link type bogus" in refused.stderr


def test_related_by_note_and_by_query(indexed):
    vault, _ = indexed
    by_note = cli(indexed, "related", "good-decision.md", "--json")
    assert by_note["direction"] == "related" and by_note["query"] is None
    paths = [r["path"] for r in by_note["results"]]
    assert str(vault / "good-decision.md") not in paths and str(vault / "home.md") in paths
    assert all(r["why"] and r["score"] > 0 for r in by_note["results"])
    assert [r["score"] for r in by_note["results"]] == sorted((r["score"] for r in by_note["results"]), reverse=True)
    by_query = cli(indexed, "related", "--query", "twin", "--json")
    assert by_query["query"] == "twin" and by_query["note"] is None
    assert any(w.startswith("meaning") for r in by_query["results"] for w in r["why"])
    assert cli(indexed, "related", code=2).returncode == 2  # neither a note nor a query
