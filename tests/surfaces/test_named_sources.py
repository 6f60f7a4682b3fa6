"""Named sources (ADR 0012): `index --name`, `sources`, `search --source`, `remove NAME`, via the CLI."""

from __future__ import annotations

import json
import subprocess

from helpers import CLI, cli_env, write


def run(env, *args, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=60)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_names_default_unique_filter_search_and_remove(tmp_path):
    env = cli_env(tmp_path / "idx" / "index.db")
    work = write(tmp_path / "a" / "notes", "backup.md", "# Backup\n\nRestic backups run nightly.\n").parent
    demo = write(tmp_path / "b" / "notes", "backup.md", "# Backup\n\nExample backups, fictional.\n").parent
    run(env, "index", str(work), "-s")
    run(env, "index", str(demo), "-s")
    names = {s["path"]: s["name"] for s in json.loads(run(env, "sources", "--json").stdout)}
    assert names == {str(work): "notes", str(demo): "notes-2"}  # same base name: made unique

    taken = run(env, "index", str(demo), "--name", "notes", check=False)
    assert taken.returncode == 2 and "already used" in taken.stderr and str(work) in taken.stderr
    bad = run(env, "index", str(demo), "--name", "no spaces", check=False)
    assert bad.returncode == 2 and "source name" in bad.stderr
    run(env, "index", str(demo), "--name", "example", "-s")  # renaming one's own source is fine
    assert "example" in run(env, "sources").stdout

    both = json.loads(run(env, "search", "backups", "--json").stdout)["hits"]
    assert {h["path"].rsplit("/notes/", 1)[0] for h in both} == {str(tmp_path / "a"), str(tmp_path / "b")}
    only = json.loads(run(env, "search", "backups", "--source", "example", "--json").stdout)["hits"]
    assert only and all(h["path"].startswith(str(demo) + "/") for h in only)
    # with --path too, both must hold: a prefix outside the source leaves nothing
    none = json.loads(run(env, "search", "backups", "--source", "example", "--path", str(work), "--json").stdout)
    assert none["hits"] == []
    unknown = run(env, "search", "backups", "--source", "nope", check=False)
    assert unknown.returncode != 0 and "example" in unknown.stderr and "notes" in unknown.stderr

    assert json.loads(run(env, "remove", "example", "--json").stdout) == {"removed_files": 1}
    assert [s["name"] for s in json.loads(run(env, "sources", "--json").stdout)] == ["notes"]
