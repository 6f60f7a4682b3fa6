"""The pieces behind test_real_claude_code.py: a fake Anthropic Messages API and a sandbox that runs
the real `claude` CLI in a temporary project (see that module's docstring for what is relied on)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from helpers import claude_cli, load_setup, write

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "hooks" / "fixtures"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
VAULT_INDEX = ROOT / ".venv" / "bin" / "vault-index"
FIXTURE_SESSION = "5f0c2d1e-8a47-4b2e-9c11-3e2d7b9a0f42"  # the session id in the fixture transcripts
CLAUDE_TIMEOUT_S = 90
FINAL_TEXT = "Wrote the antenna note."  # the fake model's reply once its script is used up


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
            # How long Claude Code waits for an MCP server to connect before the session goes on
            # without its tools. Its default was passed on a loaded 2-core CI machine (a server
            # start of several seconds there): the test is about our wiring, not that race.
            MCP_TIMEOUT="60000",
        )
        self.runs = 0

    def wire(self) -> None:
        """What `python3 setup.py` does for Claude Code: .mcp.json and the hooks in .claude/settings.json."""
        load_setup().wire(self.project, self.project / ".venv" / "bin" / "python",
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
