"""Issue 22 (Medium): a document lock is shared by every writer of a vault, whatever its HOME.

Two processes with different HOME, XDG_STATE_HOME and VAULT_LOCK_DIR (so different per-user lock
folders) write the same note: the second must see the first's lock, and 2 x 15 appends racing
must all land. On the old code (locks only in the per-user folder) the second writer was never
`locked` and appends were lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

pytestmark = pytest.mark.faults

CONFIG = "roles: {owner: {read: ['*'], write: ['*'], promote: true}}\nlocal_role: owner\ngit: {commit: false}\n"

SCRIPT = """
import json, sys, time
sys.path.insert(0, {mcp!r})
from vault_index.services.vault.vault import Vault
from vault_index.services.writes.write import Caller, WriteService

root, mode, tag, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
service = WriteService(Vault.open(root), lock_wait=float(sys.argv[5]))
caller = Caller(f"{{tag}} <{{tag}}@example.org>", "owner")

def hold(old):
    print("held", flush=True)
    time.sleep(3)
    return (old or "") + "held\\n"

def append(line):
    def change(old):
        text = old or ""
        time.sleep(0.01)  # widen the read-modify-write window the lock must cover
        return text + line + "\\n"
    return change

statuses = []
for k in range(count):
    change = hold if mode == "hold" else append(f"{{tag}}-{{k}}")
    statuses.append(service.update_file(caller, "notes/log.md", change, why="test").status)
print(json.dumps(statuses), flush=True)
"""


def env_for(tmp_path: Path, who: str) -> dict[str, str]:
    home = tmp_path / f"home-{who}"
    home.mkdir(exist_ok=True)
    return dict(os.environ, HOME=str(home), XDG_STATE_HOME=str(home / "state"),
                VAULT_LOCK_DIR=str(home / "locks"), VAULT_INDEX_HOME=str(home / "index"))


@pytest.fixture
def root(tmp_path) -> Path:
    root = tmp_path / "vault"
    (root / "notes").mkdir(parents=True)
    (root / ".vault-index").mkdir()
    (root / ".vault-index" / "config.yaml").write_text(CONFIG)
    (root / "notes" / "log.md").write_text("")
    return root


def run(tmp_path, root, who, mode, count, wait) -> subprocess.Popen:
    script = tmp_path / "writer.py"
    script.write_text(SCRIPT.format(mcp=str(REPO / "mcp")))
    return subprocess.Popen([sys.executable, str(script), str(root), mode, who, str(count), str(wait)],
                            stdout=subprocess.PIPE, text=True, env=env_for(tmp_path, who))


def test_a_writer_with_another_home_waits_for_the_lock(tmp_path, root):
    holder = run(tmp_path, root, "alice", "hold", 1, 10)
    assert holder.stdout.readline().strip() == "held"
    other = run(tmp_path, root, "bob", "append", 1, 0.5)
    out, _ = other.communicate(timeout=60)
    holder.communicate(timeout=60)
    assert json.loads(out) == ["locked"]  # old code: "written" while alice held the note
    assert (root / ".vault-index" / "locks").is_dir()


def test_racing_appends_from_two_homes_all_land(tmp_path, root):
    writers = [run(tmp_path, root, who, "append", 15, 30) for who in ("alice", "bob")]
    outs = [json.loads(w.communicate(timeout=120)[0]) for w in writers]
    assert all(status == "written" for out in outs for status in out)
    lines = (root / "notes" / "log.md").read_text().splitlines()
    assert sorted(lines) == sorted(f"{who}-{k}" for who in ("alice", "bob") for k in range(15))
