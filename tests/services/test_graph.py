"""The memory graph store: real JSONL files, real locks, real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import write
from vault_index.engine.files import doc_locks, fileio
from vault_index.services.graph import graph as memory
from vault_index.services.graph.graph import (
    DanglingRelationError,
    GraphBusyError,
    GraphFileError,
    GraphInputError,
    SourceMissingError,
)

# The reference memory server's format: entities carry their observations inline.
REFERENCE = "\n".join(json.dumps(line) for line in [
    {"type": "entity", "name": "Garden sensor", "entityType": "project",
     "observations": ["Battery lasts nine months on two AA cells", "Reports soil moisture every ten minutes"]},
    {"type": "entity", "name": "Mira Okafor", "entityType": "person",
     "observations": ["Soldered the first sensor board", "Prefers capacitive probes"]},
    {"type": "entity", "name": "LoRa gateway", "entityType": "device", "observations": []},
    {"type": "relation", "from": "Mira Okafor", "to": "Garden sensor", "relationType": "built"},
    {"type": "relation", "from": "Garden sensor", "to": "LoRa gateway", "relationType": "reports_to"},
]) + "\n"


@pytest.fixture
def notes(tmp_path) -> Path:
    root = tmp_path / "notes"
    write(root, "garden.md", "# Garden sensor\n\nBattery notes.\n")
    write(root, "people.md", "# People\n\nMira.\n")
    return root


@pytest.fixture
def memfile(tmp_path) -> Path:
    return tmp_path / "state" / "memory.jsonl"


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def seed(memfile: Path, notes: Path) -> dict:
    return memory.create(
        memfile,
        entities=[{"name": "Garden sensor", "entityType": "project", "source": str(notes / "garden.md")},
                  {"name": "Mira Okafor", "entityType": "person", "source": str(notes / "people.md")}],
        observations=[{"entity": "garden SENSOR", "text": "Battery lasts nine months on two AA cells",
                       "source": str(notes / "garden.md")}],
        relations=[{"from": "Mira Okafor", "to": "Garden sensor", "relationType": "built",
                    "source": str(notes / "people.md")}],
    )


def test_create_writes_one_self_describing_fact_per_line(memfile, notes):
    assert not memfile.parent.exists()
    summary = seed(memfile, notes)
    assert summary["added"] == {"entity": 2, "observation": 1, "relation": 1} and summary["skipped"] == []
    facts = lines(memfile)
    assert [f["type"] for f in facts] == ["entity", "entity", "observation", "relation"]
    for fact in facts:
        assert Path(fact["source"]).is_absolute() and Path(fact["source"]).is_file()
        assert fact["created"].endswith("Z") and len(fact["created"]) == 20
    # the observation is filed under the entity's stored spelling, not the caller's
    assert facts[2]["entity"] == "Garden sensor"
    assert facts[3] == {**facts[3], "from": "Mira Okafor", "to": "Garden sensor", "relationType": "built"}
    assert memory.check_graph(memfile) == []


def test_identical_facts_are_skipped_and_names_are_case_insensitive(memfile, notes):
    seed(memfile, notes)
    before = memfile.read_bytes()
    again = memory.create(
        memfile,
        entities=[{"name": "GARDEN SENSOR", "entityType": "thing", "source": str(notes / "people.md")}],
        observations=[{"entity": "Garden sensor", "text": "Battery lasts nine months on two AA cells",
                       "source": str(notes / "people.md")}],
        relations=[{"from": "mira okafor", "to": "garden sensor", "relationType": "BUILT",
                    "source": str(notes / "garden.md")}],
    )
    assert again["added"] == {"entity": 0, "observation": 0, "relation": 0}
    assert [s["kind"] for s in again["skipped"]] == ["entity", "observation", "relation"]
    assert memfile.read_bytes() == before  # nothing new: the file is not even rewritten
    assert len(memory.load(memfile).entities) == 2


def test_relative_sources_resolve_against_the_base_folder(memfile, notes):
    memory.create(memfile, entities=[{"name": "X", "entityType": "t", "source": "garden.md"}], base=notes)
    assert lines(memfile)[0]["source"] == (notes / "garden.md").resolve().as_posix()


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"entities": [{"name": "A", "entityType": "t", "source": "nowhere.md"}]}, SourceMissingError,
         "entities[0]: source 'nowhere.md' is not an existing file"),
        ({"entities": [{"name": "A", "entityType": "t", "source": "."}]}, SourceMissingError, "not an existing file"),
        ({"relations": [{"from": "Garden sensor", "to": "Nobody", "relationType": "knows", "source": "garden.md"}]},
         DanglingRelationError, "relations[0]: no entity named 'Nobody'"),
        ({"observations": [{"entity": "Ghost", "text": "boo", "source": "garden.md"}]}, GraphInputError,
         "no entity named 'Ghost'"),
        ({"entities": [{"name": "x" * 201, "entityType": "t", "source": "garden.md"}]}, GraphInputError,
         "the limit is 200"),
        ({"entities": [{"name": "two\nlines", "entityType": "t", "source": "garden.md"}]}, GraphInputError,
         "line break"),
        ({"entities": [{"name": "  ", "entityType": "t", "source": "garden.md"}]}, GraphInputError,
         "'name' is missing or empty"),
        ({"observations": [{"entity": "Garden sensor", "text": "y" * 2001, "source": "garden.md"}]},
         GraphInputError, "the limit is 2000"),
    ],
)
def test_bad_facts_are_refused_and_the_file_is_unchanged(memfile, notes, kwargs, error, words):
    seed(memfile, notes)
    before = memfile.read_bytes()
    # a good fact in the same call must not be written either: all or nothing
    good = [{"name": "Compost", "entityType": "project", "source": "garden.md"}]
    kwargs = {**kwargs, "entities": kwargs.get("entities", []) + good}
    with pytest.raises(error) as caught:
        memory.create(memfile, base=notes, **kwargs)
    assert words in str(caught.value)
    assert memfile.read_bytes() == before
    assert caught.value.exit_code in (2, 3)


def test_a_write_that_fails_midway_leaves_the_file_byte_identical(memfile, notes, monkeypatch):
    seed(memfile, notes)
    before = memfile.read_bytes()

    def broken_replace(src, dst, **dir_fds):
        raise OSError("disk full")

    monkeypatch.setattr(fileio.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        memory.create(memfile, entities=[{"name": "Compost", "entityType": "p", "source": str(notes / "garden.md")}])
    assert memfile.read_bytes() == before
    # no temp file left; the lock file stays (kept on purpose: see doc_locks.DocumentLock)
    assert sorted(p.name for p in memfile.parent.iterdir()) == [".memory.jsonl.lock", "memory.jsonl"]


def test_a_held_lock_makes_a_writer_wait_then_give_up(memfile, notes, monkeypatch):
    seed(memfile, notes)
    before = memfile.read_bytes()
    monkeypatch.setattr(memory, "LOCK_WAIT_S", 0.2)
    folder = os.open(memfile.parent, os.O_RDONLY)
    with doc_locks.DocumentLock(folder, ".memory.jsonl", "another writer"):
        with pytest.raises(GraphBusyError, match="busy") as caught:
            memory.create(memfile, entities=[{"name": "C", "entityType": "p", "source": str(notes / "garden.md")}])
    os.close(folder)
    assert caught.value.exit_code == 6 and "another writer" in str(caught.value)
    assert memfile.read_bytes() == before


WRITER = """
import sys
from vault_index.services.graph import graph
memfile, source, worker = sys.argv[1], sys.argv[2], sys.argv[3]
for i in range(15):
    graph.create(memfile, entities=[{"name": f"w{worker}-{i}", "entityType": "t", "source": source}])
"""


def test_concurrent_writer_processes_lose_no_fact(memfile, notes):
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(memfile), str(notes / "garden.md"), str(w)])
             for w in range(4)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    names = {f["name"] for f in lines(memfile)}
    assert names == {f"w{w}-{i}" for w in range(4) for i in range(15)}
    assert memory.check_graph(memfile) == []


def test_missing_file_is_an_empty_graph_and_reads_never_write(memfile, notes):
    assert memory.load(memfile).entities == {}
    assert memory.search(memfile, "garden") == []
    assert memory.open_entities(memfile, ["x"]) == {"entities": [], "missing": ["x"]}
    assert memory.check_graph(memfile) == []
    assert not memfile.parent.exists()
    seed(memfile, notes)
    stat = memfile.stat()
    memory.search(memfile, "garden")
    memory.open_entities(memfile, ["Garden sensor"])
    memory.check_graph(memfile)
    assert memfile.stat().st_mtime_ns == stat.st_mtime_ns and memfile.stat().st_ino == stat.st_ino


def test_import_reference_jsonl_gives_every_fact_the_source(memfile, notes, tmp_path):
    reference = write(tmp_path, "export/memory.jsonl", REFERENCE)
    summary = memory.import_reference(memfile, reference)
    assert summary["added"] == {"entity": 3, "observation": 4, "relation": 2}
    assert {f["source"] for f in lines(memfile)} == {reference.resolve().as_posix()}
    sourced = memory.import_reference(memfile, reference, source=notes / "garden.md")
    assert sourced["added"] == {"entity": 0, "observation": 0, "relation": 0}  # already there
    opened = memory.open_entities(memfile, ["garden sensor"])["entities"][0]
    assert [o["text"] for o in opened["observations"]] == [
        "Battery lasts nine months on two AA cells", "Reports soil moisture every ten minutes"]
    assert {(r["from"], r["relationType"], r["to"]) for r in opened["relations"]} == {
        ("Mira Okafor", "built", "Garden sensor"), ("Garden sensor", "reports_to", "LoRa gateway")}


@pytest.mark.parametrize(
    ("bad_line", "error", "words"),
    [
        ('{"type": "entity", "name": "Broken"', GraphFileError, "not valid JSON"),
        ('{"type": "relation", "from": "Mira Okafor", "to": "Nobody", "relationType": "knows"}',
         DanglingRelationError, "'Nobody'"),
        ('{"type": "entity", "entityType": "person", "observations": []}', GraphInputError, "'name' is missing"),
        ('{"type": "entity", "name": "Z", "entityType": "p", "observations": "x"}', GraphFileError, "must be a list"),
        ('["a list"]', GraphFileError, "type 'entity' or 'relation'"),
        ("[" * 100_000 + "]" * 100_000, GraphFileError, "nested too deeply"),
    ],
)
def test_import_names_the_bad_line_and_writes_nothing(memfile, notes, tmp_path, bad_line, error, words):
    seed(memfile, notes)
    before = memfile.read_bytes()
    reference = write(tmp_path, "bad.jsonl", REFERENCE + "\n" + bad_line + "\n")
    with pytest.raises(error) as caught:
        memory.import_reference(memfile, reference)
    message = str(caught.value)
    assert f"{reference.resolve()}:7:" in message and words in message  # line 6 is blank
    assert memfile.read_bytes() == before


def test_import_of_a_missing_file_says_so(memfile, tmp_path):
    with pytest.raises(SourceMissingError, match="not a file"):
        memory.import_reference(memfile, tmp_path / "nope.jsonl")


def test_search_ranks_by_name_then_observations_and_carries_sources(memfile, notes, tmp_path):
    memory.import_reference(memfile, write(tmp_path, "ref.jsonl", REFERENCE), source=notes / "garden.md")
    found = memory.search(memfile, "garden sensor battery")
    assert found[0]["name"] == "Garden sensor"
    assert found[0]["source"] == (notes / "garden.md").resolve().as_posix()
    assert all(o["source"] for o in found[0]["observations"])
    assert found == sorted(found, key=lambda e: -e["score"])
    by_observation = memory.search(memfile, "capacitive probes")
    assert [e["name"] for e in by_observation] == ["Mira Okafor"]
    by_type = memory.search(memfile, "device")
    assert by_type[0]["name"] == "LoRa gateway"
    by_relation = memory.search(memfile, "reports_to")
    assert {e["name"] for e in by_relation} == {"Garden sensor", "LoRa gateway"}
    exact = memory.search(memfile, "LoRa gateway", limit=1)
    assert [e["name"] for e in exact] == ["LoRa gateway"]
    assert memory.search(memfile, "the of and") == []  # stopwords only: nothing to match
    assert memory.search(memfile, "zebra") == []
    with pytest.raises(GraphInputError):
        memory.search(memfile, "  ")
    with pytest.raises(GraphInputError):
        memory.search(memfile, "garden", limit=0)


def test_a_malformed_memory_file_is_refused_with_its_line(memfile, notes):
    seed(memfile, notes)
    with memfile.open("a") as handle:
        handle.write('{"type":"entity","name":"Half"\n')
    before = memfile.read_bytes()
    with pytest.raises(GraphFileError, match=r"memory\.jsonl:5: not valid JSON"):
        memory.search(memfile, "garden")
    with pytest.raises(GraphFileError, match=":5:"):
        memory.create(memfile, entities=[{"name": "C", "entityType": "p", "source": str(notes / "garden.md")}])
    assert memfile.read_bytes() == before  # never rewritten around a bad line


def test_check_graph_lists_every_problem(memfile, notes, tmp_path):
    seed(memfile, notes)
    doomed = write(tmp_path, "doomed.md", "# soon gone\n")
    memory.create(memfile, entities=[{"name": "Doomed", "entityType": "t", "source": str(doomed)}])
    doomed.unlink()
    with memfile.open("a", encoding="utf-8") as handle:
        handle.write("not json\n")
        handle.write(json.dumps({"type": "relation", "from": "Garden sensor", "to": "Nobody",
                                 "relationType": "x", "source": str(notes / "garden.md"), "created": "t"}) + "\n")
        handle.write(json.dumps({"type": "observation", "entity": "Garden sensor", "source": str(notes / "garden.md"),
                                 "created": "t"}) + "\n")
        handle.write(json.dumps({"type": "entity", "name": "garden SENSOR", "entityType": "x",
                                 "source": str(notes / "garden.md"), "created": "t"}) + "\n")
        handle.write(json.dumps({"type": "gadget"}) + "\n")
    problems = memory.check_graph(memfile)
    text = "\n".join(problems)
    assert len(problems) == 6, text
    assert f"{memfile}:5: source {doomed.resolve().as_posix()} is not an existing file" in text
    assert f"{memfile}:6: not valid JSON" in text
    assert f"{memfile}:7: relation" in text and "unknown entity 'Nobody'" in text
    assert f"{memfile}:8: observation without a 'text'" in text
    assert f"{memfile}:9: entity 'garden SENSOR' appears twice" in text
    assert f"{memfile}:10: unknown type 'gadget'" in text


def test_check_graph_reports_an_unreadable_file(tmp_path):
    binary = tmp_path / "memory.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert "not UTF-8" in memory.check_graph(binary)[0]
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    assert "not a regular file" in memory.check_graph(folder)[0]


def test_unicode_line_separator_inside_a_fact_is_text_not_a_break(memfile, notes):
    text = "first\u2028second, caf\u00e9"
    memory.create(memfile, entities=[{"name": "U", "entityType": "t", "source": str(notes / "garden.md")}],
                  observations=[{"entity": "U", "text": text, "source": str(notes / "garden.md")}])
    assert memory.open_entities(memfile, ["u"])["entities"][0]["observations"][0]["text"] == text
    assert memory.check_graph(memfile) == []


def test_a_symlinked_memory_file_stays_a_link(memfile, notes, tmp_path):
    real = tmp_path / "dotfiles" / "memory.jsonl"
    real.parent.mkdir()
    real.write_text("")
    memfile.parent.mkdir(parents=True)
    os.symlink(real, memfile)
    seed(memfile, notes)
    assert memfile.is_symlink() and len(lines(real)) == 4


def test_sources_outside_the_roots_are_refused_before_any_existence_check(memfile, notes, tmp_path):
    project = notes.parent
    outside = write(tmp_path, "elsewhere/real.md", "# real\n")
    link = notes / "link.md"
    os.symlink(outside, link)
    messages = []
    for source in ("../../../../../../../../etc/shadow", "../../../../../../../../etc/no-such-file",
                   str(outside), str(outside.with_name("missing.md")), "link.md"):
        with pytest.raises(memory.SourceOutsideError) as caught:
            memory.create(memfile, entities=[{"name": "A", "entityType": "t", "source": source}],
                          base=notes, roots=[notes])
        assert caught.value.exit_code == 4
        messages.append(str(caught.value).replace(repr(source), "SOURCE"))
    assert len(set(messages)) == 1, messages  # the same words whether the file exists or not
    assert "is not inside the project folder or a registered source" in messages[0]
    assert not memfile.exists()
    # inside a root: relative or absolute, through a second root too
    memory.create(memfile, entities=[{"name": "G", "entityType": "t", "source": "garden.md"},
                                     {"name": "R", "entityType": "t", "source": str(outside)}],
                  base=notes, roots=[notes, outside.parent])
    with pytest.raises(SourceMissingError, match="not an existing file"):
        memory.create(memfile, entities=[{"name": "M", "entityType": "t", "source": "gone.md"}],
                      base=notes, roots=[project])


@pytest.mark.parametrize("part", [".hidden", ".git", "secrets", "node_modules"])
def test_hidden_and_secrets_sources_are_refused_inside_a_root_and_without_roots(memfile, notes, part):
    secret = write(notes, f"{part}/key.md", "# key\n")
    for roots in ([notes], [notes.parent], None):
        with pytest.raises(memory.SourceOutsideError, match="hidden or secrets folder"):
            memory.create(memfile, entities=[{"name": "K", "entityType": "t", "source": str(secret)}],
                          base=notes, roots=roots)
    assert not memfile.exists()
    # a root that itself lies under a hidden folder is fine: only the parts below the root count
    hidden_root = write(notes, ".vault/ok.md", "# ok\n").parent
    memory.create(memfile, entities=[{"name": "Ok", "entityType": "t", "source": "ok.md"}],
                  base=hidden_root, roots=[hidden_root])
    assert lines(memfile)[0]["source"] == (hidden_root / "ok.md").resolve().as_posix()


def test_check_graph_reports_a_source_in_a_hidden_or_secrets_folder(memfile, notes):
    seed(memfile, notes)
    secret = write(notes, "secrets/token.md", "# token\n")
    with memfile.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"type": "entity", "name": "Token", "entityType": "x", "source": str(secret),
                                 "created": "t"}) + "\n")
    problems = memory.check_graph(memfile, [notes])
    assert problems == [f"{memfile}:5: source {secret} lies in a hidden or secrets folder; "
                        "point the fact at a note outside it or remove the fact"]


def test_a_project_inside_a_dot_folder_is_not_flagged_anywhere(memfile, tmp_path):
    """A Claude Code worktree lives under .claude/worktrees/: its notes are ordinary sources."""
    project = tmp_path / "repo" / ".claude" / "worktrees" / "x"
    note = write(project, "docs/adr/0001-use-x.md", "# 0001: Use X\n")
    memory.create(memfile, entities=[{"name": "ADR 0001: Use X", "entityType": "decision", "source": str(note)}],
                  base=project)  # a person at a terminal: no roots
    memory.create(memfile, entities=[{"name": "Other", "entityType": "t", "source": "docs/adr/0001-use-x.md"}],
                  base=project, roots=[project])  # the agent's tools
    assert memory.check_graph(memfile, [project]) == []
    assert memory.check_graph(memfile) == []
    with pytest.raises(memory.SourceOutsideError, match="hidden or secrets"):  # below the project: refused
        memory.create(memfile, entities=[{"name": "S", "entityType": "t",
                                          "source": str(write(project, ".private/s.md", "# s\n"))}], base=project)


def test_a_source_name_too_long_for_the_file_system_is_a_clear_error(memfile, notes):
    with pytest.raises(memory.SourceMissingError, match="not an existing file"):
        memory.create(memfile, entities=[{"name": "L", "entityType": "t", "source": "x" * 300 + ".md"}],
                      base=notes)


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85", "\x9b"], ids=lambda c: f"U+{ord(c):04X}")
def test_one_line_fields_refuse_unicode_line_separators(memfile, notes, char):
    with pytest.raises(GraphInputError, match="line break or control character"):
        memory.create(memfile, entities=[{"name": f"A{char}B", "entityType": "t", "source": "garden.md"}],
                      base=notes)
    assert not memfile.exists()


def test_the_bare_python_skip_rule_matches_the_engine_rule(tmp_path):
    # scripts/adr.py links records on a python3 without pathspec: the engine's rule must import there
    from vault_index.engine.files.sources import is_skipped_part

    parts = [".x", "secrets", ".git", ".obsidian", "node_modules", "__pycache__", "notes", "Secrets", "a.b"]
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from vault_index.services.graph import graph_rules as r;"
            "assert 'pathspec' not in sys.modules; print([r.is_skipped_part(p) for p in sys.argv[2:]])")
    bare = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(Path(memory.__file__).parents[3]), *parts],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert bare.returncode == 0, bare.stderr
    assert bare.stdout.strip() == str([is_skipped_part(p) for p in parts])


def test_import_refuses_a_secrets_source_below_the_working_folder_only(memfile, notes, tmp_path, monkeypatch):
    """A person imports from wherever the old file is (often a dot folder such as ~/.mcp-memory);
    only a source in a hidden or secrets folder below the folder they work in is refused."""
    monkeypatch.chdir(notes)
    old_home = write(tmp_path, ".old-memory/memory.jsonl", REFERENCE)
    secret = write(notes, "secrets/x.md", "# x\n")
    with pytest.raises(memory.SourceOutsideError, match="hidden or secrets folder"):
        memory.import_reference(memfile, old_home, source=secret)
    assert not memfile.exists()
    assert memory.import_reference(memfile, old_home)["added"]["entity"] == 3
    assert {fact["source"] for fact in lines(memfile)} == {old_home.resolve().as_posix()}


def test_the_graph_bench_measures_a_real_graph(tmp_path):
    from vault_index.tooling.bench_graph import bench_graph, render

    result = bench_graph(tmp_path, entities=50)
    assert result["facts"] == 50 * 5 + 49 and result["check_problems"] == 0
    assert result["search_top"] == result["search_expected"] == "Entity 30"
    assert "memory graph, 299 facts" in render(result)
