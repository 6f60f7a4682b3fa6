"""The plugin as Claude Code installs it from a local clone (issue 21): the marketplace's plugin is
plugin/, a folder of links to what the plugin needs, so the copy Claude Code makes into its cache
(it copies a local source folder whole, links materialized) holds no .venv, tests or eval data.
Before, the source was the clone itself and a clone after setup.py copied its 513 MB .venv."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import REPO, claude_cli

PLUGIN_DIR = REPO / "plugin"
# What the plugin runs from its root: the manifest, its commands and hooks, plugin_run.py and the
# scripts the hooks name, and the package source plugin_run.py installs (`pip install <root>`).
NEEDED = {".claude-plugin", ".claude", "hooks", "scripts", "mcp", "pyproject.toml", "README.md"}


def test_the_plugin_folder_links_only_what_the_plugin_needs_inside_the_repo():
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text(encoding="utf-8"))
    assert [p["source"] for p in market["plugins"]] == ["./plugin"]
    assert {p.name for p in PLUGIN_DIR.iterdir()} == NEEDED
    links = [p for p in PLUGIN_DIR.rglob("*") if p.is_symlink()]
    assert links, "plugin/ should link into the repo, not copy it"
    for link in links:
        target = link.resolve()
        assert target.exists() and target.is_relative_to(REPO) and ".venv" not in target.parts, link
    manifest = PLUGIN_DIR / ".claude-plugin" / "plugin.json"
    assert manifest.resolve() == REPO / ".claude-plugin" / "plugin.json"  # one manifest for both roots
    assert (PLUGIN_DIR / json.loads(manifest.read_text())["commands"]).is_dir()
    assert (PLUGIN_DIR / "scripts" / "plugin_run.py").is_file() and (PLUGIN_DIR / "hooks" / "hooks.json").is_file()


def _local_clone(dest: Path) -> None:
    """Tracked and new files of the working tree, links kept as links (as `git clone` makes them)."""
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=REPO, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src, dst = REPO / rel, dest / rel
        if src.is_symlink() or src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst, follow_symlinks=False)


@pytest.mark.extras  # .ci/run installs the claude CLI, then runs these with -m extras
@pytest.mark.skipif(claude_cli() is None, reason="the claude CLI is not installed (set CLAUDE_CLI)")
def test_claude_code_installs_the_plugin_from_a_local_clone_without_its_venv(tmp_path):
    clone, home = tmp_path / "vault-index", tmp_path / "home"
    _local_clone(clone)
    (clone / ".venv" / "lib").mkdir(parents=True)  # what setup.py leaves in a clone (513 MB there)
    (clone / ".venv" / "lib" / "site-packages.bin").write_bytes(b"\0" * 4_000_000)
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
    for args in (["plugin", "marketplace", "add", str(clone)], ["plugin", "install", "vault-index@vault-index"]):
        proc = subprocess.run([claude_cli(), *args], env=env, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    [cached] = (home / ".claude" / "plugins" / "cache" / "vault-index" / "vault-index").iterdir()
    assert {p.name for p in cached.iterdir()} == NEEDED  # no .venv, tests, eval, example-vault, docs
    assert not [p for p in cached.rglob("*") if p.is_symlink()]  # materialized: the clone may go away
    assert (cached / "scripts" / "plugin_run.py").is_file() and (cached / "mcp" / "vault_index").is_dir()
    assert json.loads((cached / ".claude-plugin" / "plugin.json").read_text())["name"] == "vault-index"
    size = sum(p.stat().st_size for p in cached.rglob("*") if p.is_file())
    assert size < 20_000_000, size  # about 2.5 MB of source (docs/getting-started.md), more with __pycache__
