"""/recall through the real MCP server passes the agent's own phrasings (sub-queries).

The test reads which arguments surfaces/commands/recall.md tells the agent to pass, checks the live
server's `recall` tool takes each of them, and calls it as the command says over the MCP SDK client:
the note that answers shares no word with the question, so the plain question cannot find it and
the phrasings the command asks for do. Keyword-only server (VAULT_EMBED_MODEL=none), so the
hypothetical answer (a vector-side phrasing) is passed and accepted but finds nothing here; the
keyword forms and the paraphrase find the note.
"""

from __future__ import annotations

import os
import re
import sys

import anyio
from helpers import make_settings, write
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App
from vault_index.surfaces.prompts import command_file_text, parse_command

QUESTION = "why did the door stop moving last week"
# What an agent following the command would write for that question (the words the notes use).
PHRASINGS = {"keywords": ["zephyrcoil actuator"],
             "hypothetical": "The door's actuator burned out after a firmware push and was replaced.",
             "paraphrases": ["what made the workshop actuator fail"]}
TIMEOUT_S = 120


def asked_arguments() -> list[str]:
    """The argument names recall.md's first step lists (`- \\`name\\`: ...`), beside `query`."""
    body = parse_command("recall", command_file_text("recall")).body
    step = body.split("\n2.", 1)[0]
    assert "`recall`" in step and "`query`" in step
    return re.findall(r"^\s+- `(\w+)`:", step, re.M)


async def _recall_calls(env: dict, cwd) -> tuple[dict, list[dict]]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "vault_index", "serve"], env=env, cwd=str(cwd))
    with anyio.fail_after(TIMEOUT_S), open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write_stream), \
                ClientSession(read, write_stream) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            schema = tools["recall"].input_schema["properties"]
            answers = []
            for arguments in ({}, {name: PHRASINGS[name] for name in asked_arguments()},
                              {"keywords": PHRASINGS["keywords"]}, {"paraphrases": PHRASINGS["paraphrases"]}):
                result = await session.call_tool("recall", {"query": QUESTION, "limit": 5, **arguments})
                assert not result.is_error, result.content
                answers.append(result.structured_content)
    return schema, answers


def test_recall_as_the_command_asks_passes_the_phrasings_to_the_real_server(tmp_path):
    asked = asked_arguments()
    assert set(asked) == {"keywords", "hypothetical", "paraphrases"}, asked
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    write(project, "notes/workshop-log.md", "# Workshop log\n\n## Actuator\n\nThe zephyrcoil actuator burned out "
          "after the firmware push; replaced under warranty.\n")
    write(project, "notes/hinges.md", "# Hinges\n\n## Oiling\n\nOil the door hinges each spring so the door "
          "keeps moving freely.\n")
    app = App.open(make_settings(tmp_path), models=Models.fixed(None), start=project)
    app.index([str(project / "notes")])
    app.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "CLAUDE_"))}
    env.update(VAULT_INDEX_DB=str(tmp_path / "index.db"), VAULT_MEMORY_FILE=str(tmp_path / "memory.jsonl"),
               VAULT_EMBED_MODEL="none", VAULT_RERANK="0", HF_HUB_OFFLINE="1", CLAUDE_PROJECT_DIR=str(project),
               VAULT_LOCK_DIR=os.environ.get("VAULT_LOCK_DIR", str(tmp_path / "locks")),
               VAULT_INDEX_HOME=os.environ.get("VAULT_INDEX_HOME", str(tmp_path / "home")))
    schema, (plain, as_asked, keywords, paraphrases) = anyio.run(_recall_calls, env, project)
    assert set(asked) <= set(schema)  # every argument the command names is one the tool takes

    def files(answer: dict) -> list[str]:
        return [os.path.basename(n["path"]) for n in answer["notes"]]

    assert "workshop-log.md" not in files(plain)  # the question's own words miss it
    assert "workshop-log.md" in files(as_asked), as_asked  # found through the phrasings alone
    assert "workshop-log.md" in files(keywords) and "workshop-log.md" in files(paraphrases)
