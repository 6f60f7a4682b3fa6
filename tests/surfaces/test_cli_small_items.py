"""Issue 21's smaller CLI behaviours: each test fails on the code before the fix.

- `init` says it waits for another index run's embedding, as `index` does;
- `links`, `backlinks`, `neighbors` on a path the index does not hold: not-found, exit 3;
- text-mode `write` prints the version the next step needs;
- `--set` of a list field that is not valid says to write JSON (or YAML flow) for a list.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import pytest
from helpers import CLI, FakeEmbedder, cli_env, write
from vault_index.errors import NotFoundError

HOLD_SECONDS = 3.0


def test_init_says_it_waits_for_another_runs_embedding(open_app, tmp_path, capsys):
    from vault_index.surfaces.cli import Progress
    from vault_index.surfaces.cli_vault import cmd_init

    app = open_app(FakeEmbedder())
    lock_file = str(app.store.path) + ".embed.lock"
    # Another process holds the embedding lock, as a running `vault-index index` does.
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom filelock import FileLock\nlock = FileLock(sys.argv[1])\n"
         "lock.acquire()\nprint('held', flush=True)\ntime.sleep(float(sys.argv[2]))\nlock.release()",
         lock_file, str(HOLD_SECONDS)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        args = argparse.Namespace(dir=str(tmp_path / "v"), no_index=False, json=True, silent=False)
        assert cmd_init(app, args) == 0
        waited = time.monotonic() - started
    finally:
        holder.wait(timeout=30)
    out = capsys.readouterr()
    assert json.loads(out.out)["indexed"] == 3
    assert waited >= HOLD_SECONDS / 2  # it did wait for the other run
    assert "is embedding into this index; waiting for it" in out.err  # ... and said so, as `index` does
    assert out.err.count("waiting for it") == 1
    # -s keeps it quiet, as for `index`
    progress = Progress(False)
    progress("wait", 0, 0)
    assert "waiting" not in capsys.readouterr().err


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("small-items")
    notes = tmp / "notes"
    write(notes, "home.md", "# Home\n\nSee [[away]].\n")
    write(notes, "away.md", "# Away\n\nBack to [[home]].\n")
    env = cli_env(tmp / "index.db", VAULT_GIT_COMMIT="0")
    env.pop("VAULT_ROLE", None)
    env.pop("CLAUDE_PROJECT_DIR", None)
    done = subprocess.run([CLI, "index", str(notes), "-s"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return notes.resolve(), env


@pytest.mark.parametrize("command", ["links", "backlinks", "neighbors"])
def test_link_commands_on_a_missing_note_fail_with_not_found(indexed, command):
    notes, env = indexed
    for missing in ("nowhere.md", str(notes / "nowhere.md")):
        proc = subprocess.run([CLI, command, missing], env=env, cwd=notes, capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == NotFoundError.exit_code, (proc.stdout, proc.stderr)
        assert proc.stdout == ""
        assert "nowhere.md" in proc.stderr and "not a note in the index" in proc.stderr
        assert "Traceback" not in proc.stderr
    found = subprocess.run([CLI, command, "home.md", "--json"], env=env, cwd=notes, capture_output=True, text=True,
                           timeout=60)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"]  # a note that is there still answers


def _vault(tmp_path, env):
    root = tmp_path / "v"
    done = subprocess.run([CLI, "init", str(root), "--no-index"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture
def env(tmp_path):
    environment = cli_env(tmp_path / "cli" / "index.db")
    environment.pop("VAULT_ROLE", None)
    environment.pop("CLAUDE_PROJECT_DIR", None)
    return environment


def test_text_mode_write_prints_the_version_for_the_next_step(tmp_path, env):
    root = _vault(tmp_path, env)
    v = ["--vault", str(root)]
    made = subprocess.run([CLI, "write", "drafts/kiwi.md", *v, "--body", "# Kiwi\n\nFlightless.\n", "--set",
                           "title=Kiwi"], env=env, capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    read = json.loads(subprocess.run([CLI, "read", "drafts/kiwi.md", *v, "--json"], env=env, capture_output=True,
                                     text=True, timeout=60).stdout)
    assert f"version {read['version']}" in made.stdout
    # the printed version is what --base-version takes: a replace with it is written
    again = subprocess.run([CLI, "write", "drafts/kiwi.md", *v, "--body", "# Kiwi\n\nStill flightless.\n",
                            "--set", "title=Kiwi", "--base-version", read["version"]], env=env, capture_output=True,
                           text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert "version " in again.stdout and read["version"] not in again.stdout


def test_set_of_a_list_field_says_to_write_json(tmp_path, env):
    root = _vault(tmp_path, env)
    proc = subprocess.run([CLI, "write", "drafts/kiwi.md", "--vault", str(root), "--body", "x", "--set",
                           "title=Kiwi", "--set", "sources=field guide"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "sources" in proc.stderr
    assert '--set \'sources=["field guide"]\'' in proc.stderr  # how to write a list, with the value given
    assert not (root / "drafts/kiwi.md").exists()
    listed = subprocess.run([CLI, "write", "drafts/kiwi.md", "--vault", str(root), "--body", "x", "--set",
                             "title=Kiwi", "--set", 'sources=["field guide"]'], env=env, capture_output=True,
                            text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr


def test_counts_of_one_are_singular(tmp_path):
    """Issue 39 (the fresh walkthrough): `index` and `status` printed "1 chunks", "1 files"."""
    notes = tmp_path / "notes"
    write(notes, "a.md", "# A\n\nthe only note\n")
    env = cli_env(tmp_path / "index.db", HOME=str(tmp_path))
    run = lambda *args: subprocess.run([CLI, *args], env=env, cwd=tmp_path, capture_output=True,  # noqa: E731
                                       text=True, timeout=60)
    indexed = run("index", str(notes))
    assert indexed.returncode == 0 and "indexed 1 file, 0 unchanged" in indexed.stdout, indexed
    status = run("status")
    assert "1 source, 1 file, 1 chunk\n" in status.stdout, status.stdout
    sources = run("sources")
    assert "(1 file, 1 chunk)" in sources.stdout, sources.stdout


def test_off_a_terminal_an_embedding_says_it_started_before_its_first_batch(vault, open_app):
    """Walkthrough A: a piped search embedding a project was silent for 16 s (the model load and the
    first batch) and, under about 300 chunks, printed only its 100% line. The indexer now reports
    each embedding's start, and a log shows it at once."""
    import io

    from vault_index.surfaces.cli_common import Progress

    stream = io.StringIO()
    stream.isatty = lambda: False
    progress = Progress(True, stream)
    seen = []
    open_app(FakeEmbedder()).index([str(vault)], lambda *call: (seen.append(call), progress(*call)))
    embeds = [call for call in seen if call[0] == "embed"]
    assert embeds[0][1] == 0 and embeds[-1][1] == embeds[-1][2] > 0
    lines = stream.getvalue().splitlines()
    started = [i for i, line in enumerate(lines) if line == f"embed: 0/{embeds[0][2]} chunks, started"]
    assert started and lines[-1].startswith(f"embed: {embeds[0][2]}/{embeds[0][2]} chunks (100%)")
    assert started[0] < len(lines) - 1


def test_the_scan_before_status_or_search_says_nothing_when_quick_and_shows_when_it_lasts():
    """Walkthrough A: `status`, `sources` and `search` printed "scan: 51/51 files (100%) ..." on every
    call, a project with nothing to index too. Their scan (quiet_scan) is said only when it lasts
    QUIET_SCAN_SECONDS; what it indexed is the command's own line. `index` shows every scan."""
    import io
    import time as clock

    from vault_index.surfaces.cli_common import QUIET_SCAN_SECONDS, Progress

    def run(quiet: bool, took: float) -> str:
        stream = io.StringIO()
        stream.isatty = lambda: False
        progress = Progress(True, stream, quiet_scan=quiet)
        progress._made = clock.monotonic() - took  # the scan began `took` seconds ago
        progress("scan", 51, 51)
        return stream.getvalue()

    assert run(quiet=True, took=0.1) == ""
    assert run(quiet=True, took=QUIET_SCAN_SECONDS + 1).startswith("scan: 51/51 files (100%)")
    assert run(quiet=False, took=0.1).startswith("scan: 51/51 files (100%)")


@pytest.mark.parametrize("columns", [0, 80])
def test_a_terminal_zero_columns_wide_gets_plain_progress_lines(columns):
    """Walkthrough C: under `script` run from a non-tty (a 0x0 pty) tqdm drew nothing, so an
    embedding of 419 chunks showed no progress at all; such a terminal gets a log's plain lines."""
    import fcntl
    import os
    import select
    import struct
    import termios

    from vault_index.surfaces.cli_common import Progress

    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 0 if not columns else 24, columns, 0, 0))
    with os.fdopen(leader, "rb", buffering=0) as reader, os.fdopen(follower, "w") as stream:
        progress = Progress(True, stream)
        assert progress.tty == bool(columns)
        progress("embed", 0, 419)
        progress("embed", 419, 419)
        progress.close()
        shown = ""
        while select.select([reader], [], [], 0.5)[0] and "(100%)" not in shown:  # the lines, as they arrive
            shown += reader.read(4096).decode()
    if not columns:
        assert shown.splitlines()[0] == "embed: 0/419 chunks, started" and "419/419 chunks (100%)" in shown


def test_the_line_after_a_search_adopts_a_project_says_what_it_indexed_and_embedded(capsys):
    """Walkthrough G: a piped first search ended "indexed 51 notes of the project; embedded 201 chunks
    waiting for vectors", which reads as if they still waited."""
    from types import SimpleNamespace

    from vault_index.surfaces.cli_common import adopt

    report = SimpleNamespace(indexed=51, chunks_embedded=201)
    app = SimpleNamespace(adopt_workspace=lambda progress, embed: report,
                          workspace=SimpleNamespace(describe=lambda: "the project"))
    adopt(app, argparse.Namespace(silent=False))
    assert capsys.readouterr().err.splitlines()[-1] == "indexed 51 notes; embedded 201 chunks of the project"
    report.chunks_embedded = 0
    adopt(app, argparse.Namespace(silent=False))
    assert capsys.readouterr().err.splitlines()[-1] == "indexed 51 notes of the project"
    report.indexed, report.chunks_embedded = 0, 471  # walkthrough H: "indexed 0 notes of ...; embedded 471"
    adopt(app, argparse.Namespace(silent=False))
    assert capsys.readouterr().err.splitlines()[-1] == "embedded 471 chunks of the project"


def test_the_also_line_names_a_section_split_in_parts_once():
    from vault_index.surfaces.cli_common import also_line

    also = [{"heading": "Setup", "line_start": 12, "line_end": 20}, {"heading": "", "line_start": 1, "line_end": 4},
            {"heading": "Setup", "line_start": 41, "line_end": 50}]
    assert also_line(also, 5) == "also: Setup 12-20, 41-50; (top) 1-4 (+2 more)"


def test_index_with_no_path_in_a_fresh_project_indexes_the_projects_own_notes(tmp_path):
    """Walkthrough L: `vault-index index` in a fresh project said "indexed 0 files" and left its
    docs/ for the next command to find."""
    project = tmp_path / "orders"
    (project / ".git").mkdir(parents=True)
    write(project / "docs", "run.md", "# Run\n\nstart the orders service with make run\n")
    env = cli_env(tmp_path / "index.db", HOME=str(tmp_path / "home"), CLAUDE_PROJECT_DIR=str(project),
                  VAULT_INDEX_HOME=str(tmp_path / "home" / ".mcp-memory"))
    done = subprocess.run([CLI, "index"], env=env, cwd=project, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "indexed 1 note of the project" in done.stderr, done.stdout + done.stderr
    found = subprocess.run([CLI, "files"], env=env, cwd=project, capture_output=True, text=True, timeout=60)
    assert str(project / "docs" / "run.md") in found.stdout
