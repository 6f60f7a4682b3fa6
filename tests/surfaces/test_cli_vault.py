"""The curated-vault CLI commands, run as subprocesses: --json shapes and exit codes per outcome."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import CLI, cli_env, write
from vault_index.services.curation.curation import CHECKS

OUTCOME_KEYS = {"status", "message", "path", "version", "data"}


def run(env, *args, code: int = 0, stdin: str | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([CLI, *args], env=env, input=stdin, capture_output=True, text=True, timeout=60)
    assert proc.returncode == code, (args, proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    return proc


def js(env, *args, code: int = 0, stdin: str | None = None) -> dict:
    out = json.loads(run(env, *args, "--json", code=code, stdin=stdin).stdout)
    if "status" in out:
        assert OUTCOME_KEYS <= set(out), out
    return out


@pytest.fixture
def env(tmp_path):
    environment = cli_env(tmp_path / "cli" / "index.db")
    environment.pop("VAULT_ROLE", None)
    environment.pop("CLAUDE_PROJECT_DIR", None)
    return environment


def test_init_scaffolds_indexes_and_refuses_to_overwrite(env, tmp_path):
    root = tmp_path / "v"
    made = js(env, "init", str(root))
    assert made["root"] == str(root) and made["commit"] and made["indexed"] == 3
    assert ".vault-index/config.yaml" in made["created"]
    in_vault = {**env, "VAULT_PROJECT": str(root)}  # as a terminal in the vault (ADR 0020)
    hits = json.loads(run(in_vault, "search", "draft canonical", "--json", "--mode", "keyword").stdout)["hits"]
    assert hits and all(h["path"].startswith(str(root)) for h in hits)
    outside = json.loads(run(env, "search", "draft canonical", "--json", "--mode", "keyword").stdout)["hits"]
    assert outside == []  # a vault is its own workspace: not among the personal notes
    again = run(env, "init", str(root), code=2)
    assert "never overwrites" in again.stderr
    busy = tmp_path / "busy"
    write(busy, "drafts/open-questions.md", "mine")
    run(env, "init", str(busy), "--no-index", code=2)
    assert (busy / "drafts/open-questions.md").read_text() == "mine"


def test_write_read_append_promote_deprecate_with_exit_codes(env, tmp_path):
    root = tmp_path / "v"
    run(env, "init", str(root), "--no-index")
    v = ["--vault", str(root)]
    created = js(env, "write", "drafts/kiwi.md", *v, "--body", "# Kiwi\n\nKiwis are flightless.\n",
                 "--set", "title=Kiwi", "--set", "confidence=high", "--set", "ttl_days=30",
                 "--frontmatter", '{"sources": ["field guide"]}')
    assert created["status"] == "written" and created["data"]["commit"]
    assert created["path"] == str(root / "drafts" / "kiwi.md")
    read = js(env, "read", "drafts/kiwi.md", *v)
    assert read["data"]["frontmatter"]["confidence"] == "high" and read["version"] == created["version"]
    assert read["data"]["decay"]["state"] == "fresh" and read["data"]["collection"] == "drafts"
    plain = run(env, "read", "drafts/kiwi.md", *v)
    assert plain.stdout.startswith("---\n") and "Kiwis are flightless." in plain.stdout
    assert f"version {created['version']}" in plain.stderr

    appended = js(env, "append", "drafts/kiwi.md", *v, "--file", "-", stdin="## Eggs\n\nHuge eggs.\n")
    assert appended["status"] == "written"
    stale = js(env, "promote", "drafts/kiwi.md", *v, "--base-version", created["version"], code=11)
    assert stale["status"] == "stale"
    promoted = js(env, "promote", "drafts/kiwi.md", *v, "--base-version", appended["version"])
    assert promoted["status"] == "written" and "status: canonical" in (root / "drafts/kiwi.md").read_text()
    canon = js(env, "write", "drafts/sneak.md", *v, "--body", "x", "--set", "title=S", "--set", "status=canonical",
               code=2)
    assert canon["status"] in ("invalid", "refused") and not (root / "drafts/sneak.md").exists()
    no_reason = run(env, "deprecate", "drafts/kiwi.md", *v, code=2)  # argparse: --reason is required
    assert "--reason" in no_reason.stderr
    deprecated = js(env, "deprecate", "drafts/kiwi.md", *v, "--reason", "merged elsewhere",
                    "--base-version", promoted["version"], "--superseded-by", "research/how-this-vault-works.md")
    assert deprecated["status"] == "written"

    history = js(env, "provenance", "drafts/kiwi.md", *v)
    assert history["status"] == "ok" and len(history["data"]["history"]) == 4
    assert "cli" in json.dumps(history["data"]["history"])  # the agent claim of every CLI write

    whole = tmp_path / "note.md"
    whole.write_text("---\ntitle: From a file\nconfidence: low\n---\n# From a file\n\nbody text\n")
    from_file = js(env, "write", "drafts/from-file.md", *v, "--file", str(whole))
    assert from_file["status"] == "written"
    assert js(env, "read", "drafts/from-file.md", *v)["data"]["frontmatter"]["title"] == "From a file"


def test_roles_deny_and_missing_share_one_exit_code(env, tmp_path):
    root = tmp_path / "v"
    run(env, "init", str(root), "--no-index")
    v = ["--vault", str(root)]
    hidden = js(env, "read", "drafts/open-questions.md", *v, "--role", "reader", code=3)
    missing = js(env, "read", "drafts/nothing.md", *v, "--role", "reader", code=3)
    assert hidden["status"] == missing["status"]
    assert hidden["message"].replace("open-questions", "X") == missing["message"].replace("nothing", "X")
    denied = js(env, "write", "research/new.md", *v, "--role", "reader", "--body", "x", "--set", "title=N", code=3)
    assert denied["status"] == "denied" and not (root / "research/new.md").exists()
    stranger = run(env, "dashboard", *v, "--role", "stranger", code=2)  # a role the config lacks: refused loudly
    assert "no role 'stranger'" in stranger.stderr and "editor, reader" in stranger.stderr
    as_env = {**env, "VAULT_ROLE": "reader"}
    assert js(as_env, "read", "drafts/open-questions.md", *v, code=3)["status"] == hidden["status"]
    assert js(as_env, "read", "research/how-this-vault-works.md", *v)["status"] == "ok"
    bad = root / ".vault-index" / "config.yaml"
    bad.write_text(bad.read_text() + "colections: [x]\n")
    broken = run(env, "read", "research/how-this-vault-works.md", *v, code=2)
    assert "colections" in broken.stderr


def test_tension_lint_and_dashboard(env, tmp_path):
    root = tmp_path / "v"
    run(env, "init", str(root), "--no-index")
    v = ["--vault", str(root)]
    tension = js(env, "tension", "research/how-this-vault-works.md", "decisions/0001-keep-notes-in-git.md",
                 "one says every write commits, the other allows batches", *v)
    assert tension["status"] == "written" and "T-0001" in tension["message"]
    reader_tension = js(env, "tension", "research/how-this-vault-works.md", "decisions/0001-keep-notes-in-git.md",
                        "x", *v, "--role", "reader", code=3)
    assert reader_tension["status"] == "denied"

    lint = js(env, "lint", *v)
    assert lint["status"] == "ok" and lint["data"]["failed"] is False
    assert {i["check"] for i in lint["data"]["issues"]} <= set(CHECKS)
    assert any(i["check"] == "unanswered_question" for i in lint["data"]["issues"])  # the example draft asks one
    assert js(env, "lint", *v, "--fail-on", "warning", code=1)["status"] == "failed"
    assert js(env, "lint", *v, "--strict", code=1)["status"] == "failed"
    run(env, "lint", *v, "--fail")  # no errors in a fresh vault: exit 0 (failing on errors is the default)
    run(env, "lint", str(root))  # the vault as the positional PATH
    stale = root / "research" / "how-this-vault-works.md"
    stale.write_text(stale.read_text().replace("ttl_days: 365", "ttl_days: 1").replace(
        "updated: 20", "updated: 19", 1))
    warned = run(env, "lint", *v)  # stale is a warning: exit 0 unless --strict
    assert "research/how-this-vault-works.md:" in warned.stdout and "warning stale" in warned.stdout

    board = js(env, "dashboard", *v)["data"]
    assert board["notes"] == 3 and board["open_tensions"] == 1 and board["decay"]["stale"] == 1
    assert board["collections"] == {"decisions": {"canonical": 1}, "drafts": {"draft": 1},
                                    "research": {"canonical": 1}}
    assert board["recent_writes"][0]["paths"] == ["tensions.md"]
    reader_board = js(env, "dashboard", *v, "--role", "reader")["data"]
    assert "drafts" not in reader_board["collections"] and reader_board["notes"] == 2
    text = run(env, "dashboard", *v).stdout
    assert "open tensions       1" in text
    # issue 39: the recent writes were printed under "open tensions" with no heading of their own
    lines = text.splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("recent writes"))
    assert lines[heading] == f"recent writes       {len(board['recent_writes'])} (newest first)"
    assert lines[heading + 1].startswith("  ") and "tension" in lines[heading + 1].lower()


def test_bad_input_is_a_clear_error_never_a_traceback(env, tmp_path):
    root = tmp_path / "v"
    run(env, "init", str(root), "--no-index")
    v = ["--vault", str(root)]
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\xff\xfe\x00binary")
    assert "cannot read" in run(env, "write", "drafts/x.md", *v, "--file", str(tmp_path / "none.md"), code=2).stderr
    assert "not UTF-8" in run(env, "write", "drafts/x.md", *v, "--file", str(binary), code=2).stderr
    assert "JSON" in run(env, "write", "drafts/x.md", *v, "--frontmatter", "{oops", code=2).stderr
    assert "KEY=VALUE" in run(env, "write", "drafts/x.md", *v, "--set", "novalue", code=2).stderr
    odd = js(env, "write", "drafts/odd.md", *v, "--body", "x", "--set", "title=[unclosed", "--set",
             "created=2026-11-02", "--set", "tags=[a, b]")
    assert odd["status"] == "written", odd
    fields = js(env, "read", "drafts/odd.md", *v)["data"]["frontmatter"]
    assert fields["title"] == "[unclosed" and fields["created"] == "2026-11-02" and fields["tags"] == ["a", "b"]
    escape = js(env, "write", "../outside.md", *v, "--body", "x", "--set", "title=X", code=2)
    assert escape["status"] == "refused" and not (tmp_path / "outside.md").exists()
    assert "is a file" in run(env, "init", str(binary), code=2).stderr
    (root / "drafts" / "open-questions.md").write_text("---\ntitle: x\nstatus: final\n---\n# x\n")
    failing = run(env, "lint", *v, code=1)  # an invalid note is an error: exit 1
    assert "drafts/open-questions.md:3: error invalid_frontmatter" in failing.stdout


def test_the_terminal_review_commands_never_load_the_mcp_sdk(env, tmp_path):
    """lint, dashboard and recent print what the tools return without the SDK: its types alone took
    about 1.5 s of a 2.4 s `lint` (now the whole command is about 0.8 s)."""
    root = tmp_path / "v"
    run(env, "init", str(root), "--no-index")
    code = ("import sys; from vault_index.surfaces import cli; code = cli.main(sys.argv[1:]); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'onnxruntime'}), code)")
    for command in (["lint"], ["dashboard"], ["recent"]):
        done = subprocess.run([sys.executable, "-c", code, *command, "--vault", str(root), "--json"], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == "[] 0", (command, done.stdout[-300:])
