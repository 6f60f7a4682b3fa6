"""`lint` on a plain notes folder (no .vault-index/config.yaml) says so up front and does not ask
notes that name no `type` for the curated schema's required fields (issue 21: 753 of a handbook's
1,012 findings were those); links, names and the fields notes do set are still checked, and the
same folder as a curated vault gets the full schema. Through the real CLI."""

from __future__ import annotations

import json
import subprocess

import pytest
from helpers import CLI, cli_env, write

HANDBOOK = {
    "onboarding.md": "# Onboarding\n\nStart with [[tooling]] and [[payroll]].\n",
    "tooling.md": "---\ntitle: Tooling\n---\n# Tooling\n\nBack to [[onboarding]].\n",
    "holidays.md": "---\ntitle: Holidays\nstatus: final\n---\n# Holidays\n\nSee [[onboarding]].\n",
}


@pytest.fixture
def handbook(tmp_path):
    root = tmp_path / "handbook"
    for name, text in HANDBOOK.items():
        write(root, name, text)
    env = cli_env(tmp_path / "index.db", VAULT_GIT_COMMIT="0")
    env.pop("VAULT_ROLE", None)
    env.pop("CLAUDE_PROJECT_DIR", None)
    return root, env


def lint(env, root, *extra) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, "lint", str(root), *extra], env=env, capture_output=True, text=True, timeout=60)


def test_a_plain_folder_is_said_to_be_one_and_checked_as_plain_notes(handbook):
    root, env = handbook
    proc = lint(env, root)
    assert proc.stderr.startswith("note: not a curated vault (no .vault-index/config.yaml)"), proc.stderr
    findings = {tuple(line.split(": ", 2)[:2]) for line in proc.stdout.splitlines()}
    assert (f"{'onboarding.md'}:3", "warning unresolved_link") in findings  # [[payroll]]: links still count
    assert ("holidays.md:3", "error invalid_frontmatter") in findings  # a field it sets is still checked
    assert "is required" not in proc.stdout  # no curated required fields for notes without a type
    assert proc.returncode == 1  # the status error fails it, as in a vault
    (root / "holidays.md").write_text(HANDBOOK["holidays.md"].replace("status: final", "status: draft"))
    clean = lint(env, root, "--json")
    out = json.loads(clean.stdout)
    assert clean.returncode == 0 and out["status"] == "ok" and out["data"]["curated"] is False
    assert out["message"].startswith("not a curated vault")
    assert {i["check"] for i in out["data"]["issues"]} <= {"unresolved_link", "orphan"}
    quiet = lint(env, root, "-s")
    assert "not a curated vault" not in quiet.stderr


def test_a_typed_note_gets_its_types_rules_only_in_a_curated_vault(handbook):
    root, env = handbook
    write(root, "retro.md", "---\ntitle: Retro\ntype: log\n---\n# Retro\n\nSee [[onboarding]].\n")
    typed = json.loads(lint(env, root, "--json").stdout)["data"]["issues"]
    assert not any(i["path"] == "retro.md" and i["check"] == "invalid_frontmatter" for i in typed)  # plain (issue 39)
    write(root, ".vault-index/config.yaml", "version: 1\nroles:\n  owner: {read: ['*'], write: ['*'], promote: true}\n"
                                            "local_role: owner\n")
    proc = lint(env, root, "--json")
    out = json.loads(proc.stdout)
    assert out["data"]["curated"] is True and "not a curated vault" not in proc.stderr + out["message"]
    required = {(i["path"], i["message"]) for i in out["data"]["issues"] if "is required" in i["message"]}
    assert ("onboarding.md", "title is required (rule: required)") in required  # no frontmatter at all
    assert ("retro.md", "date is required (rule: required)") in required  # the vault's `log` type needs a date
    assert proc.returncode == 1
