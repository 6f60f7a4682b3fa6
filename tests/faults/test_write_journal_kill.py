"""Must-show (issue 36): random SIGKILLs of writes, edits and moves, each followed by its retry.

A forked writer (its own App: the kill lands in the re-index too) runs one operation of a real git
vault: an append, a prepend, a replace_section or a move of a note three others link to. It is
killed either at a named step (services/writes/journal.FAULT_ENV: intent, replaced, renamed,
rewritten, reindexed, committed) or after a random delay. Then the same request (same request id)
is retried from another process, as an agent whose call timed out would.

Counted over every trial, each must be 0: a change applied twice, a `written` answer without a
commit (or whose commit does not hold the change), a link naming the note's old name after the
retry, a request id committed twice. After the trials the index must hold every note's current
bytes and nothing of the old names, with no sync run.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers import FakeEmbedder, make_settings
from vault_index.engine.embedding.models import Models
from vault_index.engine.files import fileio
from vault_index.engine.files.sources import walk_notes
from vault_index.services.app import App
from vault_index.services.vault.vault import Vault
from vault_index.services.writes import journal
from vault_index.services.writes.edit_ops import EditRequest
from vault_index.services.writes.write import Caller, WriteRequest
from vault_index.services.writes.write_types import MoveRequest

pytestmark = [pytest.mark.faults, pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")]

TRIALS = int(os.environ.get("VAULT_JOURNAL_TRIALS", "600" if os.environ.get("VAULT_FAULTS_FULL") else "160"))
CONFIG = "roles: {owner: {read: ['*'], write: ['*']}}\nlocal_role: owner\ngit: {commit: true}\n"
ME = Caller("Pat Person <pat@example.org>", "owner", "kill-test")
STEPS = {"append": ("intent", "replaced", "reindexed", "committed"),
         "prepend": ("intent", "replaced", "reindexed", "committed"),
         "replace_section": ("intent", "replaced", "reindexed", "committed"),
         "move": ("intent", "renamed", "rewritten", "reindexed", "committed")}
LINKERS = ("notes/l0.md", "notes/l1.md", "notes/l2.md")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def seed(root: Path) -> None:
    for folder in ("work", "notes", "m", ".vault-index"):
        (root / folder).mkdir(parents=True)
    (root / ".vault-index" / "config.yaml").write_text(CONFIG)
    (root / ".vault-index" / ".gitignore").write_text(fileio.STATE_GITIGNORE)
    (root / "work" / "log.md").write_text("---\ntitle: Log\n---\n# Log\n")
    (root / "work" / "top.md").write_text("---\ntitle: Top\n---\n# Top\n")
    (root / "work" / "sections.md").write_text("---\ntitle: S\n---\n# S\n\n## Status\n\nnone yet\n\n## Tail\n\nkept\n")
    (root / "m" / "n0.md").write_text("---\ntitle: Moving\n---\n# Moving\n\nthe note that moves\n")
    for n, rel in enumerate(LINKERS):
        (root / rel).write_text(f"# L{n}\n\nSee [[n0]] and [the mover](../m/n0.md).\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seed")


def request_for(op: str, trial: int, root: Path, moves: int, service):
    rid, marker = f"k{trial}", f"marker-{trial}"
    if op == "append":
        return WriteRequest("append", "work/log.md", body=marker, request_id=rid)
    if op == "prepend":
        return EditRequest("prepend", "work/top.md", text=marker, request_id=rid)
    if op == "replace_section":
        version = service.read(ME, "work/sections.md").version
        return EditRequest("replace_section", "work/sections.md", text=marker, heading="Status",
                           base_version=version, request_id=rid)
    return MoveRequest(f"m/n{moves}.md", f"m/n{moves + 1}.md", request_id=rid)


def run(service, request):
    if isinstance(request, MoveRequest):
        return service.move(ME, request)
    if isinstance(request, EditRequest):
        return service.edit(ME, request)
    return service.write(ME, request)


def orphans_finish(root: Path) -> None:
    """Wait for the git processes a killed writer started (they outlive it, and finish on their own in
    milliseconds; an agent's retry comes long after): the retry is then alone in the repository."""
    for _ in range(1000):
        busy = False
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            busy |= bool(argv) and argv[0].endswith(b"git") and str(root).encode() in argv
        if not busy and not (root / ".git" / "index.lock").exists():
            return
        time.sleep(0.01)


def writer(root: str, index_dir: str, request, step: str | None, ready) -> None:
    if step:
        os.environ[journal.FAULT_ENV] = step
    app = App.open(make_settings(Path(index_dir)), models=Models.fixed(FakeEmbedder()))
    service = app.writer(Vault.open(root))
    ready.set()
    run(service, request)
    time.sleep(60)  # finished before the kill: waits for it (the retry then gets the stored answer)


def test_random_kills_with_retries_leave_no_duplicate_no_uncommitted_answer_and_no_broken_link(tmp_path, open_app,
                                                                                                monkeypatch):
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("VAULT_LOCK_DIR", str(tmp_path / "locks"))
    (tmp_path / "gitconfig").write_text("[user]\n\tname = Pat Person\n\temail = pat@example.org\n")
    root = tmp_path / "vault"
    seed(root)
    app = open_app(FakeEmbedder())  # the retrying process: its own App on the same index
    app.index([str(root)])
    service = app.writer(Vault.open(root))
    context = multiprocessing.get_context("fork")
    rng = random.Random(36)
    ops = ("append", "prepend", "replace_section", "move")
    counts = {"duplicated": 0, "written_without_commit": 0, "commit_without_change": 0, "broken_links": 0,
              "committed_twice": 0, "landed_before_kill": 0, "kills": 0, "finished_before_kill": 0}
    moves, old_names, seen = 0, [], []
    span = 0.25  # a write's length here, re-measured from the retries: random kills land inside it
    started = time.monotonic()
    for trial in range(TRIALS):
        op = ops[trial % len(ops)]
        request = request_for(op, trial, root, moves, service)
        path = request.new_path if op == "move" else request.path
        before = {rel: (root / rel).read_bytes() if (root / rel).exists() else None
                  for rel in (request.path, *LINKERS)}
        step = rng.choice(STEPS[op]) if trial % 2 == 0 else None
        ready = context.Event()
        child = context.Process(target=writer, args=(str(root), str(tmp_path), request, step, ready), daemon=True)
        child.start()
        assert ready.wait(30), f"trial {trial}: the writer did not start"
        if step is None:
            time.sleep(rng.uniform(0.0, span))
        if child.is_alive() and step is None:
            os.kill(child.pid, signal.SIGKILL)
        child.join(30)
        assert child.exitcode == -signal.SIGKILL, f"trial {trial}: {child.exitcode}"
        counts["kills"] += 1
        orphans_finish(root)
        after = {rel: (root / rel).read_bytes() if (root / rel).exists() else None for rel in before}
        counts["landed_before_kill"] += after != before
        counts["finished_before_kill"] += bool(service.requests.get(service._request_key(ME, request.request_id)))
        clock = time.monotonic()
        outcome = run(service, request)
        span = max(0.05, min(1.0, 0.7 * span + 0.3 * (time.monotonic() - clock) * 3))
        assert outcome.status == "written", (trial, op, step, outcome)
        commits = git(root, "log", "--format=%H", "-F", f"--grep=Vault-Request-Id: {request.request_id}").split()
        counts["committed_twice"] += len(commits) > 1
        if op == "move" and (root / path).exists():
            moves += 1
            old_names.append(request.path)
        if not outcome.commit:
            counts["written_without_commit"] += 1
            seen.append((trial, op, step, outcome))
            continue
        if op == "move":
            held = git(root, "ls-tree", "-r", "--name-only", outcome.commit).split()
            counts["commit_without_change"] += path not in held or request.path in held
            for rel in LINKERS:
                text = (root / rel).read_text()
                new = Path(path).stem
                counts["broken_links"] += f"[[{Path(request.path).stem}]]" in text or f"[[{new}]]" not in text
                counts["broken_links"] += f"(../{path})" not in text
        else:
            marker = f"marker-{trial}"
            counts["duplicated"] += (root / path).read_text().count(marker) != 1
            counts["commit_without_change"] += marker not in git(root, "show", f"{outcome.commit}:{path}")
    elapsed = time.monotonic() - started
    assert service.requests.pending() == []
    assert git(root, "status", "--porcelain", "--", "work", "notes", "m") == ""  # every change committed
    print(f"\njournal kill test: {TRIALS} trials ({counts['kills']} SIGKILLs) in {elapsed:.1f} s: {counts}")
    assert seen == []
    assert {k: counts[k] for k in ("duplicated", "written_without_commit", "commit_without_change", "broken_links",
                                   "committed_twice")} == dict.fromkeys(("duplicated", "written_without_commit",
                                                                        "commit_without_change", "broken_links",
                                                                        "committed_twice"), 0)
    assert counts["landed_before_kill"] >= TRIALS // 4  # the kills landed mid-write, not only before it
    assert counts["finished_before_kill"] < TRIALS // 2
    # the index the killed writers and the retries wrote: every note's bytes, no old name, no sync run
    real = root.resolve()
    (source_id,) = [sid for sid, path in app.store.sources() if path == str(real)]
    on_disk = {str(p) for p in walk_notes(real)}
    assert app.store.file_paths(source_id) == on_disk
    stale = [p for p in on_disk if app.store.file_state(p).hash != hashlib.sha256(Path(p).read_bytes()).hexdigest()]
    assert stale == []
    assert all(app.store.file_state(str(real / name)) is None for name in old_names)
