"""A move under the write service's lock discipline, against writers in other processes.

Child processes keep prepending lines to the notes that link to the moved note (each prepend
takes that note's document lock) while this process moves the note, which rewrites those links.
With the locks, nothing is lost either way: every accepted prepend is in the final file and every
link names the note at its new path. Without them, the move's rewrite (composed from a read made
before a child's prepend) would silently drop that line, or the child would put back the old link.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import REPO
from vault_index.services.vault.vault import Vault
from vault_index.services.writes.move import MoveRequest
from vault_index.services.writes.write import Caller, WriteService

pytestmark = pytest.mark.faults

LINKERS = 3
PREPENDS = 30
MOVES = 6  # the note moves again and again while the prepends run, so the two interleave
PREPENDER = """
import json, sys
sys.path.insert(0, {mcp!r})
from vault_index.services.writes.edit_ops import EditRequest
from vault_index.services.vault.vault import Vault
from vault_index.services.writes.write import Caller, WriteService

root, writer = sys.argv[1], int(sys.argv[2])
service = WriteService(Vault.open(root), lock_wait=30.0)
caller = Caller(f"Writer {{writer}} <w{{writer}}@example.org>", "owner", f"agent-{{writer}}")
print("ready", flush=True)
sys.stdin.readline()
done = []
for k in range({prepends}):
    outcome = service.edit(caller, EditRequest("prepend", f"links/l{{writer}}.md", text=f"w{{writer}}-{{k}}"))
    done.append([f"w{{writer}}-{{k}}", outcome.status])
print(json.dumps(done))
"""


def test_a_move_racing_prepends_to_the_linking_notes_loses_nothing(tmp_path):
    root = tmp_path / "notes"
    (root / "links").mkdir(parents=True)
    (root / "target.md").write_text("# Target\n\nthe moved note\n")
    for writer in range(LINKERS):
        (root / "links" / f"l{writer}.md").write_text(f"Points at [[target]] and [t](../target.md), note {writer}.\n")
    script = tmp_path / "prepender.py"
    script.write_text(PREPENDER.format(mcp=str(REPO / "mcp"), prepends=PREPENDS))
    children = [subprocess.Popen([sys.executable, str(script), str(root), str(writer)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True) for writer in range(LINKERS)]
    for child in children:
        assert child.stdout.readline().strip() == "ready"
    for child in children:
        child.stdin.write("go\n")
        child.stdin.flush()
    service = WriteService(Vault.open(root), lock_wait=30.0)
    mover = Caller("Mover <m@example.org>", "owner", "mover")
    names = ["target.md", *(f"kept/m{n}.md" for n in range(1, MOVES)), "kept/moved.md"]
    moves = [service.move(mover, MoveRequest(old, new)) for old, new in zip(names, names[1:], strict=False)]
    results = [json.loads(child.communicate(timeout=120)[0]) for child in children]
    assert [m.status for m in moves] == ["written"] * MOVES, moves
    for writer, done in enumerate(results):
        assert {status for _, status in done} == {"written"}
        text = (root / "links" / f"l{writer}.md").read_text()
        for line, _ in done:
            assert f"{line}\n" in text, (line, text)
        assert text.endswith(f"Points at [[moved]] and [t](../kept/moved.md), note {writer}.\n"), text
    assert not (root / "target.md").exists() and (root / "kept" / "moved.md").read_text().endswith("moved note\n")
