"""Issue 39 item 2: indexing one file that already lies in a registered source (`vault-index index
NOTES/x.md`, MCP index_paths with [file], /ingest FILE) re-indexes it within that source; old code
registered the file as a new, empty source that then showed in `sources` and the server's instructions."""

from __future__ import annotations

import json
import subprocess

from helpers import CLI, cli_env, write
from vault_index.services.writes.write import Caller
from vault_index.surfaces.tool_context import ToolContext, _Vaults
from vault_index.surfaces.tools import instructions
from vault_index.surfaces.tools_search import index_paths, list_sources, search_notes


def run(env, *args, cwd) -> subprocess.CompletedProcess:
    proc = subprocess.run([CLI, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_the_cli_reindexes_a_file_of_a_source_within_it(tmp_path):
    notes = tmp_path / "NOTES"
    write(notes, "a.md", "# A\n\nfirst note\n")
    write(notes, "x.md", "# X\n\nthe old text\n")
    env = cli_env(tmp_path / "index.db", HOME=str(tmp_path))
    run(env, "index", str(notes), cwd=tmp_path)
    write(notes, "x.md", "# X\n\nthe narwhal text, edited\n")
    report = json.loads(run(env, "index", "NOTES/x.md", "--json", cwd=tmp_path).stdout)
    assert report["indexed"] == 1
    assert report["notices"] == [f"{notes / 'x.md'} lies in the source NOTES: re-indexed there, not added as a "
                                 "source of its own"]
    sources = json.loads(run(env, "sources", "--json", cwd=tmp_path).stdout)
    assert [(s["path"], s["files"]) for s in sources] == [(str(notes), 2)]  # old code: a second source, 0 files
    hits = json.loads(run(env, "search", "narwhal", "--json", cwd=tmp_path).stdout)["hits"]
    assert [h["path"] for h in hits] == [str(notes / "x.md")]


def test_index_paths_reindexes_a_file_of_a_source_within_it(tmp_path, open_app, monkeypatch):
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    root = tmp_path / "notes"
    write(root, "index.md", "# Index\n\nThe notes.\n")
    write(root / "deep", "kiln.md", "# Kiln\n\nFire it at noon.\n")
    app = open_app(None)
    app.index([str(root)])
    app.serve_from(root)
    tc = ToolContext(app, tmp_path / "memory.jsonl", lambda vault, ctx: Caller.local(vault, agent="test"),
                     _Vaults(app, root))
    write(root / "deep", "kiln.md", "# Kiln\n\nFire the kiln at dawn.\n")
    out = index_paths(tc, None, [str(root / "deep" / "kiln.md")])
    assert (out.indexed, out.notices) == (1, [f"{root / 'deep' / 'kiln.md'} lies in the source notes: re-indexed "
                                              "there, not added as a source of its own"])
    assert [s["path"] for s in list_sources(tc, None).sources] == [str(root)]
    assert str(root / "deep" / "kiln.md") not in instructions(app.status())  # old code: listed as a source
    hits = search_notes(tc, "kiln dawn", None, mode="keyword").hits
    assert [h.path for h in hits] == [str(root / "deep" / "kiln.md")]
    outside = write(tmp_path / "loose", "single.md", "# Single\n\na file in no source\n")
    app.index([str(outside)])  # the person may still add a loose file as a source of its own
    assert str(outside) in {s["path"] for s in list_sources(tc, None).sources}
