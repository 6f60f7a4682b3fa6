"""Lint through the real CLI: the fixture vault's planted problems, exactly, with file, line and
rule, and the documented exit codes (docs/links.md); the example vault is clean even with --strict."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from helpers import CLI, REPO

FIXTURE = REPO / "tests" / "fixtures" / "lint-vault"
# (file, line, rule): one planted problem of each kind, and nothing else
PLANTED = {
    ("bad-enum.md", 4, "invalid_frontmatter"),          # status: final (enum)
    ("twin-1.md", 2, "duplicate_name"),                 # the title "Twin" ...
    ("twin-2.md", 2, "duplicate_name"),                 # ... and "twin"
    ("home.md", 15, "unresolved_link"),                 # [[nowhere]]
    ("home.md", 16, "ambiguous_link"),                  # [[notes]]: a/notes.md and b/notes.md
    ("named-right.md", 3, "name_mismatch"),             # name: named-wrong
    ("old-way.md", 4, "deprecated_linked"),             # linked from the canonical home.md
    ("stale-note.md", 7, "stale"),                      # ttl_days 30, updated 2020
    ("lonely.md", 1, "orphan"),                         # nobody links here
}


def lint(folder, *extra):
    env = {**os.environ, "VAULT_INDEX_DB": str(folder.parent / "index.db"), "VAULT_GIT_COMMIT": "0"}
    proc = subprocess.run([CLI, "lint", str(folder), "--json", *extra], capture_output=True, text=True,
                          timeout=120, env=env)
    return proc.returncode, json.loads(proc.stdout)


def test_fixture_vault_reports_exactly_the_planted_problems(tmp_path):
    vault = shutil.copytree(FIXTURE, tmp_path / "v")
    code, out = lint(vault)
    found = {(i["path"], i["line"], i["check"]) for i in out["data"]["issues"]}
    assert found == PLANTED
    # a folder that is not a curated vault gets no curated schema: no required fields of
    # no-frontmatter.md, no `log` type rules of log-without-date.md (issue 39; the curated case:
    # tests/surfaces/test_lint_plain.py)
    assert len(out["data"]["issues"]) == len(PLANTED) and out["data"]["curated"] is False
    assert code == 1 and out["status"] == "failed"  # errors fail a lint run by default


def test_exit_codes_errors_warnings_and_strict(tmp_path):
    vault = shutil.copytree(FIXTURE, tmp_path / "v")
    for name in ("bad-enum.md", "log-without-date.md", "no-frontmatter.md", "twin-2.md"):
        (vault / name).unlink()  # no errors left, warnings and info remain
    code, out = lint(vault)
    assert code == 0 and {i["severity"] for i in out["data"]["issues"]} == {"warning", "info"}
    assert lint(vault, "--strict")[0] == 1
    (vault / "home.md").write_text("---\ntitle: Home\ntype: moc\nstatus: canonical\ncreated: 2026-01-01\n"
                                   "updated: 2026-01-01\n---\n# Home\n")
    for name in ("old-way.md", "good-decision.md", "stale-note.md", "named-right.md", "lonely.md", "twin-1.md"):
        (vault / name).unlink()
    shutil.rmtree(vault / "b")
    (vault / "home.md").write_text((vault / "home.md").read_text() + "[[a/notes]]\n")
    code, out = lint(vault, "--strict")
    assert (code, out["data"]["issues"]) == (0, [])


def test_example_vault_is_clean_even_strict(tmp_path):
    vault = shutil.copytree(REPO / "example-vault", tmp_path / "example-vault")
    code, out = lint(vault, "--strict")
    assert (code, out["data"]["issues"]) == (0, [])
    assert out["data"]["notes"] >= 40


def test_example_vault_has_typed_notes_and_30_resolved_links():
    from vault_index.services.curation import curation
    from vault_index.services.vault.vault import Vault
    from vault_index.services.writes.write import Caller, WriteService

    vault = Vault.open(REPO / "example-vault")
    notes = curation.readable_notes(WriteService(vault), Caller.local(vault), vault.root)
    assert all(n.frontmatter.get("type") in vault.note_types for n in notes)
    pairs = [found for links in curation.resolve_links(notes).values() for _link, found in links]
    assert len(pairs) >= 30 and all(f.status == "resolved" for f in pairs)
