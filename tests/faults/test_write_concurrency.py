"""Must-show 1: concurrent writers on a few notes, in threads and in processes, against a real git repo.

Each writer reads a note, appends its own line to the body and replaces the note naming the
version it read. Accepted writes must form one chain per note (no two accepted writes share a base
version: that would be a lost update), every accepted line must be in the final file, every
rejection must be `stale` or `locked`, and git must hold exactly the accepted writes.

CI runs 8 writers x WRITES_CI writes; VAULT_FAULTS_FULL=1 runs the full 8 x 50 (both report timings).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import REPO
from vault_index.services.vault.vault import Vault
from vault_index.services.writes.write import Caller, WriteRequest, WriteService

pytestmark = pytest.mark.faults

WRITERS = 8
NOTES = 5
WRITES_CI = 12
WRITES_FULL = 50
WRITES = WRITES_FULL if os.environ.get("VAULT_FAULTS_FULL") else WRITES_CI
CONFIG = "roles: {owner: {read: ['*'], write: ['*'], promote: true}}\nlocal_role: owner\ngit: {commit: true}\n"

WRITER_LOOP = """
import json, random, sys
sys.path.insert(0, {mcp!r})
from vault_index.services.vault.vault import Vault
from vault_index.services.writes.write import Caller, WriteRequest, WriteService

def run(root, writer, writes, notes):
    service = WriteService(Vault.open(root), lock_wait=30.0)
    caller = Caller(f"Writer {{writer}} <w{{writer}}@example.org>", "owner", f"agent-{{writer}}")
    rng = random.Random(writer)
    results = []
    for k in range(writes):
        note = f"notes/n{{rng.randrange(notes)}}.md"
        view = service.read(caller, note)
        line = f"w{{writer}}-{{k}}"
        request = WriteRequest("replace", note, body=view.body + line + "\\n", base_version=view.version,
                               request_id=f"{{line}}-{{note}}")
        outcome = service.write(caller, request)
        results.append({{"note": note, "line": line, "status": outcome.status, "base": view.version,
                        "version": outcome.version, "request_id": request.request_id, "commit": outcome.commit,
                        "notices": list(outcome.notices), "message": outcome.message}})
    return results

if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))))
"""


def git(root, *args) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True,
                          timeout=60).stdout


@pytest.fixture
def root(tmp_path) -> Path:
    root = tmp_path / "vault"
    (root / "notes").mkdir(parents=True)
    (root / ".vault-index").mkdir()
    (root / ".vault-index" / "config.yaml").write_text(CONFIG)
    git(root, "init", "-q")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init")
    service = WriteService(Vault.open(root))
    for n in range(NOTES):
        made = service.write(Caller("Seed <s@example.org>", "owner"),
                             WriteRequest("create", f"notes/n{n}.md", body="", frontmatter={"title": f"N{n}"}))
        assert made.status == "written"
    return root


def check(root: Path, results: list[dict]) -> dict:
    accepted = [r for r in results if r["status"] == "written"]
    rejected = [r for r in results if r["status"] != "written"]
    assert {r["status"] for r in rejected} <= {"stale", "locked"}, {r["message"] for r in rejected}
    assert all(r["message"] for r in rejected)
    assert all(r["notices"] == [] for r in accepted)
    service = WriteService(Vault.open(root))
    reader = Caller("Check <c@example.org>", "owner")
    for n in range(NOTES):
        note = f"notes/n{n}.md"
        mine = [r for r in accepted if r["note"] == note]
        bases = [r["base"] for r in mine]
        assert len(bases) == len(set(bases)), f"two accepted writes on {note} named the same version: a lost update"
        lines = [line for line in service.read(reader, note).body.splitlines() if line]
        assert sorted(lines) == sorted(r["line"] for r in mine)
    log = git(root, "log", "--format=%(trailers:key=Vault-Request-Id,valueonly)", "--", "notes/")
    logged = [line.strip() for line in log.splitlines() if line.strip()]
    seeded = NOTES
    assert len(logged) == len(accepted) + seeded
    assert set(logged) >= {r["request_id"] for r in accepted}
    assert git(root, "status", "--porcelain", "--", "notes/") == ""
    return {"accepted": len(accepted), "stale": sum(r["status"] == "stale" for r in rejected),
            "locked": sum(r["status"] == "locked" for r in rejected)}


def test_threads_lose_no_update_and_git_holds_exactly_the_accepted_writes(root):
    namespace: dict = {}
    exec(WRITER_LOOP.format(mcp=str(REPO / "mcp")).split('if __name__ == "__main__":')[0], namespace)
    results: list[dict] = []
    guard = threading.Lock()

    def writer(w: int) -> None:
        found = namespace["run"](str(root), w, WRITES, NOTES)
        with guard:
            results.extend(found)

    started = time.monotonic()
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads)
    assert len(results) == WRITERS * WRITES
    counts = check(root, results)
    print(f"\nthreads {WRITERS}x{WRITES}: {counts} in {time.monotonic() - started:.1f} s")


def test_processes_lose_no_update_and_git_holds_exactly_the_accepted_writes(root):
    code = WRITER_LOOP.format(mcp=str(REPO / "mcp"))
    started = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-c", code, str(root), str(w), str(WRITES), str(NOTES)],
                              stdout=subprocess.PIPE, text=True) for w in range(WRITERS)]
    results = []
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0
        results += json.loads(out)
    assert len(results) == WRITERS * WRITES
    counts = check(root, results)
    print(f"\nprocesses {WRITERS}x{WRITES}: {counts} in {time.monotonic() - started:.1f} s")
