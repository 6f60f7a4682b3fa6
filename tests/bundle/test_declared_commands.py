"""Run the MCP server and every hook exactly as the wiring files declare them.

The command strings come from the files Claude Code reads: `.mcp.json` and `.claude/settings.json`
as `setup.py` wrote them in this checkout (CI runs setup first; without them the test wires a
temporary copy the same way), and `.claude-plugin/plugin.json` + `hooks/hooks.json` for the
plugin. Commands run through a shell with the variables Claude Code sets (CLAUDE_PROJECT_DIR,
CLAUDE_PLUGIN_ROOT, CLAUDE_PLUGIN_DATA) and `${VAR}` / `${VAR:-default}` expanded the way Claude
Code expands them in MCP configs. Everything they write goes to a temporary project whose
`.venv` and `scripts/` link back to this checkout, so the repository itself is never touched.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from helpers import load_setup, write
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "hooks" / "fixtures"
TIMEOUT_S = 120
EVENTS = ("SessionStart", "PostToolUse", "UserPromptSubmit", "PreCompact", "Stop")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand(value: str, env: dict[str, str]) -> str:
    """`${VAR}` and `${VAR:-default}`, as Claude Code expands them in .mcp.json and plugin configs."""
    def one(match: re.Match) -> str:
        name, default = match.group(1), match.group(2)
        if env.get(name):
            return env[name]
        if default is None:
            raise AssertionError(f"{value!r} needs {name}, which is not set")
        return default
    return _VAR.sub(one, value)


def repo_wiring(tmp_path: Path) -> tuple[dict, dict]:
    """(.mcp.json, .claude/settings.json) of this checkout, or wired into a tmp copy when absent."""
    mcp_file, settings_file = ROOT / ".mcp.json", ROOT / ".claude" / "settings.json"
    if not (mcp_file.exists() and settings_file.exists()):
        where = tmp_path / "wired"
        where.mkdir()
        load_setup().wire(where, Path(sys.executable))
        mcp_file, settings_file = where / ".mcp.json", where / ".claude" / "settings.json"
    return json.loads(mcp_file.read_text()), json.loads(settings_file.read_text())


def plugin_wiring() -> tuple[dict, dict]:
    manifest = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    servers = manifest["mcpServers"]
    if isinstance(servers, str):
        servers = json.loads((ROOT / servers).read_text())
    servers = servers.get("mcpServers", servers)
    hooks_ref = manifest.get("hooks", "./hooks/hooks.json")
    hooks = json.loads((ROOT / hooks_ref).read_text()) if isinstance(hooks_ref, str) else hooks_ref
    return servers, hooks


def project(tmp_path: Path) -> Path:
    """A project folder as Claude Code would open it: notes, and links to the checkout's tools."""
    proj = tmp_path / "project"
    (proj / ".claude").mkdir(parents=True)
    for name in (".venv", "scripts"):
        (proj / name).symlink_to(ROOT / name, target_is_directory=True)
    write(proj, "notes/garden.md", "# Garden sensor\n\n## Power\n\nThe garden sensor runs on two AA cells "
          "and reports soil moisture every ten minutes.\n")
    return proj


def base_env(tmp_path: Path, proj: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "CLAUDE_"))}
    env.update(
        HOME=str(tmp_path / "home"),
        CLAUDE_PROJECT_DIR=str(proj),
        VAULT_INDEX_DB=str(tmp_path / "state" / "index.db"),
        VAULT_MEMORY_FILE=str(tmp_path / "state" / "memory.jsonl"),
        VAULT_EMBED_MODEL="none",  # keyword search: the point here is the wiring, not the model
        VAULT_RERANK="0",
        HF_HUB_OFFLINE="1",
    )
    return env


def hook_commands(hooks_config: dict) -> dict[str, list[tuple[str | None, str]]]:
    found: dict[str, list[tuple[str | None, str]]] = {}
    for event, groups in hooks_config["hooks"].items():
        for group in groups:
            for hook in group["hooks"]:
                assert hook["type"] == "command"
                found.setdefault(event, []).append((group.get("matcher"), hook["command"]))
    return found


def run_hook(command: str, payload, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """As Claude Code does: the command string through a shell, the event JSON on stdin."""
    data = payload if isinstance(payload, (str, bytes)) else json.dumps(payload)
    return subprocess.run(command, shell=True, input=data if isinstance(data, bytes) else data.encode(),
                          capture_output=True, env=env, cwd=cwd, timeout=TIMEOUT_S)


def payload(event: str, proj: Path, transcript: Path, **extra) -> dict:
    return {"session_id": "5d0c8f9e-1111-4e2b-9c1a-7f3e2a9b0c4d", "transcript_path": str(transcript),
            "cwd": str(proj), "permission_mode": "default", "hook_event_name": event, **extra}


async def call(session: ClientSession, tool: str, arguments: dict) -> dict:
    result = await session.call_tool(tool, arguments)
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    assert not result.is_error, f"{tool}: {text}"
    return result.structured_content or json.loads(text)


async def drive_server(params: StdioServerParameters, proj: Path, hooks: dict, env: dict, transcript: Path,
                       errlog) -> dict:
    """Index, search, write through the tools; edit a note and let the PostToolUse hook re-index it
    while the server keeps running; then search the same server again."""
    seen: dict = {}
    note = proj / "notes" / "garden.md"
    with anyio.fail_after(TIMEOUT_S):
        async with stdio_client(params, errlog=errlog) as (read, write_stream), \
                ClientSession(read, write_stream) as session:
            await session.initialize()
            seen["tools"] = {t.name for t in (await session.list_tools()).tools}
            await call(session, "index_paths", {"paths": [str(proj / "notes")]})
            seen["before"] = await call(session, "search_notes", {"query": "pangolin solar panel", "mode": "keyword"})
            seen["graph"] = await call(session, "graph_create", {
                "entities": [{"name": "Garden sensor", "entityType": "device", "source": str(note)}],
                "observations": [{"entity": "Garden sensor", "text": "runs on two AA cells", "source": str(note)}],
            })
            seen["lesson"] = await call(session, "lesson_add", {
                "lesson": "Check the battery voltage before blaming the radio",
                "cause": "a dead AA cell looked like a radio fault for a week",
                "detect": "the sensor log shows voltage under 2.2 V before dropouts"})
            seen["adr"] = await call(session, "adr_create", {
                "title": "Solar panel for the garden sensor",
                "context": "AA cells last nine weeks", "options": "bigger cells; a 1 W solar panel",
                "decision": "fit the solar panel", "consequences": "the sensor needs a sunny spot",
                "relates_to": ["Garden sensor"]})

            # Claude's Write tool changes the note, then Claude Code runs the PostToolUse hooks.
            new_text = note.read_text() + "\n## Upgrade\n\nA pangolin solar panel now charges the cells.\n"
            note.write_text(new_text)
            event = payload("PostToolUse", proj, transcript, tool_name="Write",
                            tool_input={"file_path": str(note), "content": new_text},
                            tool_response={"type": "update", "filePath": str(note), "success": True},
                            tool_use_id="toolu_01Xo")
            for matcher, command in hooks["PostToolUse"]:
                assert re.fullmatch(matcher, "Write")
                seen.setdefault("post_hook", []).append(run_hook(command, event, env, proj))
            # The hook may hand the path to this running server, which re-indexes it on its own
            # thread (docs/adr/0010): the edit reaches search shortly after the hook returns.
            for _ in range(100):
                seen["after"] = await call(session, "search_notes", {"query": "pangolin solar panel",
                                                                     "mode": "keyword"})
                # not any hit: the ADR written above says "solar panel" and can answer before the
                # server's worker has re-indexed the edit (a race the first search sometimes lost)
                if any(h["path"].endswith("garden.md") for h in seen["after"]["hits"]):
                    break
                await anyio.sleep(0.2)
            seen["recall"] = await call(session, "recall", {"query": "garden sensor battery"})
    return seen


def check_session(seen: dict, proj: Path) -> None:
    assert {"search_notes", "recall", "graph_create", "graph_search", "graph_open", "lesson_add",
            "adr_create"} <= seen["tools"]
    assert seen["before"]["hits"] == []
    for result in seen["post_hook"]:
        assert result.returncode == 0, result.stderr.decode()
        assert b"Traceback" not in result.stderr
        assert result.stdout.strip() in (b"", b"{}")  # silent: never blocks, never decides
    hits = seen["after"]["hits"]
    # the edited note is found by its new word (the session's ADR on the garden sensor may rank first)
    garden = [h for h in hits if h["path"].endswith("garden.md")]
    assert garden and "pangolin" in garden[0]["snippet"].lower(), hits
    assert (proj / "docs" / "lessons.md").is_file()
    [record] = (proj / "docs" / "adr").glob("0001-*.md")
    assert record.read_text().endswith("## Consequences\n\nthe sensor needs a sunny spot\n")


def run_all_hooks(hooks: dict, env: dict, proj: Path, transcript: Path) -> dict[str, list]:
    """Every other declared hook with a realistic event, then each with garbage on stdin."""
    events = {
        "SessionStart": payload("SessionStart", proj, transcript, source="startup", model="claude-opus-4-5"),
        "UserPromptSubmit": payload("UserPromptSubmit", proj, transcript,
                                    prompt="what did we decide about the sensor?"),
        "PreCompact": payload("PreCompact", proj, transcript, trigger="manual", custom_instructions=""),
        "Stop": payload("Stop", proj, transcript, stop_hook_active=False),
    }
    results: dict[str, list] = {}
    for event, event_payload in events.items():
        for _, command in hooks[event]:
            results.setdefault(event, []).append(run_hook(command, event_payload, env, proj))
    for event in EVENTS:
        for _, command in hooks[event]:
            for junk in (b"", b"not json", b"[1,2]", json.dumps({"hook_event_name": event, "tool_input": 7}).encode()):
                results.setdefault("junk", []).append(run_hook(command, junk, env, proj))
    return results


def check_hooks(results: dict, proj: Path) -> None:
    for result in [r for group in results.values() for r in group]:
        assert result.returncode == 0, (result.args, result.stderr.decode())
        assert b"Traceback" not in result.stderr, result.stderr.decode()
    # the lesson, the ADR and the graph facts the tools wrote pass the invariants: silent start
    start = results["SessionStart"][0]
    assert start.stdout.strip() == b"", start.stdout.decode()
    # small transcript: under the threshold, so no block; prompt-time recall may add notes, nothing else
    prompted = json.loads(results["UserPromptSubmit"][0].stdout or b"{}")
    assert set(prompted) <= {"hookSpecificOutput"}, prompted
    assert results["Stop"][0].stdout.strip() == b""  # no edits in the transcript: nothing to ask
    # the real event's snapshot (the junk events may leave their own, marked with no session)
    snapshots = list((proj / "docs" / "handoffs" / "auto").glob("*-5d0c8f9e*.md"))
    assert len(snapshots) == 1
    assert "garden sensor batteries" in snapshots[0].read_text().lower()


@pytest.fixture
def transcript(tmp_path) -> Path:
    """A small real-shaped transcript (see tests/hooks/fixtures for where the shape comes from)."""
    lines = [
        {"type": "user", "uuid": "u1", "sessionId": "s", "isSidechain": False,
         "message": {"role": "user", "content": "How long do the garden sensor batteries last?"}},
        {"type": "assistant", "uuid": "a1", "sessionId": "s", "isSidechain": False, "requestId": "req_1",
         "message": {"id": "msg_1", "role": "assistant", "model": "claude-opus-4-5", "content": [
             {"type": "text", "text": "Let me check the notes."}],
             "usage": {"input_tokens": 12, "cache_creation_input_tokens": 900, "cache_read_input_tokens": 14000,
                       "output_tokens": 40}}},
    ]
    path = tmp_path / "transcript.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_repo_wiring_runs_as_declared(tmp_path, transcript):
    mcp_config, settings = repo_wiring(tmp_path)
    proj = project(tmp_path)
    env = base_env(tmp_path, proj)
    (proj / ".mcp.json").write_text(json.dumps(mcp_config))
    (proj / ".claude" / "settings.json").write_text(json.dumps(settings))
    hooks = hook_commands(settings)
    assert set(hooks) >= set(EVENTS)

    server = mcp_config["mcpServers"]["vault-index"]
    params = StdioServerParameters(command=expand(server["command"], env),
                                   args=[expand(a, env) for a in server.get("args", [])],
                                   env={**env, **{k: expand(v, env) for k, v in server.get("env", {}).items()}},
                                   cwd=str(proj))
    assert env["VAULT_MEMORY_FILE"] in params.args  # ${VAULT_MEMORY_FILE:-...} picked the env value
    with open(tmp_path / "server.log", "w") as errlog:
        seen = anyio.run(drive_server, params, proj, hooks, env, transcript, errlog)
    check_session(seen, proj)
    check_hooks(run_all_hooks(hooks, env, proj, transcript), proj)


def test_plugin_wiring_runs_as_declared(tmp_path, transcript):
    servers, hooks_config = plugin_wiring()
    proj = project(tmp_path)
    env = base_env(tmp_path, proj)
    data = tmp_path / "plugin-data"
    data.mkdir()
    # An interpreter that already has vault-index: plugin_run.py uses it instead of building its
    # own environment in CLAUDE_PLUGIN_DATA (which needs the network and a minute).
    env.update(CLAUDE_PLUGIN_ROOT=str(ROOT), CLAUDE_PLUGIN_DATA=str(data), VAULT_INDEX_PYTHON=sys.executable)
    del env["VAULT_MEMORY_FILE"], env["VAULT_INDEX_DB"]  # the plugin keeps its state in its data folder
    hooks = hook_commands(hooks_config)
    assert set(hooks) >= set(EVENTS)
    for _, command in [c for group in hooks.values() for c in group]:
        assert "${CLAUDE_PLUGIN_ROOT}" in command

    server = servers["vault-index"]
    params = StdioServerParameters(command=expand(server["command"], env),
                                   args=[expand(a, env) for a in server.get("args", [])],
                                   env={**env, **{k: expand(v, env) for k, v in server.get("env", {}).items()}},
                                   cwd=str(proj))
    with open(tmp_path / "server.log", "w") as errlog:
        seen = anyio.run(drive_server, params, proj, hooks, env, transcript, errlog)
    check_session(seen, proj)
    # the person's one index and graph, shared with the terminal; none in the data folder (ADR 0020)
    state = tmp_path / "home" / ".mcp-memory"
    assert (state / "memory.jsonl").is_file() and (state / "vault-index.db").is_file()
    assert not (data / "memory.jsonl").exists() and not (data / "projects").exists()
    check_hooks(run_all_hooks(hooks, env, proj, transcript), proj)
