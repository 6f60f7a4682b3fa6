"""Issue 21 must-show 2: the real stdio server started as Claude Code 2.1.197 starts it
(CLAUDE_PROJECT_DIR set, the project as its working folder), a fresh HOME, the default index.

What a person expects (ADR 0020): notes indexed from a terminal are found from any project; a
project's docs are found without indexing them by hand; a terminal in the project folder sees the
same files as the agent; an init vault sees its own notes and what the agent writes there at once;
another project's notes and the demo never appear.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import anyio
import pytest
from helpers import CLI, REPO, write
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

TIMEOUT_S = 90


@pytest.fixture
def machine(tmp_path):
    """A fresh home, a personal notes folder indexed from the terminal, and two projects."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "VAULT_EMBED_MODEL": "none", "VAULT_RERANK": "0",
           "LANG": "C.UTF-8", "GIT_AUTHOR_NAME": "Pat", "GIT_AUTHOR_EMAIL": "pat@example.com",
           "GIT_COMMITTER_NAME": "Pat", "GIT_COMMITTER_EMAIL": "pat@example.com"}
    write(home / "notes", "bikes.md", "# Bikes\n\nThe wombat trailer needs new brake pads.\n")
    terminal(env, home, "index", str(home / "notes"))
    projects = {}
    for name, word in (("alpha", "narwhal"), ("beta", "axolotl")):
        root = tmp_path / "code" / name
        write(root, "docs/adr/0001-queues.md", f"# Queues\n\nWe chose the {word} queue for jobs.\n")
        write(root, "src/main.py", "print('hi')\n")
        (root / ".git").mkdir()
        projects[name] = root
    return {"env": env, "home": home, "projects": projects, "tmp": tmp_path}


def terminal(env: dict, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([CLI, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def terminal_files(env: dict, cwd: Path, query: str) -> set[str]:
    out = terminal(env, cwd, "search", query, "--mode", "keyword", "--json").stdout
    return {hit["path"] for hit in json.loads(out)["hits"]}


async def _agent(env: dict, project: Path, calls: list[tuple[str, dict]]) -> list[dict]:
    """One Claude Code session: the server gets CLAUDE_PROJECT_DIR and the project as its cwd."""
    params = StdioServerParameters(command=CLI, args=[], env={**env, "CLAUDE_PROJECT_DIR": str(project)},
                                   cwd=str(project))
    answers = []
    with anyio.fail_after(TIMEOUT_S):
        async with stdio_client(params) as (read, send), ClientSession(read, send) as session:
            init = await session.initialize()
            answers.append({"instructions": init.instructions})
            for tool, arguments in calls:
                result = await session.call_tool(tool, arguments)
                error = {"error": "\n".join(c.text for c in result.content)}
                answers.append(error if result.is_error else result.structured_content)
    return answers


def agent(env: dict, project: Path, calls: list[tuple[str, dict]]) -> list[dict]:
    return anyio.run(_agent, env, project, calls)


def files(answer: dict) -> set[str]:
    return {hit["path"] for hit in answer["hits"]}


def search(query: str) -> tuple[str, dict]:
    return ("search_notes", {"query": query, "mode": "keyword", "limit": 10})


def test_a_project_agent_finds_personal_notes_and_its_docs_and_nothing_of_another_project(machine):
    env, home, alpha, beta = machine["env"], machine["home"], machine["projects"]["alpha"], machine["projects"]["beta"]
    beta_answers = agent(env, beta, [search("axolotl")])  # beta has had its own session first
    assert files(beta_answers[1]) == {str(beta / "docs/adr/0001-queues.md")}
    first, personal, own, other, demo = agent(env, alpha, [search("wombat"), search("wombat"), search("narwhal"),
                                                           search("axolotl"), search("backup nightly")])[1:]
    assert files(personal) == {str(home / "notes/bikes.md")}  # indexed from the terminal, found here
    assert files(own) == {str(alpha / "docs/adr/0001-queues.md")}  # the project's docs, never indexed by hand
    assert files(other) == set()  # beta's docs are beta's
    assert not any("example-vault" in p for p in files(demo))
    # the terminal typed in the project folder (no variable set) sees what the agent sees
    for query, answer in (("wombat", personal), ("narwhal", own), ("axolotl", other)):
        assert terminal_files(env, alpha / "src", query) == files(answer)
    # and a terminal outside any project sees the personal notes only
    assert terminal_files(env, home, "narwhal") == set()
    assert terminal_files(env, home, "wombat") == {str(home / "notes/bikes.md")}
    # one index for everything, in the default place
    assert (home / ".mcp-memory" / "vault-index.db").is_file()
    assert not (home / ".mcp-memory" / "projects").exists()


def test_an_init_vault_agent_finds_what_it_writes_and_nothing_else(machine):
    env, home = machine["env"], machine["home"]
    vault = machine["tmp"] / "team-vault"
    terminal(env, home, "init", str(vault))
    written = agent(env, vault, [
        ("note_write", {"op": "create", "path": "notes/pangolin.md", "body": "The pangolin rota starts Monday.\n",
                        "frontmatter": {"title": "Pangolin rota", "type": "log", "date": "2026-12-03"}}),
        search("pangolin"), search("wombat")])
    outcome, found, personal = written[1:]
    assert outcome.get("status") == "written", outcome
    assert any(p.endswith("notes/pangolin.md") for p in files(found))
    assert all(p.startswith(str(vault)) for p in files(found))
    assert files(personal) == set()  # a vault is a world of its own
    # from a project, the vault's note does not appear either
    alpha = machine["projects"]["alpha"]
    assert files(agent(env, alpha, [search("pangolin")])[1]) == set()


def test_the_graph_is_scoped_like_the_notes(machine):
    env, alpha, beta = machine["env"], machine["projects"]["alpha"], machine["projects"]["beta"]
    fact = {"entities": [{"name": "Axolotl queue", "entityType": "decision",
                          "source": str(beta / "docs/adr/0001-queues.md")}]}
    created = agent(env, beta, [("graph_create", fact), ("graph_search", {"query": "axolotl"})])
    assert [e["name"] for e in created[2]["entities"]] == ["Axolotl queue"]
    seen = agent(env, alpha, [("graph_search", {"query": "axolotl"}), ("recall", {"query": "axolotl queue"})])
    assert seen[1]["entities"] == []
    assert "Axolotl" not in json.dumps(seen[2])


def test_the_clone_itself_is_no_project(machine):
    """Started in a clone of vault-index, the server keeps to the personal notes (the tool's own
    docs are not the user's project)."""
    env = machine["env"]
    answers = agent(env, REPO, [search("wombat"), search("0012 projects collections")])
    assert files(answers[1]) == {str(machine["home"] / "notes/bikes.md")}
    assert not any(p.startswith(str(REPO)) for p in files(answers[2]))


def test_from_a_project_the_agent_writes_the_persons_own_notes_and_the_projects_docs(machine):
    """Writing is not only for init vaults: the same write service, the local person's default role."""
    env, home, alpha = machine["env"], machine["home"], machine["projects"]["alpha"]
    mine = str(home / "notes" / "trailer.md")
    answers = agent(env, alpha, [
        ("note_write", {"op": "create", "path": mine, "body": "The okapi trailer hitch is rated 750 kg.\n"}),
        ("note_write", {"op": "create", "path": "docs/okapi.md", "body": "Okapi service notes.\n"}),
        search("okapi"),
        ("note_write", {"op": "create", "path": str(machine["tmp"] / "elsewhere.md"), "body": "no\n"})])
    personal, project_doc, found, outside = answers[1:]
    assert personal["status"] == "written", personal
    assert project_doc["status"] == "written", project_doc
    assert (home / "notes" / "trailer.md").read_text().endswith("750 kg.\n")
    assert files(found) == {mine, str(alpha / "docs" / "okapi.md")}  # both searchable at once
    assert outside["status"] != "written" and not (machine["tmp"] / "elsewhere.md").exists()
