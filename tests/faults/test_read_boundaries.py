"""Fault suite, disclosure: no byte outside the sources is indexed or served.

Each case plants a unique marker in a file outside the vault (or under secrets/), provokes the
path the audit found, and checks: no answer and no index row holds the marker, the rest of the
vault is still indexed, and the refusal is a clear error (no traceback).
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import anyio
import pytest
from helpers import write
from vault_index.engine import indexer
from vault_index.engine.files.fileio import open_note, read_note
from vault_index.errors import NotFoundError, OutsideSourcesError, UsageError
from vault_index.services import app as app_module
from vault_index.services import boundary
from vault_index.services.access.boundaries import agent_sources
from vault_index.services.app import MAX_NOTE_CHARS
from vault_index.surfaces.server import build_server

from mcp import Client

TIMEOUT_S = 30


@pytest.fixture
def marker() -> str:
    return "outsidemarker" + uuid.uuid4().hex


@pytest.fixture
def setup(tmp_path, marker):
    """(vault, outside note with the marker) with two plain notes in the vault."""
    vault = tmp_path / "vault"
    write(vault, "a-first.md", "# First\n\nwombatfirst note\n")
    write(vault, "z-last.md", "# Last\n\nwombatlast note\n")
    outside = write(tmp_path / "outside", "secret.md", f"# Outside\n\n{marker} private words\n")
    return vault, outside


def _nothing_leaked(app, tmp_path: Path, marker: str) -> None:
    assert app.search(marker, mode="keyword").hits == ()
    assert app.search(marker, mode="grep").hits == ()
    assert marker.encode() not in b"".join(p.read_bytes() for p in tmp_path.glob("index.db*"))


def _rest_indexed(app) -> None:
    assert {Path(h.path).name for h in app.search("wombatfirst wombatlast", mode="keyword").hits} >= {
        "a-first.md", "z-last.md"}


# --- open once, no link followed, check what was opened --------------------------------------


def test_a_note_swapped_for_a_link_after_the_path_check_is_not_served(setup, open_app, monkeypatch, marker):
    """The race the audit won dozens of times in 10 s, made deterministic: swap right after the check."""
    vault, outside = setup
    app = open_app(None)
    app.index([str(vault)])
    checked = boundary.resolve

    def check_then_swap(app, path, **how):
        real = checked(app, path, **how)
        os.replace(_link_beside(real, outside), real)
        return real

    monkeypatch.setattr(boundary, "resolve", check_then_swap)
    with pytest.raises(OutsideSourcesError, match="symbolic link"):
        app.get_note("z-last.md")


def test_a_folder_swapped_for_a_link_after_the_path_check_is_not_served(setup, open_app, monkeypatch, marker):
    vault, outside = setup
    write(vault, "sub/deep.md", "# Deep\n\ndeep words\n")
    app = open_app(None)
    app.index([str(vault)])
    checked = boundary.resolve

    def check_then_swap(app, path, **how):
        real = checked(app, path, **how)
        os.rename(real.parent, vault / "sub-away")
        os.symlink(outside.parent, real.parent)
        os.replace(outside, outside.parent / "deep.md")
        return real

    monkeypatch.setattr(boundary, "resolve", check_then_swap)
    with pytest.raises((OutsideSourcesError, NotFoundError)) as refused:
        app.get_note("sub/deep.md")
    assert marker not in str(refused.value)


def test_the_sync_reads_what_it_opened_not_a_link_swapped_in_after_the_walk(setup, open_app, monkeypatch,
                                                                            tmp_path, marker):
    vault, outside = setup
    walk = indexer.walk_note_paths

    def walk_then_swap(root, unreadable=None):
        found = list(walk(root, unreadable))
        victim = Path(next(p for p in found if p.endswith("z-last.md")))
        os.replace(_link_beside(victim, outside), victim)
        return iter(found)

    monkeypatch.setattr(indexer, "walk_note_paths", walk_then_swap)
    app = open_app(None)
    report = app.index([str(vault)])
    assert any("symbolic link" in message for path, message in report.problems if path.endswith("z-last.md"))
    _nothing_leaked(app, tmp_path, marker)
    assert [Path(h.path).name for h in app.search("wombatfirst", mode="keyword").hits] == ["a-first.md"]


def test_a_hardlink_to_an_outside_file_is_neither_indexed_nor_served(setup, open_app, tmp_path, marker):
    vault, outside = setup
    os.link(outside, vault / "linked.md")
    app = open_app(None)
    report = app.index([str(vault)])
    (message,) = [m for p, m in report.problems if p.endswith("linked.md")]
    assert "hard links" in message
    with pytest.raises(OutsideSourcesError, match="hard links"):
        app.get_note("linked.md")
    assert app.reindex_file(str(vault / "linked.md")).indexed == 0  # the edit hook's path: refused too
    _nothing_leaked(app, tmp_path, marker)
    _rest_indexed(app)


def test_a_fifo_named_like_a_note_never_blocks_a_read_or_a_reindex(setup, open_app):
    vault, _ = setup
    os.mkfifo(vault / "pipe.md")
    app = open_app(None)
    app.index([str(vault)])
    done: list = []

    def reads() -> None:  # on a thread: before the fix, opening the FIFO waited for a writer for ever
        report = app_module.App.reindex_file(app, str(vault / "pipe.md"))
        done.append(report)

    worker = threading.Thread(target=reads, daemon=True)
    worker.start()
    worker.join(TIMEOUT_S)
    if worker.is_alive():
        _release_fifo(vault / "pipe.md")
        pytest.fail("re-indexing a FIFO named pipe.md blocked")
    (report,) = done
    assert report.indexed == 0 and "not a regular file" in report.problems[0][1]
    with pytest.raises((OutsideSourcesError, NotFoundError)):
        app.get_note("pipe.md")
    with pytest.raises(OutsideSourcesError, match="not a regular file"):
        read_note(vault, vault / "pipe.md", 100)
    _rest_indexed(app)


def test_open_note_refuses_links_on_the_way_and_outside_paths(setup):
    vault, outside = setup
    os.symlink(outside.parent, vault / "linked-folder")
    os.symlink(outside, vault / "linked.md")
    for path in (vault / "linked-folder" / "secret.md", vault / "linked.md"):
        with pytest.raises((OutsideSourcesError, NotFoundError)):
            open_note(vault, path)
    with pytest.raises(OutsideSourcesError):
        open_note(vault, outside)
    fd = open_note(vault, vault / "a-first.md")
    try:
        assert os.read(fd, 7) == b"# First"
    finally:
        os.close(fd)


def test_the_fallback_without_dir_fd_refuses_links_fifos_and_swapped_files(setup, monkeypatch):
    """Windows has no dir_fd or O_NOFOLLOW: the by-name open must still refuse what the walk does."""
    from vault_index.engine.files import fileio

    vault, outside = setup
    monkeypatch.setattr(fileio, "_WALK", False)
    os.symlink(outside, vault / "linked.md")
    os.mkfifo(vault / "pipe.md")
    os.link(vault / "a-first.md", vault / "second-name.md")
    assert read_note(vault, vault / "z-last.md", 1000)[0].startswith(b"# Last")
    for name, why in (("linked.md", "symbolic link"), ("pipe.md", "not a regular file"),
                      ("second-name.md", "hard links")):
        with pytest.raises(OutsideSourcesError, match=why):
            read_note(vault, vault / name, 1000)


# --- secrets in any letter case ----------------------------------------------------------------


@pytest.mark.parametrize("folder", ["Secrets", "SECRETS", "sEcReTs", "Node_Modules", ".GIT"])
def test_secrets_and_tooling_folders_are_skipped_in_any_letter_case(setup, open_app, tmp_path, marker, folder):
    vault, _ = setup
    write(vault, f"{folder}/keys.md", f"# Keys\n\n{marker} api key\n")
    app = open_app(None)
    app.index([str(vault)])
    with pytest.raises(OutsideSourcesError, match="never served"):
        app.get_note(f"{folder}/keys.md")
    assert app.reindex_file(str(vault / folder / "keys.md")) is None
    with pytest.raises(OutsideSourcesError, match="never indexes"):
        app.index([str(vault / folder)])
    _nothing_leaked(app, tmp_path, marker)
    _rest_indexed(app)


# --- what may become a source ------------------------------------------------------------------


@pytest.mark.parametrize("hidden", [".cache/x", ".local/share/notes"])
def test_a_source_below_a_hidden_folder_is_the_persons_choice(tmp_path, open_app, hidden):
    source = tmp_path / "home" / hidden
    write(source, "kept.md", "# Kept\n\nnumbatkept words\n")
    write(source, ".trash/old.md", "# Old\n\nnumbatold words\n")  # hidden BELOW the source: skipped
    write(source, "secrets/pin.md", "# Pin\n\nnumbatpin\n")
    app = open_app(None)
    report = app.index([str(source)])
    assert report.indexed == 1 and report.problems == []
    assert [Path(h.path).name for h in app.search("numbatkept numbatold numbatpin", mode="keyword").hits] == [
        "kept.md"]


@pytest.mark.parametrize("named", [".ssh", "notes/.private", "Secrets", "secrets/inner", "vault/SECRETS/x",
                                   "repo/.git/x", "node_modules/pkg"])
def test_a_source_that_is_or_lies_in_a_hidden_or_secret_folder_is_refused(tmp_path, open_app, named):
    write(tmp_path / named, "n.md", "# N\n\nnote\n")
    app = open_app(None)
    with pytest.raises(OutsideSourcesError, match="never indexes"):
        app.index([str(tmp_path / named)])
    assert app.store.sources() == []


def test_an_agent_may_add_only_the_project_or_inside_a_registered_source(tmp_path):
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / "notes").mkdir(parents=True)
    (elsewhere / "sub").mkdir(parents=True)
    (project / "out-link").symlink_to(elsewhere)
    allowed = agent_sources(["notes", str(project), str(elsewhere / "sub")], project, [str(elsewhere)])
    assert allowed == [str(project / "notes"), str(project), str(elsewhere / "sub")]
    for refused in ["/", str(Path.home()), "~", str(tmp_path), str(elsewhere), "../elsewhere", "out-link",
                    ".hidden", "notes/.obsidian", "notes/Secrets", "a\x00b"]:
        with pytest.raises(OutsideSourcesError, match="cannot be added by an agent"):
            agent_sources([refused], project, [])


def test_index_paths_refusals_over_mcp_look_the_same_whether_or_not_the_path_exists(tmp_path, open_app,
                                                                                     monkeypatch, marker):
    project, outside = tmp_path / "project", tmp_path / "outside"
    write(project, "notes/n.md", "# N\n\nwombatproject\n")
    write(project, ".hidden/there/x.md", f"# X\n\n{marker}\n")
    write(outside, "there/x.md", f"# X\n\n{marker}\n")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    app = open_app(None)
    server = build_server(app, tmp_path / "memory.jsonl")
    pairs = [(project / ".hidden" / "there", project / ".hidden" / "missing"),
             (outside / "there", outside / "missing"), (tmp_path, tmp_path / "missing")]
    steps = [(f"{i}{k}", "index_paths", {"paths": [str(p)]}) for i, pair in enumerate(pairs)
             for k, p in zip("em", pair, strict=True)]
    seen = anyio.run(_calls, server, [*steps, ("ok", "index_paths", {"paths": ["notes"]})])
    for i, (there, missing) in enumerate(pairs):
        exists, absent = seen[f"{i}e"], seen[f"{i}m"]
        assert exists.is_error and absent.is_error
        assert _text(exists).replace(str(there), "P") == _text(absent).replace(str(missing), "P")
        assert "cannot be added by an agent" in _text(exists)
    assert not seen["ok"].is_error, _text(seen["ok"])
    assert [Path(s) for _, s in app.store.sources()] == [project / "notes"]
    assert app.search(marker, mode="keyword").hits == ()


async def _calls(server, steps):
    seen = {}
    with anyio.fail_after(TIMEOUT_S):
        async with Client(server) as client:
            for key, name, arguments in steps:
                seen[key] = await client.call_tool(name, arguments)
    return seen


def _text(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


# --- get_note bounded ----------------------------------------------------------------------------


def test_get_note_on_a_huge_one_line_file_answers_at_once_without_reading_it(setup, open_app):
    vault, _ = setup
    huge = vault / "huge.md"
    with open(huge, "wb") as handle:  # 64 MB, one line, sparse: only its first and last bytes written
        handle.write(b"# Huge " + b"x" * 9000)
        handle.seek(64 * 1024 * 1024)
        handle.write(b"x")
    app = open_app(None)
    app.index([str(vault)])
    started = time.monotonic()
    with pytest.raises(UsageError, match="over the 2,000,000 byte limit"):
        app.get_note("huge.md", max_lines=1)
    assert time.monotonic() - started < TIMEOUT_S  # a hang guard, not a speed claim
    long_line = write(vault, "long.md", "y" * 1_500_000)
    note = app.get_note(str(long_line), max_lines=1)
    assert note["truncated"] and len(note["content"]) == MAX_NOTE_CHARS
    assert note["line_start"] == note["line_end"] == note["total_lines"] == 1


def test_start_line_past_the_end_is_a_clear_error_and_windows_never_run_backwards(setup, open_app):
    vault, _ = setup
    write(vault, "three.md", "one\ntwo\nthree\n")
    app = open_app(None)
    app.index([str(vault)])
    with pytest.raises(UsageError, match="past the end.*3 lines"):
        app.get_note("three.md", start_line=10_000)
    for start in (1, 2, 3):
        for count in (1, 2, 5):
            note = app.get_note("three.md", start_line=start, max_lines=count)
            assert start == note["line_start"] <= note["line_end"] <= note["total_lines"] == 3
            assert note["content"].split("\n") == ["one", "two", "three"][start - 1 : start - 1 + count]
            assert note["truncated"] == (note["line_end"] < 3)


# --- helpers -------------------------------------------------------------------------------------


def _link_beside(path: Path, target: Path) -> Path:
    link = path.with_name(path.name + ".link")
    os.symlink(target, link)
    return link


def _release_fifo(fifo: Path) -> None:
    """Open the FIFO for writing, so a reader stuck opening it (the bug) returns."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass
