"""The edges table is kept one note at a time: an edit touches only the edited note's rows; a
delete turns links to the note into unresolved ones (and lint reports them)."""

from __future__ import annotations

from pathlib import Path

from helpers import FakeEmbedder, write


def _log_edge_writes(db) -> None:
    """Temporary triggers (this connection only) that record the source of every edge row written."""
    db.execute("CREATE TEMP TABLE edge_log(op TEXT, source TEXT)")
    for op, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD")):
        db.execute(f"CREATE TEMP TRIGGER log_{op.lower()} AFTER {op} ON main.edges "
                   f"BEGIN INSERT INTO edge_log VALUES ('{op}', {row}.source); END")


def _vault(root: Path, count: int = 12) -> None:
    for i in range(count):
        write(root, f"n{i:02d}.md", f"---\ntitle: Note {i}\n---\n# Note {i}\n\n"
              f"[[n{(i + 1) % count:02d}]] [[Note {(i + 2) % count}]] [[missing-{i}]]\n")


def test_editing_one_note_touches_only_its_edges(tmp_path, open_app):
    root = tmp_path / "v"
    _vault(root)
    app = open_app(FakeEmbedder())
    app.index([str(root)])
    real = root.resolve()
    assert len(app.store.links("unresolved", "")) == 12
    _log_edge_writes(app.store.db)
    edited = real / "n03.md"
    edited.write_text(edited.read_text() + "\nand [[n07]]\n")
    app.index()
    touched = app.store.db.execute("SELECT op, source FROM edge_log").fetchall()
    assert {source for _, source in touched} == {str(edited)}
    assert sorted(op for op, _ in touched).count("INSERT") == 4  # its three old links and the new one
    assert [r["path"] for r in app.store.links("backlinks", str(real / "n07.md"))] == \
        [str(real / "n03.md"), str(real / "n05.md"), str(real / "n06.md")]


def test_a_title_change_reresolves_only_links_that_could_name_it(tmp_path, open_app):
    root = tmp_path / "v"
    _vault(root)
    app = open_app(FakeEmbedder())
    app.index([str(root)])
    real = root.resolve()
    _log_edge_writes(app.store.db)
    renamed = real / "n05.md"
    renamed.write_text(renamed.read_text().replace("title: Note 5", "title: Five"))
    app.index()
    others = {s for _, s in app.store.db.execute("SELECT op, source FROM edge_log") if s != str(renamed)}
    assert others == {str(real / "n03.md")}  # the one note that wrote [[Note 5]]
    edge = next(e for e in app.store.links("outgoing", str(real / "n03.md")) if e["raw"] == "Note 5")
    assert (edge["status"], edge["target"]) == ("unresolved", None)


def test_deleting_a_note_unresolves_links_to_it_and_lint_reports_them(tmp_path, open_app):
    from vault_index.services.curation import curation
    from vault_index.services.vault.vault import Vault
    from vault_index.services.writes.write import Caller, WriteService

    root = tmp_path / "v"
    _vault(root)
    app = open_app(FakeEmbedder())
    app.index([str(root)])
    real = root.resolve()
    (real / "n04.md").unlink()
    app.index()
    broken = [(e["source"], e["raw"]) for e in app.store.links("unresolved", "") if not e["raw"].startswith("missing")]
    assert broken == [(str(real / "n02.md"), "Note 4"), (str(real / "n03.md"), "n04")]
    assert app.store.links("backlinks", str(real / "n04.md")) == []
    vault = Vault.open(real)
    notes = curation.readable_notes(WriteService(vault), Caller.local(vault), real)
    found = [(i["path"], i["line"]) for i in curation.lint_notes(notes, __import__("datetime").date(2026, 1, 1))
             if i["check"] == "unresolved_link" and "missing" not in i["message"]]
    assert found == [("n02.md", 6), ("n03.md", 6)]
