"""Move (rename) a note: every link to it rewritten in the same commit and nothing else changed, on
a person's plain notes folder (a git repository with commits asked for) and in an init vault."""

from __future__ import annotations

import subprocess

import pytest
from vault_index.engine.files import doc_locks, fileio
from vault_index.services.curation.scaffold import scaffold
from vault_index.services.graph import linkgraph
from vault_index.services.vault.vault import Vault
from vault_index.services.writes.edit_ops import EditRequest
from vault_index.services.writes.move import MoveRequest
from vault_index.services.writes.write import Caller, WriteService

MOVED = "# Pricing\n\nSee [the roadmap](../plans/roadmap.md) and [[roadmap]].\n\n## Tiers\n\nthree tiers\n"
LINKER = (
    "# Links to pricing\n\n"
    "Bare [[pricing]], aliased [[pricing|the price note]], to a heading [[pricing#Tiers]], embedded ![[pricing]].\n"
    "A path [[{folder}/pricing]] and markdown [price](../{folder}/pricing.md) and "
    "[tiers](../{folder}/pricing.md#tiers).\n"
    "Not links: `[[pricing]]` in code, [site](https://example.org/pricing.md), [[pricing-old]].\n"
    "\n```\n[[pricing]] in a fence\n```\n"
)
ROADMAP = "# Roadmap\n\nNothing about prices, and [[elsewhere]] is unresolved.\n"


def git(root, *args) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture(params=["plain", "vault"])
def folder(request, tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    (tmp_path / "gitconfig").write_text("[user]\n\tname = Pat Person\n\temail = pat@example.org\n")
    if request.param == "plain":
        monkeypatch.setenv("VAULT_GIT_COMMIT", "1")  # a person's folder commits only when asked
        root = tmp_path / "notes"
        root.mkdir()
        git(root, "init", "-q")
        names = {"from": "work", "to": "archive", "links": "journal", "plans": "plans"}
    else:
        root = tmp_path / "vault"
        scaffold(root)
        names = {"from": "drafts", "to": "decisions", "links": "research", "plans": "research"}
    plans = names["plans"]
    files = {
        f"{names['from']}/pricing.md": MOVED.replace("../plans/", f"../{plans}/"),
        f"{names['links']}/links.md": LINKER.format(folder=names["from"]),
        f"{plans}/roadmap.md": ROADMAP,
    }
    if request.param == "vault":  # vault notes carry their collection, and a link field
        files = {rel: f"---\ntitle: {rel.split('/')[1][:-3]}\ncollection: {rel.split('/')[0]}\nstatus: draft\n"
                      "created: 2026-01-02\nupdated: 2026-01-02\n"
                      + (f'related:\n  - "[[{names["from"]}/pricing]]"\n' if "links" in rel else "")
                      + "---\n" + text for rel, text in files.items()}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the person's notes")
    service = WriteService(Vault.open(root))
    return root, names, service, Caller.local(service.vault, agent="claude-code"), files


def snapshot(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.md") if ".git" not in p.parts}


def test_a_move_rewrites_every_link_to_the_note_and_nothing_else_in_one_commit(folder):
    root, names, service, caller, files = folder
    old, new = f"{names['from']}/pricing.md", f"{names['to']}/price-list.md"
    before = snapshot(root)
    head = git(root, "rev-parse", "HEAD").strip()
    outcome = service.move(caller, MoveRequest(old, new))
    assert outcome.status == "written", outcome
    assert outcome.path == new and not (root / old).exists()
    linker = f"{names['links']}/links.md"
    expected = before[linker].decode().replace(
        "Bare [[pricing]], aliased [[pricing|the price note]], to a heading [[pricing#Tiers]], embedded ![[pricing]].",
        "Bare [[price-list]], aliased [[price-list|the price note]], to a heading [[price-list#Tiers]], "
        "embedded ![[price-list]].").replace(
        f"A path [[{names['from']}/pricing]] and markdown [price](../{names['from']}/pricing.md) and "
        f"[tiers](../{names['from']}/pricing.md#tiers).",
        f"A path [[{names['to']}/price-list]] and markdown [price](../{names['to']}/price-list.md) and "
        f"[tiers](../{names['to']}/price-list.md#tiers).")
    if "related:" in expected:
        expected = expected.replace(f'"[[{names["from"]}/pricing]]"', f'"[[{names["to"]}/price-list]]"')
    after = snapshot(root)
    assert after[linker].decode() == expected
    # the roadmap does not link to the note: not one byte of it changes
    assert after[f"{names['plans']}/roadmap.md"] == before[f"{names['plans']}/roadmap.md"]
    moved = before[old].decode()
    if names["plans"] != names["from"]:  # its own relative link still reaches the roadmap from the new folder
        assert after[new].decode().replace(f"collection: {names['to']}", f"collection: {names['from']}") == moved
    assert set(after) == (set(before) - {old}) | {new}
    # one commit, holding the rename and the rewritten links, with the write's provenance
    assert git(root, "rev-list", "--count", f"{head}..HEAD").strip() == "1"
    changed = git(root, "show", "--name-status", "--format=", "HEAD").split()
    assert {old, new, linker} <= set(changed)
    assert f"{names['plans']}/roadmap.md" not in changed
    trailers = git(root, "log", "-1", "--format=%B")
    assert "Vault-Operation: move" in trailers and "Vault-Agent: claude-code" in trailers
    assert git(root, "status", "--porcelain", "--", ".").strip() == ""
    history = service.history(caller, new)
    assert [entry["operation"] for entry in history][0] == "move"
    assert outcome.result["links_rewritten"][linker] == 7 + ("related:" in expected)


def test_a_move_onto_an_existing_note_is_refused_and_changes_nothing(folder):
    root, names, service, caller, _ = folder
    before = snapshot(root)
    outcome = service.move(caller, MoveRequest(f"{names['from']}/pricing.md", f"{names['plans']}/roadmap.md"))
    assert outcome.status == "refused" and "already exists" in outcome.message
    assert snapshot(root) == before


def test_a_stale_version_is_refused_and_changes_nothing(folder):
    root, names, service, caller, _ = folder
    old = f"{names['from']}/pricing.md"
    stale = fileio.file_version((root / old).read_bytes())
    (root / old).write_text((root / old).read_text() + "\nThe person's own edit.\n")
    before = snapshot(root)
    outcome = service.move(caller, MoveRequest(old, f"{names['to']}/new/deeper/price-list.md", base_version=stale))
    assert outcome.status == "stale" and outcome.version == fileio.file_version(before[old])
    assert snapshot(root) == before
    assert not (root / names["to"] / "new").exists()  # no folder left behind for the name it did not take
    assert service.move(caller, MoveRequest(old, f"{names['to']}/price-list.md",
                                            base_version=outcome.version)).status == "written"


def test_a_case_only_rename_works_and_keeps_the_links(folder):
    root, names, service, caller, _ = folder
    old, new = f"{names['from']}/pricing.md", f"{names['from']}/Pricing.md"
    linker = f"{names['links']}/links.md"
    before = snapshot(root)
    outcome = service.move(caller, MoveRequest(old, new))
    assert outcome.status == "written", outcome
    assert [p.name for p in (root / names["from"]).iterdir() if p.name.casefold() == "pricing.md"] == ["Pricing.md"]
    assert snapshot(root)[linker] == before[linker]  # links match letter case loosely: they still name it
    assert snapshot(root)[new] == before[old]
    assert old in git(root, "show", "--name-status", "--format=", "HEAD")


def test_a_retried_move_is_answered_once(folder):
    root, names, service, caller, _ = folder
    request = MoveRequest(f"{names['from']}/pricing.md", f"{names['to']}/p.md", request_id="move-1")
    first = service.move(caller, request)
    head = git(root, "rev-parse", "HEAD")
    again = service.move(caller, request)
    assert first.status == again.status == "written" and "already answered" in again.message
    assert git(root, "rev-parse", "HEAD") == head


def test_a_request_id_reused_for_another_move_or_edit_is_a_conflict_and_changes_nothing(folder):
    """A hostile audit: the second move and the second prepend said "written", exit 0, and did nothing."""
    root, names, service, caller, _ = folder
    plans = f"{names['plans']}/roadmap.md"
    assert service.move(caller, MoveRequest(f"{names['from']}/pricing.md", f"{names['to']}/p.md",
                                            request_id="r-1")).status == "written"
    before = snapshot(root)
    other = service.move(caller, MoveRequest(plans, f"{names['to']}/r.md", request_id="r-1"))
    assert other.status == "conflict" and snapshot(root) == before
    assert service.edit(caller, EditRequest("prepend", plans, text="FIRST", request_id="e-1")).status == "written"
    assert service.edit(caller, EditRequest("prepend", plans, text="SECOND", request_id="e-1")).status == "conflict"
    assert "SECOND" not in (root / plans).read_text()


def test_a_move_of_a_missing_note_or_out_of_the_folder_is_refused(folder):
    root, names, service, caller, _ = folder
    assert service.move(caller, MoveRequest(f"{names['from']}/none.md", f"{names['to']}/x.md")).status == "not_found"
    assert service.move(caller, MoveRequest(f"{names['from']}/pricing.md", "../outside.md")).status == "refused"
    assert service.move(caller, MoveRequest(f"{names['from']}/pricing.md", f"{names['to']}/x.txt")).status == \
        "refused"


def test_the_index_follows_a_move(folder, open_app):
    root, names, service, caller, _ = folder
    app = open_app()
    app.serve_from(root)  # a vault is seen from inside it (ADR 0020)
    app.index([str(root)])
    writer = app.writer(Vault.open(root))
    new = f"{names['to']}/price-list.md"
    assert writer.move(caller, MoveRequest(f"{names['from']}/pricing.md", new)).status == "written"
    backlinks = linkgraph.note_links(app, "backlinks", str(root / new))["results"]
    assert {r["path"] for r in backlinks} == {str(root / names["links"] / "links.md")}
    assert app.search("three tiers", "keyword", 5).hits[0].path == str(root / new)


def test_a_reader_may_not_move(tmp_path):
    root = tmp_path / "vault"
    scaffold(root)
    service = WriteService(Vault.open(root))
    reader = Caller("Rex <rex@example.org>", "reader")
    outcome = service.move(reader, MoveRequest("research/how-this-vault-works.md", "research/x.md"))
    assert outcome.status == "denied"
    assert (root / "research" / "how-this-vault-works.md").exists()


def test_a_move_waits_for_no_one_it_cannot_lock_and_changes_nothing(folder, tmp_path, monkeypatch):
    """Another writer holds a linking note: the move answers locked, before renaming anything."""
    import os

    root, names, service, caller, _ = folder
    monkeypatch.setenv("VAULT_LOCK_DIR", str(tmp_path / "locks"))
    linker = root / names["links"] / "links.md"
    folder_fd = os.open(linker.parent, os.O_RDONLY)
    locks = doc_locks.machine_locks_dir()
    holder = doc_locks.DocumentLock(locks, doc_locks.document_key(folder_fd, linker.name), "Editor <e@e>", wait=0.1)
    holder.acquire()
    try:
        before = snapshot(root)
        quick = WriteService(service.vault, lock_wait=0.2)
        outcome = quick.move(caller, MoveRequest(f"{names['from']}/pricing.md", f"{names['to']}/p.md"))
        assert outcome.status == "locked" and "Editor" in outcome.message
        assert snapshot(root) == before
    finally:
        holder.release()
        os.close(folder_fd)
        os.close(locks)
    assert quick.move(caller, MoveRequest(f"{names['from']}/pricing.md", f"{names['to']}/p.md")).status == "written"


def test_a_case_only_rename_where_the_file_system_ignores_case(folder, monkeypatch):
    """Simulated (CI runs on Linux): the new spelling already "exists" because it is the note itself,
    as on macOS or Windows; that is not a taken name, and the rename must not hard-link onto it."""
    import os

    from vault_index.services.writes import move as move_module

    root, names, service, caller, _ = folder
    old, new = f"{names['from']}/pricing.md", f"{names['from']}/PRICING.md"
    itself = os.stat(root / old)
    monkeypatch.setattr(move_module, "_exists", lambda folders, target: (True, itself))

    def no_link(*args, **kwargs):
        raise AssertionError("a case-only rename on a case-insensitive file system must not hard-link")

    monkeypatch.setattr(move_module.os, "link", no_link)
    outcome = service.move(caller, MoveRequest(old, new))
    assert outcome.status == "written", outcome
    assert (root / new).exists() and not (root / old).exists()
