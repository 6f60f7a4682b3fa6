"""The `vault-index` CLI, run as a subprocess on a tmp index (VAULT_EMBED_MODEL=none: fast)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from helpers import CLI, REPO, cli_env, snapshot
from vault_index.surfaces.cli import build_parser

HIT_KEYS = {"path", "heading", "line_start", "line_end", "score", "snippet"}


def run(env, *args, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([CLI, *args], env=env, input=stdin, capture_output=True, text=True, timeout=60)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def subcommands() -> list[str]:
    parser = build_parser()
    (action,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return sorted(action.choices)


@pytest.fixture
def env(tmp_path):
    return cli_env(tmp_path / "cli" / "index.db")


def test_index_then_search_json_has_the_documented_shape(env, vault):
    before = snapshot(vault)
    out = run(env, "index", str(vault), "--json")
    report = json.loads(out.stdout)
    assert report["indexed"] == 4 and report["vector_used"] is False
    result = json.loads(run(env, "search", "brake pads groove", "--json").stdout)
    assert {"query", "mode", "vector_used", "reranked", "hits"} <= result.keys()
    # the mode that ran: no embedder and no reranker here, so keyword only (never "hybrid+rerank")
    assert result["query"] == "brake pads groove" and result["mode"] == "keyword"
    assert result["vector_used"] is False and result["reranked"] is False
    assert result["hits"]
    for hit in result["hits"]:
        assert HIT_KEYS <= hit.keys()
        assert hit["path"].startswith("/") and hit["path"].startswith(str(vault))
        assert isinstance(hit["line_start"], int) and hit["line_start"] <= hit["line_end"]
        assert isinstance(hit["score"], float)
    top = result["hits"][0]
    assert top["path"] == str(vault / "bike.md") and top["heading"] == "Bike maintenance > Brakes"
    lines = (vault / "bike.md").read_text().split("\n")
    assert "brake pads" in "\n".join(lines[top["line_start"] - 1 : top["line_end"]])
    assert snapshot(vault) == before


def test_search_plain_text_and_explain(env, vault):
    run(env, "index", str(vault), "-s")
    out = run(env, "search", "degreaser", "--mode", "keyword", "-n", "1").stdout
    assert re.match(rf"\s*1\. {re.escape(str(vault / 'bike.md'))}:\d+-\d+", out)
    explained = json.loads(run(env, "search", "degreaser", "--mode", "keyword", "--explain", "--json").stdout)
    assert explained["hits"][0]["explain"]["keyword"]["rank"] == 1


def test_search_and_recall_take_sub_query_flags(env, vault, tmp_path):
    run(env, "index", str(vault), "-s")
    question = "awful noise when I stop"
    plain = json.loads(run(env, "search", question, "--json", "--explain").stdout)
    assert not plain["hits"] or plain["hits"][0]["heading"] != "Bike maintenance > Brakes"  # keyword only here
    helped = json.loads(run(env, "search", question, "--json", "--explain", "--keywords", "brake pads groove",
                            "--paraphrase", "squeaky brakes", "--paraphrase", "bike stopping noise",
                            "--hypothetical", "Replace the pads when worn.").stdout)
    top = helped["hits"][0]
    assert top["heading"] == "Bike maintenance > Brakes" and top["explain"]["found_by"]["keywords 1"] == 1
    found = json.loads(run(env, "recall", question, "--json", "--keywords", "brake pads groove",
                           "--memory-file", str(tmp_path / "memory.jsonl")).stdout)
    assert found["notes"][0]["heading"] == "Bike maintenance > Brakes"
    too_many = run(env, "search", question, *["--paraphrase", "p"] * 4, check=False)
    assert too_many.returncode != 0 and "at most 3 paraphrases" in too_many.stderr
    batch = run(env, "search", "-", "--keywords", "brake", stdin="brakes\n", check=False)
    assert batch.returncode != 0 and "not with '-'" in batch.stderr


def test_search_dash_reads_one_query_per_stdin_line_and_prints_json_lines(env, vault):
    run(env, "index", str(vault), "-s")
    queries = ["brake pads", "sourdough starter", "capacitive probe"]
    out = run(env, "search", "-", stdin="\n".join(queries) + "\n\n").stdout
    lines = out.strip().split("\n")
    assert len(lines) == 3
    results = [json.loads(line) for line in lines]
    assert [r["query"] for r in results] == queries
    assert [r["hits"][0]["path"].rsplit("/", 1)[1] for r in results] == ["bike.md", "sourdough.md", "garden.md"]


def test_search_gives_one_hit_per_note_with_its_other_sections_and_chunks_on_request(env, tmp_path):
    """Issue 39 item 7: the terminal's default is the agent's (one hit per note, `also` naming its
    other matched sections, in JSON and as a short line); `--chunks` gives chunks."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "bike.md").write_text("# Bike\n\n## Brakes\n\nThe brake pads wear.\n\n## Cables\n\n"
                                   "Brake cables stretch.\n\n## Levers\n\nBrake levers loosen.\n")
    (notes / "kiln.md").write_text("# Kiln\n\nThe kiln has no brake.\n")
    run(env, "index", str(notes), "-s")
    found = json.loads(run(env, "search", "brake", "--json").stdout)
    assert sorted(h["path"] for h in found["hits"]) == [str(notes / "bike.md"), str(notes / "kiln.md")]
    bike = next(h for h in found["hits"] if h["path"].endswith("bike.md"))
    assert bike["more"] == 2 and [set(s) for s in bike["also"]] == [{"heading", "line_start", "line_end"}] * 2
    assert {s["heading"] for s in bike["also"]} | {bike["heading"]} == {"Bike > Brakes", "Bike > Cables",
                                                                          "Bike > Levers"}
    text = run(env, "search", "brake").stdout
    assert re.search(r"^    also: Bike > \w+ \d+-\d+; Bike > \w+ \d+-\d+$", text, re.M), text
    chunks = json.loads(run(env, "search", "brake", "--chunks", "--json").stdout)
    assert [h["path"] for h in chunks["hits"]].count(str(notes / "bike.md")) == 3
    assert all("also" not in h and "more" not in h for h in chunks["hits"])
    assert "also:" not in run(env, "search", "brake", "--chunks").stdout


def test_get_prints_a_note_and_refuses_paths_outside_the_sources(env, vault, tmp_path):
    run(env, "index", str(vault), "-s")
    assert run(env, "get", "bike.md").stdout == (vault / "bike.md").read_text()
    window = json.loads(run(env, "get", "bike.md", "--start", "3", "--lines", "1", "--json").stdout)
    assert window["content"] == (vault / "bike.md").read_text().split("\n")[2]
    outside = tmp_path / "outside.md"
    outside.write_text("private\n")
    for path in ("../outside.md", str(outside), "secrets/keys.md"):
        proc = run(env, "get", path, check=False)
        assert proc.returncode == 4, path
        assert proc.stdout == ""
        assert proc.stderr.startswith("vault-index: ") and ("outside" in proc.stderr or "never served" in proc.stderr)
        assert "Traceback" not in proc.stderr


def test_usage_and_not_found_errors_have_their_exit_codes(env, vault, tmp_path):
    run(env, "index", str(vault), "-s")
    empty = run(env, "search", "   ", check=False)
    assert empty.returncode == 2 and "empty" in empty.stderr
    bad_limit = run(env, "search", "x", "-n", "0", check=False)
    assert bad_limit.returncode == 2 and "limit" in bad_limit.stderr
    missing = run(env, "remove", str(tmp_path / "never-added"), check=False)
    assert missing.returncode == 3 and "not a registered source" in missing.stderr
    gone = run(env, "index", str(tmp_path / "nope"), check=False)
    assert gone.returncode == 3 and "does not exist" in gone.stderr


def test_sources_remove_and_status(env, vault):
    run(env, "index", str(vault), "-s")
    sources = json.loads(run(env, "sources", "--json").stdout)
    assert sources == [{"name": vault.name, "path": str(vault), "files": 4, "chunks": sources[0]["chunks"],
                        "vectors": 0}]
    assert sources[0]["chunks"] > 4
    status = json.loads(run(env, "status", "--json").stdout)
    assert status["files"] == 4 and status["db"] == env["VAULT_INDEX_DB"] and status["vectors"] == 0
    assert json.loads(run(env, "remove", str(vault), "--json").stdout) == {"removed_files": 4}
    assert json.loads(run(env, "sources", "--json").stdout) == []
    assert json.loads(run(env, "search", "brake", "--json").stdout)["hits"] == []


def test_status_says_a_model_folder_that_does_not_exist_is_why_no_vectors_are_used(env, vault, tmp_path):
    """Walkthrough C: with VAULT_EMBED_MODEL a missing folder's path, status said chunks were waiting
    for vectors and searches hybrid, and never that the model cannot load."""
    run(env, "index", str(vault), "-s")
    missing = tmp_path / "no" / "such" / "folder"
    vectors = next(line for line in run({**env, "VAULT_EMBED_MODEL": str(missing)}, "status").stdout.split("\n")
                   if line.startswith("vectors"))
    assert f"not used: model folder {missing} does not exist" in vectors and "waiting" not in vectors


def test_help_lists_every_command(env):
    proc = run(env, "--help")  # the installed entry point; each command's help below runs in process
    assert proc.stdout.startswith("usage: vault-index")
    for name in subcommands():
        assert name in proc.stdout


def _help(capsys, *args: str) -> str:
    from vault_index.surfaces import cli

    with pytest.raises(SystemExit) as done:
        cli.main([*args, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", subcommands())
def test_help_works_for_every_command(capsys, command):
    assert _help(capsys, command).startswith(f"usage: vault-index {command}")


def test_every_command_is_documented_in_docs_cli_md():
    doc = REPO / "docs" / "cli.md"
    assert doc.is_file(), "docs/cli.md is missing"
    text = doc.read_text()
    undocumented = [
        name for name in subcommands() if not re.search(rf"(`|vault-index\s+){re.escape(name)}\b", text)
    ]
    assert undocumented == [], f"commands missing from docs/cli.md: {undocumented}"


def test_version(env):
    from vault_index import __version__

    assert run(env, "--version").stdout.strip() == f"vault-index {__version__}"


def test_every_mcp_tool_and_its_parameters_are_documented(tmp_path):
    """A tool or parameter the server offers but the docs never name fails here."""
    import anyio
    from vault_index.config import Settings
    from vault_index.engine.embedding.models import Models
    from vault_index.services.app import App
    from vault_index.surfaces.server import build_server

    settings = Settings(tmp_path / "i.db", "none", "none", False, tmp_path / "m", "auto")
    app = App.open(settings, models=Models.fixed(None))
    try:
        tools = anyio.run(build_server(app, tmp_path / "memory.jsonl").list_tools)
    finally:
        app.close()
    text = (REPO / "docs" / "mcp.md").read_text()
    assert {"index_paths", "search_notes", "get_note", "list_sources", "remove_source", "graph_create",
            "graph_search", "graph_open", "recall"} <= {t.name for t in tools}
    missing = [t.name for t in tools if f"`{t.name}`" not in text]
    missing += [f"{t.name}.{p}" for t in tools for p in t.input_schema.get("properties", {}) if f"`{p}`" not in text]
    assert missing == [], f"undocumented in docs/mcp.md: {missing}"


REFERENCE_JSONL = (
    '{"type":"entity","name":"Garden sensor","entityType":"project",'
    '"observations":["Battery lasts nine months on two AA cells"]}\n'
    '{"type":"entity","name":"Mira","entityType":"person","observations":["Solders the boards"]}\n'
    '{"type":"relation","from":"Mira","to":"Garden sensor","relationType":"built"}\n'
)


def graph_actions() -> list[str]:
    parser = build_parser()
    (action,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    (group,) = [a for a in action.choices["graph"]._actions if a.__class__.__name__ == "_SubParsersAction"]
    return sorted(group.choices)


def test_graph_import_show_search_open_and_check(env, tmp_path, vault):
    memfile = tmp_path / "state" / "memory.jsonl"
    env = {**env, "VAULT_MEMORY_FILE": str(memfile)}
    reference = tmp_path / "memory-server.jsonl"
    reference.write_text(REFERENCE_JSONL)
    imported = json.loads(run(env, "graph", "import", str(reference), "--source", str(vault / "garden.md"),
                              "--json").stdout)
    assert imported["added"] == {"entity": 2, "observation": 2, "relation": 1}
    assert imported["memory_file"] == str(memfile)
    assert "0 entities" in run(env, "graph", "import", str(reference)).stdout.split(";")[0]  # re-import: all known

    shown = run(env, "graph", "show").stdout
    assert shown.startswith("# Memory graph")
    assert "## Garden sensor (project)" in shown and "## Mira (person)" in shown
    assert f"- Battery lasts nine months on two AA cells  ({vault / 'garden.md'})" in shown
    assert "- Mira -[built]-> Garden sensor" in shown
    whole = json.loads(run(env, "graph", "show", "--json").stdout)
    assert [e["name"] for e in whole["entities"]] == ["Garden sensor", "Mira"]

    found = json.loads(run(env, "graph", "search", "battery cells", "--json").stdout)
    assert found["query"] == "battery cells" and [e["name"] for e in found["entities"]] == ["Garden sensor"]
    assert found["entities"][0]["observations"][0]["source"] == str(vault / "garden.md")

    opened = json.loads(run(env, "graph", "open", "MIRA", "nobody", "--json").stdout)
    assert [e["name"] for e in opened["entities"]] == ["Mira"] and opened["missing"] == ["nobody"]
    assert run(env, "graph", "open", "nobody", check=False).returncode == 3

    assert json.loads(run(env, "graph", "check", "--json").stdout) == {"memory_file": str(memfile), "problems": []}
    (vault / "garden.md").unlink()
    broken = run(env, "graph", "check", check=False)
    assert broken.returncode == 1 and "garden.md is not an existing file" in broken.stdout


def test_memory_file_option_beats_the_env_before_or_after_the_command(env, tmp_path, vault):
    env = {**env, "VAULT_MEMORY_FILE": str(tmp_path / "env.jsonl")}
    reference = tmp_path / "ref.jsonl"
    reference.write_text(REFERENCE_JSONL)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    run(env, "--memory-file", str(first), "graph", "import", str(reference), "-s")
    run(env, "graph", "import", str(reference), "--memory-file", str(second), "-s")
    assert first.is_file() and second.is_file() and not (tmp_path / "env.jsonl").exists()
    assert build_parser().parse_args(["--memory-file", "X", "serve"]).memory_file == "X"
    assert build_parser().parse_args(["serve", "--memory-file", "Y"]).memory_file == "Y"
    assert build_parser().parse_args(["--memory-file", "X"]).command is None  # main() serves


def test_graph_errors_name_the_line_and_exit_non_zero(env, tmp_path):
    memfile = tmp_path / "memory.jsonl"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(REFERENCE_JSONL + '{"type":"relation","from":"Mira","to":"Ghost","relationType":"x"}\n')
    proc = run(env, "--memory-file", str(memfile), "graph", "import", str(bad), check=False)
    assert proc.returncode == 2 and f"{bad}:4:" in proc.stderr and "'Ghost'" in proc.stderr
    assert "Traceback" not in proc.stderr and not memfile.exists()
    memfile.write_text("{nope\n")
    proc = run(env, "--memory-file", str(memfile), "graph", "search", "x", check=False)
    assert proc.returncode == 1 and f"{memfile}:1: not valid JSON" in proc.stderr
    proc = run(env, "--memory-file", str(memfile), "graph", "check", "--json", check=False)
    assert proc.returncode == 1 and json.loads(proc.stdout)["problems"][0].startswith(f"{memfile}:1:")


def test_recall_json_has_notes_lessons_and_graph(env, tmp_path, vault):
    (vault / "docs").mkdir()
    (vault / "docs" / "lessons.md").write_text("# Lessons\n\n## L-0001: Oil the bike chain after rain\n\n"
                                                "- lesson: Oil the bike chain after rain\n")
    memfile = tmp_path / "memory.jsonl"
    reference = tmp_path / "ref.jsonl"
    reference.write_text(
        '{"type":"entity","name":"Bike chain","entityType":"part","observations":["Rusts after rain"]}\n')
    run(env, "index", str(vault), "-s")
    run(env, "--memory-file", str(memfile), "graph", "import", str(reference), "--source", str(vault / "bike.md"))
    out = run({**env, "CLAUDE_PROJECT_DIR": str(vault)}, "recall", "bike chain rain", "-n", "2", "--json",
              "--memory-file", str(memfile)).stdout
    found = json.loads(out)
    assert set(found) == {"query", "confidence", "relevant", "notes", "lessons", "graph", "notices"}
    assert found["lessons"][0]["path"] == str(vault / "docs" / "lessons.md")
    assert found["lessons"][0]["display"] == "docs/lessons.md"
    assert found["notes"][0]["path"] == str(vault / "bike.md") and len(found["notes"]) <= 2
    assert found["graph"][0]["name"] == "Bike chain" and found["graph"][0]["source"] == str(vault / "bike.md")
    text = run({**env, "CLAUDE_PROJECT_DIR": str(vault)}, "recall", "bike chain rain",
               "--memory-file", str(memfile)).stdout
    assert "# Notes" in text and "# Lessons" in text and "- docs/lessons.md:" in text and "## Bike chain" in text


@pytest.mark.parametrize("action", graph_actions())
def test_help_works_for_every_graph_action(capsys, action):
    assert _help(capsys, "graph", action).startswith(f"usage: vault-index graph {action}")


def test_every_graph_action_is_documented_in_docs_cli_md():
    text = (REPO / "docs" / "cli.md").read_text()
    assert graph_actions() == ["check", "import", "open", "search", "show"]
    assert [a for a in graph_actions() if f"graph {a}" not in text] == []
    assert "--memory-file" in text and "VAULT_MEMORY_FILE" in text


def test_a_keyword_search_at_the_terminal_loads_no_output_models_and_no_graph(env, vault):
    """pydantic's output models (surfaces/shapes.py) and the memory graph's jsonschema were loaded by
    every CLI search, for one sentence: about 180 ms of a 470 ms keyword search."""
    run(env, "index", str(vault), "-s")
    code = ("import sys; from vault_index.surfaces import cli; code = cli.main(sys.argv[1:]); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'jsonschema', 'mcp'}), code)")
    done = subprocess.run([sys.executable, "-c", code, "search", "derailleur", "--mode", "keyword", "--json"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    *hits, loaded = done.stdout.strip().splitlines()
    assert json.loads("\n".join(hits))["hits"] and loaded == "[] 0", done.stdout[-300:]
