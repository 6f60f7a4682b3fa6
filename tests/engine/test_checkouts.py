"""Team vaults (ADR 0019): one source, several checkouts, each note stored once; paths shown under
this machine's checkout; newest mtime wins; a checkout removes only the version it had. Real
folders, real stores (SQLite and PostgreSQL: each test runs on both), the fake embedder only."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers import BACKENDS, FakeEmbedder, write
from vault_index.errors import UsageError
from vault_index.services.search.search import Filters
from vault_index.surfaces.resources import listed_notes

pytestmark = pytest.mark.parametrize("backend", BACKENDS)

T0 = 1_700_000_000  # every note's mtime unless a test moves it: the checkouts start alike
NOTES = {
    "notes/pump.md": "# Pump\n\nThe pump feeds the [[tank]] through a brass valve.\n",
    "notes/tank.md": "# Tank\n\nThe rain tank holds four thousand litres.\n",
    "log.md": "# Log\n\n## Monday\n\nCleaned the filter of the pump.\n",
}


def _mtime(path: Path, seconds: float) -> None:
    os.utime(path, (seconds, seconds))


def _vault(root: Path) -> Path:
    for rel, text in NOTES.items():
        _mtime(write(root, rel, text), T0)
    return root


def _team(tmp_path: Path, open_app, fake=None):
    """Alice's checkout (the source's first: its canonical root) and Bob's copy of it, both indexed."""
    a = _vault(tmp_path / "alice" / "team-vault")
    b = tmp_path / "bob" / "team-vault"
    shutil.copytree(a, b)  # copy2: the same mtimes, as two clones of one commit would not even have
    app = open_app(fake or FakeEmbedder())
    app.index([str(a)], name="team")
    app.index([str(b)], name="team", checkout=True)
    return app, a, b


def _stored(app, rel: str) -> str | None:
    """The stored text of the note at `rel` (relative to the source), None when it is not indexed."""
    rows = app.store.chunk_rows(c for c, _, _ in app.store.chunk_keys()).values()
    texts = [r.text for r in sorted(rows, key=lambda r: r.line_start) if r.path.endswith("/" + rel)]
    return "\n".join(texts) if texts else None


def test_a_second_checkout_joins_by_name_and_every_note_is_stored_once(tmp_path, open_app):
    fake = FakeEmbedder()
    a = _vault(tmp_path / "alice" / "team-vault")
    b = tmp_path / "bob" / "team-vault"
    shutil.copytree(a, b)
    app = open_app(fake)
    first = app.index([str(a)], name="team")
    embedded, counts = fake.count, app.store.counts()
    with pytest.raises(UsageError, match="--checkout"):  # a bare same-name index never merges
        app.index([str(b)], name="team")
    with pytest.raises(UsageError, match="needs --name"):
        app.index([str(b)], checkout=True)
    joined = app.index([str(b)], name="team", checkout=True)
    assert joined.indexed == 0 and joined.unchanged == first.indexed == len(NOTES)
    assert fake.count == embedded and app.store.counts() == counts  # no note, chunk or vector twice
    [source] = app.sources()
    assert source["name"] == "team" and source["files"] == len(NOTES)
    assert source["checkouts"] == [{"path": str(a), "here": True}, {"path": str(b), "here": True}]
    again = app.index([str(b)], name="team", checkout=True)  # the same command twice: nothing new
    assert again.indexed == again.removed == 0 and app.store.counts() == counts
    hits = app.search("pump brass valve", mode="hybrid").hits
    assert hits and len({h.path for h in hits}) == len(hits)
    assert all(Path(h.path).is_relative_to(a) for h in hits)  # the first checkout is here: as stored

    other = _vault(tmp_path / "unrelated")
    with pytest.raises(UsageError, match="already used by the source"):
        app.index([str(other)], name="team")
    with pytest.raises(UsageError, match="overlaps"):
        app.index([str(b / "notes")], name="team", checkout=True)


def test_paths_are_this_machines_when_the_first_checkout_is_not_here(tmp_path, open_app):
    app, a, b = _team(tmp_path, open_app)
    write(b, "notes/bad.md", "---\ntitle: [unclosed\n---\n# Bad\n\nbroken frontmatter, body kept\n")
    app.index()
    a.rename(tmp_path / "alice" / "moved-away")  # this machine now holds Bob's checkout only
    bob = open_app(FakeEmbedder())  # a new process: it sees the folders as they are now

    hits = bob.search("pump brass valve tank", mode="hybrid").hits
    assert hits and all(Path(h.path).is_relative_to(b) for h in hits)
    for hit in hits:
        note = bob.get_note(hit.path)
        assert note["indexed"] and note["path"] == hit.path
    assert bob.get_note("notes/pump.md")["path"] == str(b / "notes" / "pump.md")
    assert [x["path"] for x in bob.store.links("backlinks", str(b / "notes" / "tank.md"))] == [
        str(b / "notes" / "pump.md")]
    assert [x["target"] for x in bob.store.links("outgoing", str(b / "notes" / "pump.md"))] == [
        str(b / "notes" / "tank.md")]
    status = bob.status()
    assert status["sources"][0]["path"] == str(b)
    assert [c["here"] for c in status["sources"][0]["checkouts"]] == [False, True]
    assert [p["path"] for p in status["problems"]] == [str(b / "notes" / "bad.md")]
    assert {real for real, _ in listed_notes(bob)} == {str(b / rel) for rel in (*NOTES, "notes/bad.md")}
    for filters, source in ((None, "team"), (Filters(path_prefix=str(b / "notes")), None),
                            (Filters(path_prefix=str(tmp_path / "bob")), None)):
        found = bob.search("pump tank", mode="keyword", filters=filters, source=source).hits
        assert found and all(Path(h.path).is_relative_to(b) for h in found), (filters, source)
    report = bob.index()  # Alice's root missing here is not a problem: Bob's checkout is here
    assert report.problems == [] and report.indexed == report.removed == 0
    # one representation underneath: the rows keep the canonical (Alice's) paths
    source_id = bob.store.checkouts()[0][1]
    assert all(Path(p).is_relative_to(a) for p in bob.store.inner.file_paths(source_id))


def test_a_stale_checkout_never_reverts_a_newer_note(tmp_path, open_app):
    app, a, b = _team(tmp_path, open_app)
    _mtime(write(b, "notes/pump.md", "# Pump\n\nBob replaced the valve with a steel one.\n"), T0 + 100)
    assert app.index().indexed == 1
    assert "steel" in _stored(app, "notes/pump.md")
    again = app.index()  # Alice's copy has not changed since her checkout last looked: nothing
    assert again.indexed == again.stale == 0 and "steel" in _stored(app, "notes/pump.md")

    # Alice's copy changes but is older than Bob's (her clock behind, an old branch): stale, said
    _mtime(write(a, "notes/pump.md", "# Pump\n\nAlice's older idea: a plastic valve.\n"), T0 + 50)
    report = app.index()
    assert report.stale == 1 and report.indexed == 0
    assert any(p == str(a / "notes" / "pump.md") and "newer version" in m for p, m in report.problems)
    assert "steel" in _stored(app, "notes/pump.md") and "plastic" not in _stored(app, "notes/pump.md")
    assert app.index().stale == 0  # said once: her copy is recorded as seen

    _mtime(write(a, "notes/pump.md", "# Pump\n\nAlice, later: a bronze valve.\n"), T0 + 200)
    assert app.index().indexed == 1 and "bronze" in _stored(app, "notes/pump.md")
    assert app.store.counts()["files"] == len(NOTES)


def test_an_edit_of_the_stored_version_wins_whatever_the_clocks(tmp_path, open_app):
    """The mtime comparison only settles two checkouts' concurrent changes: a checkout that had the
    stored version and changed it made a successor, even with a clock behind or within one tick."""
    app, a, b = _team(tmp_path, open_app)
    pump = a / "notes" / "pump.md"
    _mtime(write(a, "notes/pump.md", "# Pump\n\nEdited on a machine whose clock is a day behind.\n"), T0 - 86400)
    assert app.index().indexed == 1 and "a day behind" in _stored(app, "notes/pump.md")
    write(a, "notes/pump.md", "# Pump\n\nEdited again within the same file-system tick, longer this time.\n")
    _mtime(pump, T0 - 86400)  # the same mtime as the version it replaces
    assert app.index().indexed == 1 and "same file-system tick" in _stored(app, "notes/pump.md")
    assert app.index().indexed == 0  # Bob's copy (the version before both edits) has not changed


def test_a_checkout_removes_only_notes_it_had_and_only_the_version_it_had(tmp_path, open_app):
    app, a, b = _team(tmp_path, open_app)
    _mtime(write(a, "notes/new.md", "# New\n\nA note only Alice has pulled.\n"), T0 + 10)
    assert app.index().indexed == 1
    assert app.index().removed == 0 and _stored(app, "notes/new.md")  # Bob lacks it: not his to remove
    (a / "notes" / "new.md").unlink()
    assert app.index().removed == 1 and _stored(app, "notes/new.md") is None  # Alice had it: gone

    # Bob deletes a note both had, same version: removed; Alice's unchanged copy does not bring it back
    (b / "notes" / "tank.md").unlink()
    assert app.index().removed == 1 and _stored(app, "notes/tank.md") is None
    assert app.index().indexed == 0 and _stored(app, "notes/tank.md") is None
    _mtime(a / "notes" / "tank.md", T0 + 5)  # even a fresh look at the very bytes that were removed
    assert app.index().stale == 1 and _stored(app, "notes/tank.md") is None
    # restored in the checkout that saw it go (git checkout -- tank.md): back
    write(b, "notes/tank.md", NOTES["notes/tank.md"])
    assert app.index().indexed == 1 and "rain tank" in _stored(app, "notes/tank.md")

    # a removal never takes a newer version the remover never had
    _mtime(write(b, "log.md", "# Log\n\n## Tuesday\n\nBob replaced the filter.\n"), T0 + 300)
    assert app.index().indexed == 1
    (a / "log.md").unlink()
    assert app.index().removed == 0 and "Bob replaced" in _stored(app, "log.md")
    (b / "log.md").unlink()  # Bob pulls the deletion: his copy was the stored one
    assert app.index().removed == 1 and _stored(app, "log.md") is None
    assert app.store.counts()["files"] == 2


def test_the_edit_hook_path_reindexes_a_checkout_note_under_its_one_key(tmp_path, open_app):
    app, a, b = _team(tmp_path, open_app)
    pump = write(b, "notes/pump.md", "# Pump\n\nBob's hook-indexed edit: a copper valve.\n")
    _mtime(pump, T0 + 60)
    report = app.reindex_file(str(pump))
    assert report.indexed == 1 and "copper" in _stored(app, "notes/pump.md")
    assert app.store.counts()["files"] == len(NOTES)
    pump.unlink()
    assert app.reindex_file(str(pump)).removed == 1 and _stored(app, "notes/pump.md") is None


def test_removing_a_checkout_keeps_what_the_others_have_and_the_source_name_drops_all(tmp_path, open_app):
    app, a, b = _team(tmp_path, open_app)
    _mtime(write(b, "notes/only-bob.md", "# Only Bob\n\nA draft Bob never pushed.\n"), T0 + 10)
    app.index()
    assert app.remove(str(b)) == 1  # Bob's checkout goes; of its notes, only his draft
    assert app.store.counts()["files"] == len(NOTES) and _stored(app, "notes/only-bob.md") is None
    assert app.sources()[0]["path"] == str(a) and "checkouts" not in app.sources()[0]  # one left

    app.index([str(b)], name="team", checkout=True)
    assert app.remove(str(a)) == 0  # the first checkout goes: the source is keyed under Bob's root now
    source_id = app.store.checkouts()[0][1]
    assert all(Path(p).is_relative_to(b) for p in app.store.inner.file_paths(source_id))
    assert app.sources()[0]["path"] == str(b) and app.sources()[0]["files"] == len(NOTES) + 1
    assert [x["path"] for x in app.store.links("backlinks", str(b / "notes" / "tank.md"))] == [
        str(b / "notes" / "pump.md")]
    assert app.index().indexed == 0  # nothing to read again after the re-keying

    assert app.remove("team") == len(NOTES) + 1  # the name: the whole source, every checkout
    assert app.store.counts() == {"sources": 0, "files": 0, "chunks": 0} and app.store.checkouts() == []
