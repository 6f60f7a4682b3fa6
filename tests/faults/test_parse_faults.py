"""Fault suite: one bad note must not stop the rest of a sync, and a tool failure says what to do.

Each bad note carries a word of its own, so "its body is indexed anyway" is checked by a search;
the good notes sit before and after the bad ones in walk order, so "the sync goes on" is too.
"""

from __future__ import annotations

import subprocess

import anyio
import pytest
from helpers import CLI, cli_env, snapshot, write
from vault_index.engine import indexer
from vault_index.surfaces.server import build_server

from mcp import Client

TIMEOUT_S = 60
DEEP = 5000  # far past Python's recursion limit

BAD_NOTES = {
    "b-date.md": ("---\ntitle: Leap\ndate: 2024-02-30\n---\n# Leap\n\nquokkadate body text\n", "quokkadate"),
    "c-list.md": ("---\nx: " + "[" * DEEP + "]" * DEEP + "\n---\n# Lists\n\nquokkalist body\n", "quokkalist"),
    "d-map.md": ("---\nx: " + "{a: " * DEEP + "1" + "}" * DEEP + "\n---\n# Maps\n\nquokkamap body\n", "quokkamap"),
    "e-block.md": ("---\n" + "".join("  " * i + "a:\n" for i in range(120)) + "---\n\nquokkablock body\n",
                   "quokkablock"),
}
GOOD = {"a-first.md": "wombatfirst", "z-last.md": "wombatlast"}


@pytest.fixture
def bad_vault(tmp_path):
    root = tmp_path / "vault"
    for name, word in GOOD.items():
        write(root, name, f"# {word}\n\n{word} is a good note.\n")
    for name, (text, _) in BAD_NOTES.items():
        write(root, name, text)
    return root


def _hits(app, word: str) -> list[str]:
    return [h.path for h in app.search(word, "keyword", 5).hits]


def test_impossible_dates_and_deep_nesting_are_reported_and_their_bodies_indexed(bad_vault, open_app):
    before = snapshot(bad_vault)
    app = open_app()
    report = app.index([str(bad_vault)])

    assert report.indexed == len(GOOD) + len(BAD_NOTES)
    problems = dict(report.problems)
    for name, (_, word) in BAD_NOTES.items():
        path = str(bad_vault / name)
        assert path in problems and "body indexed" in problems[path], problems
        assert _hits(app, word) == [path]
    assert "does not exist" in problems[str(bad_vault / "b-date.md")]
    assert "nest" in problems[str(bad_vault / "c-list.md")]
    for name, word in GOOD.items():
        assert _hits(app, word) == [str(bad_vault / name)]
    assert {p["path"] for p in app.status()["problems"]} >= {str(bad_vault / n) for n in BAD_NOTES}
    assert snapshot(bad_vault) == before  # reading never changes a note


def test_any_other_failure_of_one_file_is_its_problem_and_the_sync_goes_on(bad_vault, open_app, monkeypatch):
    real_chunk = indexer.chunk_note

    def chunk_or_fail(note, *args):
        if note.path.endswith("a-first.md"):
            raise RuntimeError("chunker tripped on this note")
        return real_chunk(note, *args)

    monkeypatch.setattr(indexer, "chunk_note", chunk_or_fail)
    app = open_app()
    report = app.index([str(bad_vault)])

    problems = dict(report.problems)
    first = str(bad_vault / "a-first.md")
    assert "RuntimeError: chunker tripped on this note" in problems[first]
    assert "the rest of the sync went on" in problems[first]
    assert _hits(app, "wombatlast") == [str(bad_vault / "z-last.md")]
    assert _hits(app, "quokkamap") == [str(bad_vault / "d-map.md")]
    assert _hits(app, "wombatfirst") == []


def test_the_cli_indexes_a_vault_with_bad_notes_without_a_traceback(bad_vault, tmp_path):
    env = cli_env(tmp_path / "cli" / "index.db")
    done = subprocess.run([CLI, "index", str(bad_vault)], env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "indexed 6 files" in done.stdout
    found = subprocess.run([CLI, "search", "quokkalist", "--mode", "keyword", "--json"], env=env,
                           capture_output=True, text=True, timeout=TIMEOUT_S)
    assert str(bad_vault / "c-list.md") in found.stdout


def _text(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def _calls(server, steps):
    seen = {}
    with anyio.fail_after(TIMEOUT_S):
        async with Client(server) as client:
            for key, name, arguments in steps:
                seen[key] = await client.call_tool(name, arguments)
    return seen


def test_index_paths_over_mcp_reports_bad_notes_and_a_crash_names_tool_input_and_next_step(
    bad_vault, open_app, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))  # an agent may index inside the project
    app = open_app()
    server = build_server(app, tmp_path / "memory.jsonl")
    seen = anyio.run(_calls, server, [("index", "index_paths", {"paths": [str(bad_vault)]})])
    assert not seen["index"].is_error, _text(seen["index"])
    listed = seen["index"].structured_content["problems"]
    assert sum(str(bad_vault / n) in " ".join(listed) for n in BAD_NOTES) == len(BAD_NOTES)

    def crash(*_args, **_kwargs):
        raise RuntimeError("disk said no")

    monkeypatch.setattr(app, "search", crash)
    seen = anyio.run(_calls, server, [("search", "search_notes", {"query": "wombat words"})])
    text = _text(seen["search"])
    assert seen["search"].is_error
    assert "search_notes(" in text and "query='wombat words'" in text, text
    assert "RuntimeError: disk said no" in text and "Next:" in text, text
    assert "Traceback" not in text
    assert "Traceback" in capsys.readouterr().err  # the details stay in the server's log


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_nul_in_frontmatter_is_indexed_alike_on_both_stores(tmp_path, open_app, backend):
    """Issue 36 item 16: YAML's "\\0" escape puts a NUL in a frontmatter value (the file itself has
    none, so it passes the binary sniff). PostgreSQL text cannot hold one: the note was searchable,
    reported skipped at every sync, and links to it stayed unresolved. Both stores now read it as
    U+FFFD, as a NUL in the body already is on PostgreSQL."""
    from helpers import FakeEmbedder

    root = tmp_path / "vault"
    write(root, "zeta.md", '---\ntitle: "Zeta\\0 plan"\naliases: ["zp\\0"]\ntags: ["t\\0"]\n'
                           'related: "[[other\\0]]"\n---\n# Zeta\n\nquokkanul body\n')
    write(root, "linker.md", "# Linker\n\nSee [[zeta]] and [[zp\ufffd]].\n")
    app = open_app(FakeEmbedder())
    first = app.index([str(root)])
    assert first.problems == [] and first.indexed == 2, first.problems  # old PostgreSQL: zeta.md skipped
    assert app.index([str(root)]).unchanged == 2  # not skipped again at every sync
    real = str((root / "zeta.md").resolve())
    assert [h.path for h in app.search("quokkanul", "keyword", 5).hits] == [real]
    title = app.store.db.execute("SELECT title FROM files WHERE path = ?" if backend == "sqlite" else
                                 "SELECT title FROM files WHERE path = %s", (real,)).fetchone()[0]
    assert title == "Zeta\ufffd plan"  # old SQLite: the NUL kept, so the stores disagreed
    linker = str((root / "linker.md").resolve())
    links = app.store.links("outgoing", linker)
    assert {(link["target"], link["status"]) for link in links} == {(real, "resolved")}, links  # name and alias
    assert {b["path"] for b in app.store.links("backlinks", real)} == {linker}
