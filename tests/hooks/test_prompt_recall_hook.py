"""Prompt-time recall in scripts/context_guard.py, as Claude Code runs it on UserPromptSubmit.

The hook runs in a subprocess with CLAUDE_PROJECT_DIR set and the project as its working folder; the
server, when one runs, is started as Claude Code starts it (`python -m vault_index serve` over stdio,
through the MCP SDK client). The confidence weights are the test's own (fixtures/confident/
sitecustomize.py): confident when the first hit holds the prompt's rare words, whatever the fitted
file says. Keyword-only (VAULT_EMBED_MODEL=none): a subprocess cannot use the fake embedder.
"""

from __future__ import annotations

import json
import os
import sys
import uuid

import anyio
import pytest
from helpers import make_settings, write
from hookrun import FIXTURES, LONG_CONTEXT, answer, hook_env, prompt_payload, run_script
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App
from vault_index.services.search.confidence import FEATURES

# P(relevant) = sigmoid(-6 + 12 * coverage of the prompt's terms by the first hit): a prompt whose
# words the note holds is about 0.9 and more, one that shares a word or none is under 0.5.
CONFIDENT = {"threshold": 0.5, "models": {
    kind: {"features": list(FEATURES[kind]), "bias": -6.0,
           "weights": [12.0 if name == "cov1" else 0.0 for name in FEATURES[kind]]}
    for kind in ("keyword", "hybrid")}}
MATCHING = "how long do the garden sensor batteries last between changes"
UNRELATED = "fix the flaky pagination test in the orders api"
TIMEOUT_S = 120


@pytest.fixture
def indexed(tmp_path, project):
    """The project (a .claude folder makes it one) with two notes in docs/, keyword-indexed."""
    (project / ".claude").mkdir()
    write(project, "docs/garden-sensor.md", "# Garden sensor\n\n## Batteries\n\nThe garden sensor batteries last "
          "about nine weeks between changes on two AA cells.\n\n## Radio\n\nLoRa at 868 MHz to the shed gateway.\n")
    write(project, "docs/kitchen.md", "# Kitchen\n\n## Sourdough\n\nFeed the starter twice a day.\n")
    app = App.open(make_settings(tmp_path), models=Models.fixed(None), start=project)
    app.index([str(project / "docs")])
    app.close()
    # most tests run the hook without a server: its keyword search, which is off by default
    (project / ".claude" / "handoff.json").write_text(json.dumps({"prompt_recall_keywords": True}), encoding="utf-8")
    return project, tmp_path / "index.db"


def env_for(project, db, **extra) -> dict[str, str]:
    site = str(FIXTURES / "confident")
    path = os.pathsep.join(p for p in (site, os.environ.get("PYTHONPATH", "")) if p)
    return hook_env(VAULT_INDEX_DB=str(db), CLAUDE_PROJECT_DIR=str(project), PYTHONPATH=path,
                    VAULT_TEST_CONFIDENCE=json.dumps(CONFIDENT), VAULT_INDEX_HOOK_TRACE="1", **extra)


def prompt(project, db, text: str, session: str, transcript="", **extra):
    done = run_script("context_guard.py", prompt_payload(project, transcript, text, session),
                      env_for(project, db, **extra), cwd=project)
    return answer(done), done.stderr.decode()


def context_of(out: dict | None) -> str:
    return ((out or {}).get("hookSpecificOutput") or {}).get("additionalContext", "")


def new_session() -> str:
    return f"sess-{uuid.uuid4().hex[:12]}"


def test_a_matching_prompt_gets_its_note_and_an_unrelated_one_nothing(indexed):
    project, db = indexed
    out, trace = prompt(project, db, MATCHING, new_session())
    context = context_of(out)
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit" and "decision" not in out
    assert "docs/garden-sensor.md:5 (Garden sensor > Batteries)" in context, context
    assert "nine weeks" in context and len(context) <= 250 * 4
    assert "kitchen" not in context.lower()
    assert prompt(project, db, UNRELATED, new_session())[0] is None


def test_a_pasted_traceback_with_the_notes_words_stays_silent(indexed):
    project, db = indexed
    pasted = f"Traceback (most recent call last):\n  File \"garden.py\", line 3\nValueError: {MATCHING}"
    out, trace = prompt(project, db, pasted, new_session())
    assert out is None and "about the code at hand (pasted text)" in trace, trace
    assert "garden-sensor.md" in context_of(prompt(project, db, MATCHING, new_session())[0])  # the words alone do


def test_a_note_is_injected_once_a_session(indexed):
    project, db = indexed
    session = new_session()
    assert "garden-sensor.md" in context_of(prompt(project, db, MATCHING, session)[0])
    again, trace = prompt(project, db, "garden sensor batteries on AA cells", session)
    assert again is None and "already injected" in trace
    assert "garden-sensor.md" in context_of(prompt(project, db, MATCHING, new_session())[0])  # another session


def test_the_off_switch_and_slash_commands_keep_it_silent(indexed):
    project, db = indexed
    assert prompt(project, db, f"/recall {MATCHING}", new_session())[0] is None
    (project / ".claude" / "handoff.json").write_text(json.dumps({"prompt_recall": False}), encoding="utf-8")
    out, trace = prompt(project, db, MATCHING, new_session())
    assert out is None and "prompt recall" not in trace


def test_a_broken_settings_file_is_said_once_and_recall_keeps_its_defaults(indexed):
    project, db = indexed
    (project / ".claude" / "handoff.json").write_text("{not json", encoding="utf-8")
    session = new_session()
    first, _ = prompt(project, db, MATCHING, session)
    assert "handoff.json is not valid JSON" in first["systemMessage"] and "defaults" in first["systemMessage"]
    assert "garden-sensor.md" not in context_of(first)  # the defaults: no keyword search without a server
    second, _ = prompt(project, db, "what about the LoRa radio gateway in the shed", session)
    assert "systemMessage" not in (second or {})


def test_without_a_server_it_answers_by_keywords_in_its_own_process(indexed):
    project, db = indexed
    out, trace = prompt(project, db, MATCHING, new_session())
    assert "this process by keywords (no server)" in trace and "mode keyword" in trace
    assert "garden-sensor.md" in context_of(out)


def test_without_a_server_it_is_silent_unless_keywords_are_asked_for(indexed):
    """Keyword-only answers injected for 6-17% of unrelated prompts in the eval (docs/eval.md), so
    the hook alone stays silent by default."""
    project, db = indexed
    (project / ".claude" / "handoff.json").write_text("{}", encoding="utf-8")
    out, trace = prompt(project, db, MATCHING, new_session())
    assert out is None and "prompt_recall_keywords is off" in trace, trace


def test_without_an_index_it_is_silent(project, tmp_path):
    out, trace = prompt(project, tmp_path / "no-index.db", MATCHING, new_session())
    assert out is None and "prompt recall" not in trace


def test_the_guard_wins_over_recall(indexed):
    project, db = indexed
    out, _ = prompt(project, db, MATCHING, new_session(), transcript=FIXTURES / "long_session.jsonl")
    assert out["decision"] == "block" and f"{LONG_CONTEXT:,}" in out["reason"]
    assert "hookSpecificOutput" not in out


# --- with the session's server running ------------------------------------------------------


async def _with_server(serving, env: dict, steps):
    """Start the server as Claude Code does (stdio, the project as working folder), run `steps` while it runs."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "vault_index", "serve"], env=env,
                                   cwd=str(serving))
    with anyio.fail_after(TIMEOUT_S), open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write_stream), \
                ClientSession(read, write_stream) as session:
            await session.initialize()
            await session.list_tools()  # the socket listens once the tools are registered
            return await anyio.to_thread.run_sync(steps)


def test_the_running_server_answers_for_its_own_project(indexed):
    project, db = indexed
    env = env_for(project, db)
    sessions = [new_session(), new_session()]

    def steps():
        return [prompt(project, db, MATCHING, sessions[0]), prompt(project, db, MATCHING, sessions[0]),
                prompt(project, db, UNRELATED, sessions[1])]

    (out, trace), (again, trace_again), (unrelated, _) = anyio.run(_with_server, project, env, steps)
    assert "prompt recall: server;" in trace, trace
    assert "docs/garden-sensor.md:5" in context_of(out)
    assert again is None and "server" in trace_again and "already injected" in trace_again
    assert unrelated is None


def test_a_server_of_another_project_leaves_the_search_to_the_hook(indexed, tmp_path):
    project, db = indexed
    other = tmp_path / "other-project"
    (other / ".claude").mkdir(parents=True)
    env = env_for(other, db)

    def steps():
        return prompt(project, db, MATCHING, new_session())

    out, trace = anyio.run(_with_server, other, env, steps)
    assert "this process by keywords (server elsewhere)" in trace, trace
    assert "garden-sensor.md" in context_of(out)
