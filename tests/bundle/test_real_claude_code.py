"""The real Claude Code CLI runs our wiring; only the model behind it is faked.

A small Anthropic Messages API (stdlib HTTP server on 127.0.0.1, reached through
ANTHROPIC_BASE_URL) plays the model: per test it answers the main conversation turns from a
script (tool calls such as Write, Bash or our MCP `recall`, then a short text), the compaction
request with a summary, and any other request with plain text. Everything else is the real
thing: `claude -p` reads the project's `.mcp.json` and `.claude/settings.json` (written by
setup.py's `wire()`) or loads this checkout as a plugin with `--plugin-dir`, starts our MCP
server, runs our hooks through its own hook runner, expands our slash commands, executes the
tools, and reports hook results in its stream-json output.

Covered: the hooks' exit codes and JSON as Claude Code judges them, the PostToolUse re-index of
a note the Write tool created (repo wiring and plugin data folder), the context guard blocking a
long resumed session and the /handoff way out of it, a manual /compact running the PreCompact
snapshot, `claude mcp list`, and /recall reaching our MCP tool through its allowed-tools.

Every run gets a temporary HOME and CLAUDE_CONFIG_DIR, a temporary index and memory file, and a
timeout; the project's `.venv` and `scripts/` link back to this checkout, which is never written.
Claude Code is found as in test_manifests.py: $CLAUDE_CLI, else `claude` on PATH (CI installs the
pinned version with npm in .ci/run). Details of that version (2.1.197) relied on:
`--include-hook-events` emits `hook_response` lines for SessionStart, UserPromptSubmit and
PostToolUse but none for PreCompact, whose run is read from the `--debug-file` log; hook
additionalContext travels as a role "system" entry in `messages`; a `--plugin-dir` plugin keeps
its data in `$CLAUDE_CONFIG_DIR/plugins/data/<name>-inline`.
"""


from __future__ import annotations

import json
import re
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from claude_harness import (
    FINAL_TEXT,
    FIXTURE_SESSION,
    ROOT,
    VENV_PYTHON,
    FakeApiHandler,
    FakeModel,
    Sandbox,
    assert_hook_ok,
    conversation_text,
    result_text,
    slash_commands,
    text_block,
    tool_call,
    tool_result,
    user_text,
    write_call,
)
from helpers import claude_cli

OUR_COMMANDS = ("recall", "adr", "learn", "ingest", "handoff")
NEW_NOTE = "# Antenna\n\nThe quokkaflux antenna sits on the shed roof, pointing north-east.\n"


pytestmark = [
    pytest.mark.extras,  # .ci/run installs the claude CLI, then runs these with -m extras
    pytest.mark.skipif(
        claude_cli() is None,
        reason="the claude CLI is not installed (npm install @anthropic-ai/claude-code, or set CLAUDE_CLI); "
        "these tests run the real Claude Code against a fake model"),
    pytest.mark.skipif(not VENV_PYTHON.exists(), reason=f"no {VENV_PYTHON}: run setup.py first"),
]



@pytest.fixture(scope="module")
def fake_api():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeApiHandler)
    server.daemon_threads = True
    server.fake = FakeModel()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def fake(fake_api) -> FakeModel:
    fake_api.fake.script()
    return fake_api.fake


# --- projects and runs ---------------------------------------------------------------------------


@pytest.fixture
def sandbox(tmp_path, fake_api) -> Sandbox:
    return Sandbox(tmp_path, fake_api)




# --- a. the repo wiring, end to end --------------------------------------------------------------


def test_repo_wiring_hooks_run_and_the_written_note_is_indexed(sandbox, fake):
    sandbox.wire()
    sandbox.link_commands()
    sandbox.index()
    assert sandbox.search("quokkaflux") == []
    note = sandbox.project / "notes" / "new.md"
    fake.script([text_block("I will write the note."), write_call(note, NEW_NOTE)], [text_block(FINAL_TEXT)])

    run = sandbox.claude("--permission-mode", "acceptEdits", prompt="Write a note about the antenna.")

    # the wiring as Claude Code saw it: our MCP server connected, our commands loaded
    assert {"name": "vault-index", "status": "connected"} in run.init["mcp_servers"], run.init["mcp_servers"]
    assert any(t.startswith("mcp__vault-index__") for t in run.init["tools"])
    assert set(OUR_COMMANDS) <= slash_commands(run), sorted(slash_commands(run))
    # all three hooks ran; the invariants all passed on this wired, indexed project (silent start)
    assert_hook_ok(run, "SessionStart")
    assert_hook_ok(run, "UserPromptSubmit")
    [post] = assert_hook_ok(run, "PostToolUse")
    assert post["hook_name"] == "PostToolUse:Write"
    # the fake model's Write really ran, and the conversation went on to the final answer
    assert note.read_text() == NEW_NOTE
    assert run.final["subtype"] == "success" and run.final["result"] == FINAL_TEXT, run.why()
    first, second = fake.of_kind("main")
    assert "Write a note about the antenna." in user_text(first)
    assert "File created successfully" in result_text(tool_result(second, "toolu_01FakeWrite"))
    # our PostToolUse hook, run by Claude Code, re-indexed the new note
    hits = sandbox.search("quokkaflux")
    assert [Path(h["path"]).name for h in hits] == ["new.md"], hits
    assert "Hook JSON output validation failed" not in run.debug


def test_session_start_report_reaches_the_model_when_a_check_fails(sandbox, fake):
    """Not indexed yet: the invariants hook warns, Claude Code accepts its JSON and hands the
    additionalContext to the model with the first prompt."""
    sandbox.wire()
    fake.script([text_block("Noted.")])

    run = sandbox.claude(prompt="hello")

    [start] = assert_hook_ok(run, "SessionStart", silent=False)
    report = json.loads(start["stdout"])
    assert report["systemMessage"].startswith("vault-index: sources needs attention")
    assert report["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "Successfully parsed and validated hook JSON output" in run.debug
    assert "Hook JSON output validation failed" not in run.debug
    [request] = fake.of_kind("main")
    # (2.1.197 sends hook context as a role "system" entry in messages)
    assert "vault-index invariants: 1 of 10 checks need attention" in conversation_text(request)
    assert run.final["result"] == "Noted."


# --- b. the context guard ------------------------------------------------------------------------


def test_context_guard_blocks_a_long_resumed_session(sandbox, fake):
    sandbox.wire()
    sandbox.index()
    sandbox.transcript("long_session.jsonl")

    run = sandbox.claude("--resume", FIXTURE_SESSION, prompt="what next")

    [guard] = assert_hook_ok(run, "UserPromptSubmit", silent=False)
    decision = json.loads(guard["stdout"])
    assert decision["decision"] == "block"
    assert decision["reason"].startswith("The context is 471,412 tokens (threshold 450,000)")
    blocked = [e for e in run.events if "blocked by hook" in str(e.get("content", ""))]
    assert blocked and decision["reason"] in blocked[0]["content"], run.why()
    assert fake.of_kind("main") == []  # the prompt never reached the model
    assert "Successfully parsed and validated hook JSON output" in run.debug
    assert decision["reason"] in run.final["result"]


def test_context_guard_lets_a_short_resumed_session_through(sandbox, fake):
    sandbox.wire()
    sandbox.index()
    sandbox.transcript("short_session.jsonl")
    fake.script([text_block("The batteries last about nine weeks.")])

    run = sandbox.claude("--resume", FIXTURE_SESSION, prompt="how long do the batteries last now?")

    assert_hook_ok(run, "SessionStart")
    assert_hook_ok(run, "UserPromptSubmit")
    assert run.final["result"] == "The batteries last about nine weeks.", run.why()
    [request] = fake.of_kind("main")
    text = user_text(request)
    assert "how long do the batteries last now?" in text
    # the resumed history went to the model before the new prompt
    assert -1 < text.lower().find("garden sensor") < text.find("last now?")


# --- c. PreCompact -------------------------------------------------------------------------------


def test_precompact_hook_snapshots_before_a_manual_compact(sandbox, fake):
    sandbox.wire()
    sandbox.index()
    sandbox.transcript("short_session.jsonl")

    run = sandbox.claude("--resume", FIXTURE_SESSION, prompt="/compact")

    # 2.1.197 emits no hook_response line for PreCompact; its debug log records the run. (It also
    # hands the hook's raw stdout to the summarizer as "Additional Instructions" and shows it in
    # the "Compacted ..." message; this test does not pin that down.)
    ran = re.search(r"PreCompact:manual .*precompact_snapshot\.py.* completed with status 0", run.debug)
    assert ran, run.debug[-4000:]
    statuses = [e for e in run.events if e.get("subtype") == "status" and "compact_result" in e]
    assert statuses and statuses[-1]["compact_result"] == "success", statuses or run.why()
    [compact] = fake.of_kind("compact")
    snapshots = list((sandbox.project / "docs" / "handoffs" / "auto").glob(f"*-{FIXTURE_SESSION[:8]}.md"))
    assert len(snapshots) == 1, snapshots
    # the hook's sentence reaches the summariser, so the snapshot's path survives compaction
    assert snapshots[0].name in conversation_text(compact) and "keep this path" in conversation_text(compact)
    text = snapshots[0].read_text()
    assert "manual" in text and "garden sensor" in text.lower()


# --- d. claude mcp list --------------------------------------------------------------------------


def test_mcp_list_shows_the_server_connected_for_the_repo_wiring_and_the_plugin(sandbox):
    sandbox.wire()
    repo = sandbox.claude_plain("mcp", "list")
    assert repo.returncode == 0, repo.stdout + repo.stderr
    assert re.search(r"^vault-index: .*✔ Connected", repo.stdout, re.M), repo.stdout

    (sandbox.project / ".mcp.json").unlink()
    sandbox.env["VAULT_INDEX_PYTHON"] = str(VENV_PYTHON)  # plugin_run.py installs nothing
    plugin = sandbox.claude_plain("--plugin-dir", str(ROOT), "mcp", "list")
    assert plugin.returncode == 0, plugin.stdout + plugin.stderr
    assert re.search(r"^plugin:vault-index:vault-index: .*✔ Connected", plugin.stdout, re.M), plugin.stdout


# --- e. the plugin -------------------------------------------------------------------------------


def test_plugin_hooks_run_and_index_into_the_persons_own_index(sandbox, fake):
    # no .mcp.json, no .claude/settings.json: everything comes from --plugin-dir
    del sandbox.env["VAULT_INDEX_DB"], sandbox.env["VAULT_MEMORY_FILE"]  # the person's own, as the terminal's
    sandbox.env["VAULT_INDEX_PYTHON"] = str(VENV_PYTHON)
    data = sandbox.config / "plugins" / "data" / "vault-index-inline"  # CLAUDE_PLUGIN_DATA for --plugin-dir
    db = sandbox.home / ".mcp-memory" / "vault-index.db"  # one index for every workspace (ADR 0020)
    db.parent.mkdir(parents=True, exist_ok=True)
    sandbox.index(db)
    note = sandbox.project / "notes" / "new.md"
    fake.script([write_call(note, NEW_NOTE)], [text_block(FINAL_TEXT)])

    run = sandbox.claude("--plugin-dir", str(ROOT), "--permission-mode", "acceptEdits",
                         prompt="Write a note about the antenna.")

    assert not (sandbox.project / ".claude" / "settings.json").exists()
    assert [p["name"] for p in run.init["plugins"]] == ["vault-index"], run.init["plugins"]
    assert {"name": "plugin:vault-index:vault-index", "status": "connected"} in run.init["mcp_servers"]
    assert {f"vault-index:{c}" for c in OUR_COMMANDS} <= slash_commands(run), sorted(slash_commands(run))
    assert_hook_ok(run, "SessionStart")  # silent: the plugin's index exists and is fresh
    assert_hook_ok(run, "UserPromptSubmit")
    [post] = assert_hook_ok(run, "PostToolUse")
    assert post["hook_name"] == "PostToolUse:Write"
    assert note.read_text() == NEW_NOTE
    assert run.final["result"] == FINAL_TEXT, run.why()
    hits = sandbox.search("quokkaflux", db)
    assert [Path(h["path"]).name for h in hits] == ["new.md"], hits
    assert "Hook JSON output validation failed" not in run.debug
    assert not (data / "vault-index.db").exists() and not (data / "projects").exists()

    # the plugin's /recall, through the plugin's MCP server, finds the note on the plugin's index
    fake.script([tool_call("mcp__plugin_vault-index_vault-index__recall", {"query": "quokkaflux antenna"})],
                [text_block(FINAL_TEXT)])
    sandbox.claude("--plugin-dir", str(ROOT), prompt="/vault-index:recall quokkaflux antenna")
    first, second = fake.of_kind("main")
    assert "Recall what the memory holds about: quokkaflux antenna" in user_text(first)
    result = tool_result(second, "toolu_01FakeCall")
    assert not result.get("is_error"), result
    assert "new.md" in result_text(result)


# --- f. our slash commands run (a. and e. check that they are listed) ---------------------------



def test_recall_command_expands_and_its_allowed_mcp_tool_runs(sandbox, fake):
    """/recall expands with the argument, and its allowed-tools let the MCP call through in -p mode."""
    sandbox.wire()
    sandbox.link_commands()
    sandbox.index()
    fake.script([tool_call("mcp__vault-index__recall", {"query": "garden sensor battery"})], [text_block(FINAL_TEXT)])

    run = sandbox.claude(prompt="/recall garden sensor battery")

    first, second = fake.of_kind("main")
    assert "Recall what the memory holds about: garden sensor battery" in user_text(first)
    result = tool_result(second, "toolu_01FakeCall")
    assert not result.get("is_error"), result
    assert "garden.md" in result_text(result) and "AA" in result_text(result)
    assert run.final["result"] == FINAL_TEXT


def test_handoff_passes_the_guard_writes_a_note_and_then_the_session_continues(sandbox, fake):
    """The designed way out of a blocked session, through the real CLI: /handoff passes the guard
    with the session details, the command's script writes the note, and the next prompt passes."""
    sandbox.wire()
    sandbox.link_commands()
    sandbox.index()
    transcript = sandbox.transcript("long_session.jsonl")

    def run_the_script(body: dict) -> list[dict]:
        text = conversation_text({"body": body})
        command = re.search(r"`(\.venv/bin/python scripts/handoff\.py new [^`]+)`", text)
        path = re.search(r"transcript_path=(\S+?\.jsonl)", text)
        assert command and path, text[-3000:]
        return [tool_call("Bash", {"command": f"{command.group(1)} --transcript {path.group(1)}",
                                   "description": "Write the handoff note"}, "toolu_01FakeBash")]

    fake.script(run_the_script, [text_block("Handoff written.")])
    fake.input_tokens = 472_000  # as a real model would report for this long context
    run = sandbox.claude("--resume", FIXTURE_SESSION, prompt="/handoff antenna work")

    [guard] = assert_hook_ok(run, "UserPromptSubmit", silent=False)
    context = json.loads(guard["stdout"])["hookSpecificOutput"]["additionalContext"]
    assert f"session_id={FIXTURE_SESSION}" in context and str(transcript) in context
    assert "Hook JSON output validation failed" not in run.debug
    first, second = fake.of_kind("main")
    assert "Hand this session over to a fresh one. Topic: antenna work" in user_text(first)
    assert f"--session {FIXTURE_SESSION}" in user_text(first)  # ${CLAUDE_SESSION_ID} substituted
    result = tool_result(second, "toolu_01FakeBash")
    assert not result.get("is_error"), result
    notes = list((sandbox.project / "docs" / "handoffs").glob("*-antenna-work.md"))
    assert len(notes) == 1, result_text(result)
    assert f'session_id: "{FIXTURE_SESSION}"' in notes[0].read_text()

    fake.script([text_block("Continuing.")])
    fake.input_tokens = 472_500
    after = sandbox.claude("--resume", FIXTURE_SESSION, prompt="what next")
    [guard] = assert_hook_ok(after, "UserPromptSubmit", silent=False)
    answer = json.loads(guard["stdout"])  # still over the threshold, but the handoff note exists
    assert "decision" not in answer and "/clear" in answer["systemMessage"], answer
    assert after.final["result"] == "Continuing.", after.why()
    assert len(fake.of_kind("main")) == 1
