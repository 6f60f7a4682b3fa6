"""index-fresh after a note's mtime moved but its bytes did not (a touch, a checkout, a sync client).

Found walking docs/getting-started.md on a fresh clone: after files were rewritten with the same
text, `vault-index index` said "unchanged" (right: nothing to re-index) but the invariants kept
warning "changed since indexing" and told the person to run that same `vault-index index`, which
never cleared it. The sync records the new mtime on the checkout's copy (ADR 0019), not on the
stored note; the check must accept either.
"""

from __future__ import annotations

import os
import subprocess
import sys

from helpers import CLI, REPO, cli_env, write

sys.path.insert(0, str(REPO / "scripts"))
import invariants  # noqa: E402
from _invariant_wiring import Context  # noqa: E402
from vault_index.config import Settings  # noqa: E402


def test_a_touched_note_is_fresh_once_a_sync_has_seen_it(tmp_path, monkeypatch):
    env = cli_env(tmp_path / "state" / "index.db")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    notes = tmp_path / "notes"
    note = write(notes, "garden.md", "# Garden\n\nTwo AA cells last nine weeks.\n")
    write(notes, "other.md", "# Other\n\nUntouched.\n")
    subprocess.run([CLI, "index", str(notes)], env=env, check=True, capture_output=True, timeout=120)
    context = Context(project=tmp_path, settings=Settings.from_env())
    assert invariants.check_index_fresh(context).status == "ok"

    later = note.stat().st_mtime + 60
    os.utime(note, (later, later))  # same bytes, new mtime
    assert invariants.check_index_fresh(context).status == "warn"  # not seen by a sync yet: say so
    done = subprocess.run([CLI, "index"], env=env, check=True, capture_output=True, text=True, timeout=120)
    assert "indexed 0 files, 2 unchanged" in done.stdout  # nothing to re-index
    result = invariants.check_index_fresh(context)
    assert result.status == "ok", result.detail  # the advised fix clears the warning

    note.write_text("# Garden\n\nTwo AA cells last ten weeks.\n")  # a real edit still counts
    os.utime(note, (later + 60, later + 60))
    assert invariants.check_index_fresh(context).status == "warn"


def test_a_plugin_user_is_told_a_fix_they_can_run(tmp_path, monkeypatch):
    """A plugin user has no `vault-index` on PATH; the SessionStart hook must not advise it."""
    env = cli_env(tmp_path / "state" / "index.db")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    note = write(tmp_path / "notes", "garden.md", "# Garden\n\nTwo AA cells.\n")
    subprocess.run([CLI, "index", str(note.parent)], env=env, check=True, capture_output=True, timeout=120)
    note.write_text("# Garden\n\nThree AA cells.\n")
    plugin = Context(project=tmp_path, plugin_root=tmp_path / "plugin", plugin_data=tmp_path / "data",
                     settings=Settings.from_env())
    result = invariants.check_index_fresh(plugin)
    assert result.status == "warn" and "index_paths" in result.fix and "vault-index index" not in result.fix
    clone = invariants.check_index_fresh(Context(project=tmp_path, settings=Settings.from_env()))
    assert "vault-index index" in clone.fix
