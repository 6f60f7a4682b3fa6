"""A person at a terminal, driven through a real pseudo-terminal (pexpect): the hint for a bare
`vault-index`, index progress with an ETA, Ctrl-C that says how to finish, a rerank line only
when it is news, and a `status` that matches the index. Plain progress lines off a terminal and
two concurrent index runs that do not both embed everything, with real processes.

Real parts: the installed CLI in child processes, real SQLite, the shipped MiniLM model (the
CLI cannot take the in-process fake). Every wait is bounded.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import cli_env
from vault_index.services.index_state import KEYWORD_ONLY_SHARE

pexpect = pytest.importorskip("pexpect")

pytestmark = pytest.mark.real_model
WAIT_S = 240  # generous: the shipped model embeds a few dozen chunks a second on a busy machine
CLI = [sys.executable, "-m", "vault_index"]
FILES, SECTIONS = 25, 4  # 100 chunks: two embedding commits (64 + 36), so Ctrl-C lands between them
FEW = 10  # 40 chunks, where only the embedding lock matters
WORDS = "garden sensor battery pump boiler recipe flour bike brake chain tyre server backup disk network".split()


def _vault(root: Path, files: int = FILES) -> Path:
    for i in range(files):
        parts = [f"# Note {i}"]
        for j in range(SECTIONS):
            text = " ".join(WORDS[(i + j + k) % len(WORDS)] for k in range(40))
            parts.append(f"\n## Part {j}\n\n{text} item{i}x{j}.")
        (root / f"note-{i:02d}.md").parent.mkdir(parents=True, exist_ok=True)
        (root / f"note-{i:02d}.md").write_text("\n".join(parts) + "\n")
    return root


@pytest.fixture
def env(tmp_path, model_cache) -> dict[str, str]:
    return cli_env(tmp_path / "db" / "index.db", VAULT_EMBED_MODEL="shipped:minilm",
                   VAULT_MODEL_CACHE=str(model_cache), VAULT_RERANK="0")


@pytest.fixture(scope="module")
def model_cache(shipped_model_cache) -> Path:
    return shipped_model_cache  # the shipped model, built once per run (conftest.py)


def _spawn(args: list[str], env: dict[str, str]):
    return pexpect.spawn(CLI[0], CLI[1:] + args, env=env, encoding="utf-8", timeout=WAIT_S, dimensions=(24, 120))


def _vectors(db: str) -> int:
    with sqlite3.connect(db) as conn:
        model = conn.execute("SELECT value FROM meta WHERE key = 'embed_model'").fetchone()[0]
        return conn.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", (model,)).fetchone()[0]


def test_bare_vault_index_on_a_terminal_says_what_it_is_doing_and_still_serves(env):
    child = _spawn([], env)
    child.expect(r"serving MCP over stdio.*Ctrl-C stops.*vault-index --help")
    assert child.isalive()  # it serves: it waits for a client on stdin
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()


def test_a_terminal_session_index_interrupt_status_search_and_finish(env, tmp_path):
    vault = _vault(tmp_path / "vault")
    db = env["VAULT_INDEX_DB"]

    # index: a progress bar with an ETA ([elapsed<remaining]) on the terminal, then Ctrl-C
    child = _spawn(["index", str(vault)], env)
    child.expect(rf"embed:\s+\d+%.*\d+/{FILES * SECTIONS} \[\d\d:\d\d<\d\d:\d\d")
    child.sendintr()
    child.expect(r"interrupted: what was indexed and embedded so far is kept; run `vault-index index` again")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    kept = _vectors(db)
    assert 0 < kept < FILES * SECTIONS

    # status: the vectors the interrupted run stored, rerank off as configured
    child = _spawn(["status"], env)
    child.expect(pexpect.EOF)
    status = child.before
    assert re.search(rf"^vectors\s+{kept} \(", status, re.M), status
    assert re.search(rf"^content\s+1 source, {FILES} files, {FILES * SECTIONS} chunks", status, re.M), status
    assert re.search(r"^rerank\s+off", status, re.M), status

    # search with rerank off: no rerank line at all; with most chunks unembedded, keyword-only, said
    child = _spawn(["search", "garden sensor battery"], env)
    child.expect(pexpect.EOF)
    assert "note-" in child.before and "rerank" not in child.before.lower()
    waiting = FILES * SECTIONS - kept
    if waiting > KEYWORD_ONLY_SHARE * FILES * SECTIONS:
        assert f"keyword-only: {waiting} of the {FILES * SECTIONS} chunks searched" in child.before

    # running it again finishes the job, embedding only what was missing
    child = _spawn(["index", "--json"], env)
    child.expect(pexpect.EOF)
    report = json.loads(child.before[child.before.index("{"):])
    assert report["chunks_embedded"] == FILES * SECTIONS - kept
    assert _vectors(db) == FILES * SECTIONS

    # rerank on but not loadable here: said on the first search, not on the next
    unloadable = dict(env, VAULT_RERANK="1", VAULT_RERANK_MODEL=str(tmp_path / "no-such-reranker"))
    first, second = (subprocess.run(CLI + ["search", "pump boiler"], env=unloadable, capture_output=True,
                                    text=True, timeout=WAIT_S) for _ in range(2))
    assert first.stderr.count("rerank off") == 1 and "rerank off" not in second.stderr
    status = subprocess.run(CLI + ["status"], env=unloadable, capture_output=True, text=True, timeout=WAIT_S).stdout
    assert re.search(r"^rerank\s+on, not loadable here", status, re.M), status
    result = json.loads(subprocess.run(CLI + ["search", "pump boiler", "--json"], env=unloadable,
                                       capture_output=True, text=True, timeout=WAIT_S).stdout)
    assert result["reranked"] is False and result["mode"] == "hybrid"  # never "hybrid+rerank" here


def test_off_a_terminal_progress_is_plain_lines_on_stderr(tmp_path):
    vault = _vault(tmp_path / "vault")
    env = cli_env(tmp_path / "plain.db")  # no model: the scan phase alone
    run = subprocess.run(CLI + ["index", str(vault)], env=env, capture_output=True, text=True, timeout=WAIT_S)
    assert run.returncode == 0, run.stderr
    assert re.search(rf"^scan: {FILES}/{FILES} files \(100%\), \d\d:\d\d elapsed, about \d\d:\d\d left$",
                     run.stderr, re.M)
    assert "\r" not in run.stderr and "scan:" not in run.stdout


def test_two_concurrent_index_runs_embed_each_chunk_once(env, tmp_path):
    vault = _vault(tmp_path / "vault")
    first = subprocess.Popen(CLI + ["index", str(vault), "--json"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        line = first.stderr.readline()  # "scan: 25/25 files ...": the first run now embeds
        assert line.startswith("scan:"), line
        second = subprocess.run(CLI + ["index", str(vault), "--json"], env=env, capture_output=True, text=True,
                                timeout=WAIT_S)
        out, err = first.communicate(timeout=WAIT_S)
    finally:
        if first.poll() is None:
            first.kill()
    a, b = json.loads(out), json.loads(second.stdout)
    # Whether the second run found the first still embedding depends on the machine's load (its
    # scan took 7 s at load 10, longer than the first run's embedding); the sum may not.
    assert a["chunks_embedded"] + b["chunks_embedded"] == FILES * SECTIONS
    assert _vectors(env["VAULT_INDEX_DB"]) == FILES * SECTIONS


def test_a_run_that_finds_another_embedding_says_so_waits_and_then_embeds_what_is_missing(env, tmp_path):
    from filelock import FileLock

    vault = _vault(tmp_path / "vault", FEW)
    held = FileLock(env["VAULT_INDEX_DB"] + ".embed.lock")  # what another index run holds while it embeds
    Path(env["VAULT_INDEX_DB"]).parent.mkdir(parents=True, exist_ok=True)
    held.acquire(timeout=5)
    run = subprocess.Popen(CLI + ["index", str(vault), "--json"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    said = threading.Event()

    def read() -> None:
        for line in run.stderr:
            lines.append(line)
            if "waiting for it" in line:
                said.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert said.wait(WAIT_S), lines
        time.sleep(1.0)
        assert run.poll() is None  # still waiting while the lock is held
        held.release()
        out = run.stdout.read()
        run.wait(timeout=WAIT_S)
    finally:
        if held.is_locked:
            held.release()
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0
    assert json.loads(out)["chunks_embedded"] == FEW * SECTIONS
    assert _vectors(env["VAULT_INDEX_DB"]) == FEW * SECTIONS
