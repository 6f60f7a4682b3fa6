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

import importlib.util
import json
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers import write

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "hooks" / "fixtures"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
VAULT_INDEX = ROOT / ".venv" / "bin" / "vault-index"
FIXTURE_SESSION = "5f0c2d1e-8a47-4b2e-9c11-3e2d7b9a0f42"  # the session id in the fixture transcripts
CLAUDE_TIMEOUT_S = 90
OUR_COMMANDS = ("recall", "adr", "learn", "ingest", "handoff")
NEW_NOTE = "# Antenna\n\nThe quokkaflux antenna sits on the shed roof, pointing north-east.\n"
FINAL_TEXT = "Wrote the antenna note."


def claude_cli() -> str | None:
    return os.environ.get("CLAUDE_CLI") or shutil.which("claude")


pytestmark = [
    pytest.mark.skipif(
        claude_cli() is None,
        reason="the claude CLI is not installed (npm install @anthropic-ai/claude-code, or set CLAUDE_CLI); "
        "these tests run the real Claude Code against a fake model"),
    pytest.mark.skipif(not VENV_PYTHON.exists(), reason=f"no {VENV_PYTHON}: run setup.py first"),
]


# --- the fake model ------------------------------------------------------------------------------


def text_block(text: str) -> dict:
    return {"type": "text", "text": text}


def tool_call(name: str, arguments: dict, call_id: str = "toolu_01FakeCall") -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def write_call(path: Path, content: str) -> dict:
    return tool_call("Write", {"file_path": str(path), "content": content}, "toolu_01FakeWrite")


def message_text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


@dataclass
class FakeModel:
    """State behind the fake API: the scripted main-turn replies and a log of every request."""

    turns: list = field(default_factory=list)  # each: content blocks, or a function of the request body
    requests: list[dict] = field(default_factory=list)  # {"method", "path", "kind", "body"}
    input_tokens: int = 120  # the usage each reply reports (Claude Code writes it to the transcript)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, *turns) -> None:
        with self.lock:
            self.turns = list(turns)
            self.requests.clear()
            self.input_tokens = 120

    def of_kind(self, kind: str) -> list[dict]:
        with self.lock:
            return [r for r in self.requests if r["kind"] == kind]

    def reply(self, body: dict) -> tuple[str, list[dict]]:
        """(kind, content blocks). The main turn carries the tool list; compaction asks for a
        <summary> with tools forbidden; anything else (titles, quota probes) gets plain text."""
        messages = body.get("messages") or []
        last = message_text(messages[-1]) if messages else ""
        if "<summary>" in last and "Do NOT call any tools" in last:
            return "compact", [text_block(
                "<analysis>The user asked about the garden sensor batteries.</analysis>\n"
                "<summary>1. Primary Request: garden sensor battery life (two AA cells, about nine weeks)."
                "</summary>")]
        if body.get("tools"):
            with self.lock:
                turn = self.turns.pop(0) if self.turns else [text_block(FINAL_TEXT)]
            return "main", turn(body) if callable(turn) else turn
        return "side", [text_block("Garden notes")]


def sse_events(body: dict, blocks: list[dict], input_tokens: int) -> list[tuple[str, dict]]:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    events: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model", "claude-fake"),
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1}}})]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}),
                   ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                   ("content_block_stop", {"type": "content_block_stop", "index": index})]
    events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                  "usage": {"output_tokens": 20}}),
               ("message_stop", {"type": "message_stop"})]
    return events


class FakeApiHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer

    def log_message(self, *args) -> None:  # quiet; every request is in FakeModel.requests
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _log(self, kind: str, body=None) -> None:
        fake: FakeModel = self.server.fake  # type: ignore[attr-defined]
        with fake.lock:
            fake.requests.append({"method": self.command, "path": self.path, "kind": kind, "body": body})

    def do_GET(self) -> None:  # Claude Code probes GET / at start
        self._log("probe")
        self._send(200, b"{}")

    def do_HEAD(self) -> None:
        self._log("probe")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"unparsed": raw.decode(errors="replace")}
        path = self.path.split("?")[0]
        if path == "/v1/messages/count_tokens":
            self._log("count_tokens", body)
            return self._send(200, b'{"input_tokens": 120}')
        if path != "/v1/messages":
            self._log("unknown", body)
            return self._send(404, b'{"type": "error", "error": {"type": "not_found_error", "message": "fake"}}')
        fake: FakeModel = self.server.fake  # type: ignore[attr-defined]
        kind, blocks = fake.reply(body)
        self._log(kind, body)
        if not body.get("stream"):
            stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
            return self._send(200, json.dumps({
                "id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model", "claude-fake"),
                "content": blocks, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": fake.input_tokens, "output_tokens": 20}}).encode())
        events = sse_events(body, blocks, fake.input_tokens)
        stream = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
        self._send(200, stream.encode(), "text/event-stream")


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


def _load_setup():
    spec = importlib.util.spec_from_file_location("vault_setup_real_cc", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Run:
    result: subprocess.CompletedProcess
    events: list[dict]
    debug: str

    def hooks(self, event: str) -> list[dict]:
        return [e for e in self.events if e.get("subtype") == "hook_response" and e.get("hook_event") == event]

    @property
    def init(self) -> dict:
        return next(e for e in self.events if e.get("subtype") == "init")

    @property
    def final(self) -> dict:
        return next(e for e in reversed(self.events) if e.get("type") == "result")

    def why(self) -> str:
        return f"stdout:\n{self.result.stdout[-6000:]}\nstderr:\n{self.result.stderr[-3000:]}"


class Sandbox:
    """A temporary HOME/CLAUDE_CONFIG_DIR, state folder and project for one test."""

    def __init__(self, tmp_path: Path, api: ThreadingHTTPServer):
        self.tmp = tmp_path
        self.home = tmp_path / "home"
        self.config = self.home / ".claude"
        self.state = tmp_path / "state"
        self.project = tmp_path / "project"
        for folder in (self.config, self.state, self.project / "notes"):
            folder.mkdir(parents=True)
        # Project MCP servers count as approved (interactive sessions ask first; -p does not).
        (self.config / "settings.json").write_text(json.dumps({"enableAllProjectMcpServers": True}))
        for name in (".venv", "scripts"):
            (self.project / name).symlink_to(ROOT / name, target_is_directory=True)
        write(self.project, "notes/garden.md", "# Garden sensor\n\n## Power\n\nThe garden sensor runs on two AA "
              "cells and reports soil moisture every ten minutes.\n")
        host, port = api.server_address[:2]
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("VAULT_", "CLAUDE_", "ANTHROPIC_")) and k.lower() not in (
                        "http_proxy", "https_proxy", "all_proxy")}
        self.env.update(
            HOME=str(self.home), CLAUDE_CONFIG_DIR=str(self.config),
            ANTHROPIC_BASE_URL=f"http://{host}:{port}", ANTHROPIC_API_KEY="sk-ant-fake-key-for-tests",
            NO_PROXY="127.0.0.1,localhost", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1",
            VAULT_INDEX_DB=str(self.state / "index.db"), VAULT_MEMORY_FILE=str(self.state / "memory.jsonl"),
            VAULT_EMBED_MODEL="none", VAULT_RERANK="0", HF_HUB_OFFLINE="1",
        )
        self.runs = 0

    def wire(self) -> None:
        """What `python3 setup.py` does for Claude Code: .mcp.json and the hooks in .claude/settings.json."""
        _load_setup().wire(self.project, self.project / ".venv" / "bin" / "python",
                           memory_file=self.env["VAULT_MEMORY_FILE"])

    def link_commands(self) -> None:
        (self.project / ".claude").mkdir(exist_ok=True)
        (self.project / ".claude" / "commands").symlink_to(ROOT / ".claude" / "commands", target_is_directory=True)

    def index(self, db: Path | None = None) -> None:
        env = dict(self.env, VAULT_INDEX_DB=str(db)) if db else self.env
        subprocess.run([str(VAULT_INDEX), "index", "notes"], cwd=self.project, env=env, check=True,
                       capture_output=True, timeout=60)

    def search(self, word: str, db: Path | None = None) -> list[dict]:
        env = dict(self.env, VAULT_INDEX_DB=str(db)) if db else self.env
        out = subprocess.run([str(VAULT_INDEX), "search", word, "--mode", "keyword", "--json"], cwd=self.project,
                             env=env, check=True, capture_output=True, text=True, timeout=60)
        return json.loads(out.stdout)["hits"]

    def transcript(self, fixture: str) -> Path:
        """Put a fixture transcript where Claude Code looks for this project's sessions."""
        folder = self.config / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(self.project.resolve()))
        folder.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy(FIXTURES / fixture, folder / f"{FIXTURE_SESSION}.jsonl"))

    def claude(self, *args: str, prompt: str) -> Run:
        self.runs += 1
        debug = self.tmp / f"claude-debug-{self.runs}.log"
        result = subprocess.run(
            [claude_cli(), "-p", prompt, *args, "--output-format", "stream-json", "--verbose",
             "--include-hook-events", "--debug-file", str(debug)],
            cwd=self.project, env=self.env, capture_output=True, text=True, timeout=CLAUDE_TIMEOUT_S,
            stdin=subprocess.DEVNULL)
        events = []
        for line in result.stdout.splitlines():
            if line.startswith("{"):
                events.append(json.loads(line))
        run = Run(result, events, debug.read_text(errors="replace") if debug.exists() else "")
        assert result.returncode == 0, run.why()
        return run

    def claude_plain(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([claude_cli(), *args], cwd=self.project, env=self.env, capture_output=True, text=True,
                              timeout=CLAUDE_TIMEOUT_S, stdin=subprocess.DEVNULL)


@pytest.fixture
def sandbox(tmp_path, fake_api) -> Sandbox:
    return Sandbox(tmp_path, fake_api)


def assert_hook_ok(run: Run, event: str, silent: bool = True) -> list[dict]:
    responses = run.hooks(event)
    assert responses, f"no {event} hook_response in the stream\n{run.why()}"
    for response in responses:
        assert response["exit_code"] == 0 and response["outcome"] == "success", response
        assert "Traceback" not in response.get("stderr", ""), response
        if silent:
            assert response["stdout"].strip() == "", response
    return responses


def slash_commands(run: Run) -> set[str]:
    return set(run.init.get("slash_commands", []))


def user_text(request: dict) -> str:
    """Everything the user side of a request said (2.1.197 also sends role "system" messages)."""
    return "\n".join(message_text(m) for m in request["body"]["messages"] if m.get("role") == "user")


def conversation_text(request: dict) -> str:
    return "\n".join(message_text(m) for m in request["body"]["messages"])


def tool_result(request: dict, call_id: str) -> dict:
    [block] = [b for m in request["body"]["messages"] if m.get("role") == "user" and isinstance(m.get("content"), list)
               for b in m["content"] if isinstance(b, dict) and b.get("tool_use_id") == call_id]
    return block


def result_text(block: dict) -> str:
    content = block.get("content")
    return content if isinstance(content, str) else json.dumps(content)


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


def test_plugin_hooks_run_and_index_into_the_plugin_data_folder(sandbox, fake):
    # no .mcp.json, no .claude/settings.json: everything comes from --plugin-dir
    del sandbox.env["VAULT_INDEX_DB"], sandbox.env["VAULT_MEMORY_FILE"]  # plugin_run picks its data folder
    sandbox.env["VAULT_INDEX_PYTHON"] = str(VENV_PYTHON)
    data = sandbox.config / "plugins" / "data" / "vault-index-inline"  # CLAUDE_PLUGIN_DATA for --plugin-dir
    db = data / "vault-index.db"
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
