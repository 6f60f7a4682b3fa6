"""A vault's schemas never reach the network and never run a backtracking regex (issue 22, High).

A real socket server on 127.0.0.1 counts connections; real scaffolded vaults, the real CLI.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from vault_index.errors import ConfigError
from vault_index.services.curation.scaffold import scaffold
from vault_index.services.vault.vault import Vault
from vault_index.services.writes.write import Caller, WriteRequest, WriteService
from vault_index.surfaces.cli import main


@pytest.fixture
def listener():
    """An HTTP server on 127.0.0.1 that records every connection and serves a schema (as a real one would)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[tuple] = []

    class Handler(BaseHTTPRequestHandler):
        def setup(self):
            seen.append(self.client_address)
            super().setup()

        def do_GET(self):  # noqa: N802 - the stdlib's name
            body = b'{"type": "string"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], seen
    server.shutdown()
    server.server_close()


def _vault(tmp_path, monkeypatch, types: dict[str, dict], config_extra: str = ""):
    monkeypatch.setenv("VAULT_GIT_COMMIT", "0")
    root = tmp_path / "v"
    scaffold(root)
    folder = root / ".vault-index" / "types"
    folder.mkdir()
    for name, schema in types.items():
        (folder / f"{name}.json").write_text(json.dumps(schema))
    if config_extra:
        config = root / ".vault-index" / "config.yaml"
        config.write_text(config.read_text() + config_extra)
    return root


def _write(root, fields, path="research/n.md", op="create", version=None):
    vault = Vault.open(root)
    return WriteService(vault).write(Caller.local(vault), WriteRequest(
        op, path, body="# N\n", base_version=version, frontmatter={"title": "N", **fields}))


def test_a_remote_ref_is_a_reported_problem_and_nothing_connects(tmp_path, monkeypatch, listener, capsys):
    port, seen = listener
    remote = {"type": "object", "properties": {"owner": {"$ref": f"http://127.0.0.1:{port}/owner.json"}}}
    root = _vault(tmp_path, monkeypatch, {"remote": remote})
    written = _write(root, {"type": "remote", "owner": "ann"})
    assert seen == []  # old code: the write fetched the schema from the listener
    assert written.status == "invalid" and written.problems[0]["rule"] == "$ref"
    (root / "research" / "n.md").write_text("---\ntitle: N\ntype: remote\nowner: ann\n---\n# N\n")
    vault = Vault.open(root)
    view = WriteService(vault).read(Caller.local(vault), "research/n.md")
    assert [p["rule"] for p in view.problems] == ["$ref"]
    assert main(["lint", str(root), "--json"]) in (0, 1)
    lint = json.loads(capsys.readouterr().out)
    assert any("reference outside the vault" in i["message"] for i in lint["data"]["issues"])
    time.sleep(0.3)  # a connection in flight would be accepted by now
    assert seen == []  # old code: read, lint and write each connected (and waited with no timeout)


def test_references_between_the_vaults_own_types_resolve(tmp_path, monkeypatch):
    base = {"type": "object", "required": ["owner"], "properties": {"owner": {"$ref": "#/$defs/name"}},
            "$defs": {"name": {"type": "string", "minLength": 2}}}
    derived = {"allOf": [{"$ref": "base.json"}], "properties": {"ticket": {"type": "string"}}}
    root = _vault(tmp_path, monkeypatch, {"base": base, "derived": derived})
    missing = _write(root, {"type": "derived"})
    assert missing.status == "invalid" and [p["field"] for p in missing.problems] == ["owner"]
    short = _write(root, {"type": "derived", "owner": "a"})
    assert short.status == "invalid" and short.problems[0]["field"] == "owner"
    assert _write(root, {"type": "derived", "owner": "ann"}).status == "written"


HOSTILE = "^(a|a)*$"
VALUE = "a" * 26 + "!"  # Python's re backtracks 2^26 times on this before failing


def test_a_backtracking_pattern_in_a_type_file_runs_in_linear_time(tmp_path, monkeypatch):
    kind = {"type": "object", "properties": {"code": {"type": "string", "pattern": HOSTILE}},
            "patternProperties": {"^(x|x)*$": {"type": "string"}}, "additionalProperties": True}
    root = _vault(tmp_path, monkeypatch, {"coded": kind})
    started = time.monotonic()
    outcome = _write(root, {"type": "coded", "code": VALUE, "x" * 26 + "!": 1})
    assert time.monotonic() - started < 3  # old code: many seconds, holding the note's lock
    assert outcome.status == "invalid" and outcome.problems[0]["field"] == "code"
    assert _write(root, {"type": "coded", "code": "aaaa"}).status == "written"


def test_a_backtracking_pattern_in_the_config_runs_in_linear_time(tmp_path, monkeypatch):
    root = _vault(tmp_path, monkeypatch, {}, f"schema_extensions:\n  code: {{type: string, pattern: '{HOSTILE}'}}\n")
    started = time.monotonic()
    outcome = _write(root, {"code": VALUE})
    assert time.monotonic() - started < 3  # old code: the nested-repeat check let it through, then it hung
    assert outcome.status == "invalid" and outcome.problems[0]["field"] == "code"


def test_a_type_file_pattern_re2_cannot_run_is_refused_at_load(tmp_path, monkeypatch):
    kind = {"type": "object", "properties": {"code": {"type": "string", "pattern": r"^(a)\1$"}}}
    root = _vault(tmp_path, monkeypatch, {"backref": kind})
    with pytest.raises(ConfigError, match=r"backref\.json: pattern /properties/code/pattern: RE2"):
        _ = Vault.open(root).note_types
