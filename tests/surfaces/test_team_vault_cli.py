"""The team set-up of docs/postgres.md, command for command, through the real CLI: two machines
(two local folders for VAULT_INDEX_DB, one VAULT_INDEX_URL) index their checkouts of one vault
into one PostgreSQL database (ADR 0019)."""

from __future__ import annotations

import json
import shutil
import subprocess

from helpers import CLI, cli_env, write


def run(env, *args, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_two_machines_share_one_team_source_through_the_cli(tmp_path, pg_database):
    url = pg_database()
    alice = cli_env(tmp_path / "alice-home" / "index.db", VAULT_INDEX_URL=url)
    bob = cli_env(tmp_path / "bob-home" / "index.db", VAULT_INDEX_URL=url)
    a = tmp_path / "alice" / "team-vault"
    write(a, "runbooks/backup.md", "# Backup\n\nRestic backups run nightly at two.\n")
    write(a, "runbooks/restore.md", "# Restore\n\nRestore with restic from the [[backup]] repository.\n")
    b = tmp_path / "bob" / "team-vault"
    shutil.copytree(a, b)

    run(alice, "index", str(a), "--name", "team", "-s")
    clash = run(bob, "index", str(b), "--name", "team", check=False)
    assert clash.returncode == 2 and "already used" in clash.stderr and "--checkout" in clash.stderr
    lone = run(bob, "index", str(b), "--checkout", check=False)
    assert lone.returncode == 2 and "--name" in lone.stderr
    joined = run(bob, "index", str(b), "--name", "team", "--checkout")
    assert joined.stdout.startswith("indexed 0 files, 2 unchanged, 0 removed;")
    listing = run(bob, "sources").stdout
    assert f"team  {a}  (2 files" in listing
    assert f"checkout {a}  (this machine)" in listing and f"checkout {b}  (this machine)" in listing

    a.rename(a.with_name("elsewhere"))  # Bob's machine: Alice's folder does not exist here
    [source] = json.loads(run(bob, "sources", "--json").stdout)
    assert source["path"] == str(b) and [c["here"] for c in source["checkouts"]] == [False, True]
    hits = json.loads(run(bob, "search", "restic backups", "--json").stdout)["hits"]
    assert hits and all(h["path"].startswith(str(b) + "/") for h in hits)
    assert "nightly" in run(bob, "get", hits[0]["path"]).stdout
    assert json.loads(run(bob, "status", "--json").stdout)["files"] == 2

    assert run(bob, "remove", str(b)).stdout.startswith(f"removed {b} (0 files)")  # Alice still has both
    [source] = json.loads(run(bob, "sources", "--json").stdout)
    assert source["files"] == 2 and "checkouts" not in source
    assert run(bob, "remove", "team").stdout.startswith("removed team (2 files)")
