"""The multi-corpus eval: the suite file, paths outside the repository, the LoCoMo converter, the gate."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from vault_index.errors import UsageError
from vault_index.tooling import suite
from vault_index.tooling.evaluation import METRICS, broken_labels, load_golden

REPO = Path(__file__).resolve().parents[2]


def _converter():
    spec = importlib.util.spec_from_file_location("convert_locomo", REPO / "eval" / "convert_locomo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _locomo_like(path: Path) -> Path:
    """Two conversations shaped like locomo10.json: sessions, dated, turns with dia_ids, qa."""
    def conversation(a, b, sessions):
        conv = {"speaker_a": a, "speaker_b": b}
        for n, turns in sessions.items():
            conv[f"session_{n}_date_time"] = f"1:00 pm on {n} May, 2023"
            conv[f"session_{n}"] = [{"speaker": s, "dia_id": f"D{n}:{i + 1}", "text": t, **extra}
                                    for i, (s, t, extra) in enumerate(turns)]
        conv["session_9_date_time"] = "a date with no session"
        return conv

    data = [
        {"sample_id": "conv-1", "conversation": conversation("Ann", "Bo", {
            1: [("Ann", "I adopted a dog", {}), ("Bo", "Lovely!", {"blip_caption": "a photo of a puppy"})],
            2: [("Ann", "The dog learned to sit", {})],
        }), "qa": [
            {"question": "What did Ann adopt?", "answer": "a dog", "evidence": ["D1:1"], "category": 4},
            {"question": "When did the dog learn?", "answer": "May", "evidence": ["D2:1", "D1:1"], "category": 2},
            {"question": "Trick question", "adversarial_answer": "x", "evidence": ["D1:2"], "category": 5},
            {"question": "No evidence", "answer": "?", "evidence": [], "category": 1},
            {"question": "Bad evidence", "answer": "?", "evidence": ["D7:1"], "category": 3},
        ]},
        {"sample_id": "conv-2", "conversation": conversation("Cy", "Di", {1: [("Cy", "Hello", {})]}),
         "qa": [{"question": "Who said hello?", "answer": "Cy", "evidence": ["D1:1"], "category": 1}]},
    ]
    path.write_text(json.dumps(data))
    return path


def test_converter_writes_one_dated_note_per_session_and_golden_from_evidence(tmp_path):
    source = _locomo_like(tmp_path / "locomo.json")
    vault, golden = _converter().convert(source, tmp_path / "out")
    notes = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))
    assert notes == ["conv-1/session-01.md", "conv-1/session-02.md", "conv-2/session-01.md"]
    first = (vault / "conv-1" / "session-01.md").read_text()
    assert "1:00 pm on 1 May, 2023" in first and "speakers: [Ann, Bo]" in first
    assert "Bo: Lovely! [shares a photo: a photo of a puppy]" in first
    questions = load_golden(golden, tmp_path / "out")
    # category 5, no evidence and evidence pointing at no session are dropped
    assert [q.query for q in questions] == ["What did Ann adopt?", "When did the dog learn?", "Who said hello?"]
    assert [q.kind for q in questions] == ["single-hop", "temporal", "multi-hop"]
    assert {Path(f).name for f, _ in questions[1].answers} == {"session-01.md", "session-02.md"}
    assert broken_labels(golden, tmp_path / "out") == (4, [])  # every label names a real heading


def test_converter_subset_and_rerun_leave_only_the_asked_conversations(tmp_path):
    source = _locomo_like(tmp_path / "locomo.json")
    convert = _converter().convert
    vault, golden = convert(source, tmp_path / "out", conversations=1)
    assert not (vault / "conv-2").exists()
    before = (vault / "conv-1" / "session-01.md").stat().st_mtime_ns
    convert(source, tmp_path / "out", conversations=1)
    assert (vault / "conv-1" / "session-01.md").stat().st_mtime_ns == before  # unchanged: not rewritten
    assert all(q.id.startswith("conv-1") for q in load_golden(golden, tmp_path / "out"))


def test_suite_paths_come_from_the_environment_or_beside_the_repository(tmp_path, monkeypatch):
    monkeypatch.delenv("VAULT_TEST_CORPUS", raising=False)
    assert suite.expand("${VAULT_TEST_CORPUS:-../corpora/x}", tmp_path) == tmp_path / "../corpora/x"
    monkeypatch.setenv("VAULT_TEST_CORPUS", str(tmp_path / "elsewhere"))
    assert suite.expand("${VAULT_TEST_CORPUS:-../corpora/x}", tmp_path) == tmp_path / "elsewhere"


def test_the_repository_suite_loads_and_names_a_fast_subset():
    corpora = suite.load_suite(REPO / "eval" / "suite.json")
    names = [c.name for c in corpora]
    assert "example-vault" in names and "locomo" in names and len(names) >= 3
    assert {c.name for c in corpora if c.fast is not None} >= {"example-vault", "locomo"}


def test_a_suite_entry_may_say_its_kind_and_that_it_is_a_lockbox(tmp_path):
    path = tmp_path / "suite.json"
    path.write_text(json.dumps({"corpora": [
        {"name": "minutes", "vault": "v", "golden": "g", "kind": "meeting notes", "lockbox": True},
        {"name": "plain", "vault": "v", "golden": "g"},
    ]}))
    minutes, plain = suite.load_suite(path)
    assert (minutes.kind, minutes.lockbox) == ("meeting notes", True)
    assert (plain.kind, plain.lockbox) == ("", False)  # both keys are optional


def test_the_repository_suite_has_seven_kinds_and_lockbox_questions_with_sub_queries():
    # issue 23: at least 8 corpora of different kinds, at least 3 lockbox ones whose every
    # question carries the agent sub-queries written with it
    corpora = suite.load_suite(REPO / "eval" / "suite.json")
    assert len(corpora) >= 8 and all(c.kind for c in corpora)
    assert {c.kind for c in corpora} >= {"chat logs", "handbook", "reference docs", "decision records",
                                         "meeting notes", "personal vault", "project docs"}
    lockbox = [c for c in corpora if c.lockbox]
    assert len(lockbox) >= 3
    for corpus in lockbox:
        lines = (REPO / corpus.golden).read_text(encoding="utf-8").splitlines()
        items = [json.loads(line) for line in lines if line.strip()]
        assert len(items) >= 40 and len({i["id"] for i in items}) == len(items)
        for item in items:
            sub = item["subqueries"]
            assert sub["keywords"].strip() and sub["hypothetical"].strip(), item["id"]
            assert sub["paraphrases"] and all(p.strip() for p in sub["paraphrases"]), item["id"]


@pytest.mark.parametrize("text", ["{}", "not json", '{"corpora": [{"name": "x"}]}',
                                  '{"corpora": [{"name": "x", "vault": "v", "golden": "g", "colour": 1}]}'])
def test_a_bad_suite_file_is_a_usage_error(tmp_path, text):
    path = tmp_path / "suite.json"
    path.write_text(text)
    with pytest.raises(UsageError):
        suite.load_suite(path)


def test_an_absent_corpus_is_skipped_with_how_to_get_it(tmp_path):
    corpus = suite.Corpus(name="far", vault="${VAULT_NOPE_X:-missing}", golden="g.jsonl", about="Clone it from X.")
    reason = suite.prepare(corpus, tmp_path, fast=False, cache=tmp_path / "cache")
    assert isinstance(reason, str) and "missing" in reason and "Clone it from X." in reason
    corpus = suite.Corpus(name="lc", source="nowhere.json", converter="eval/convert_locomo.py")
    assert "nowhere.json" in suite.prepare(corpus, tmp_path, fast=True, cache=tmp_path / "cache")


def test_the_fast_subset_runs_the_converter_with_its_options(tmp_path):
    source = _locomo_like(tmp_path / "locomo.json")
    corpus = suite.Corpus(name="lc", source=str(source), converter=str(REPO / "eval" / "convert_locomo.py"),
                          fast={"conversations": 1})
    vault, golden, root = suite.prepare(corpus, tmp_path, fast=True, cache=tmp_path / "cache")
    assert root == tmp_path / "cache" / "lc-fast" and not (vault / "conv-2").exists()


def _result(value: float, model: str = "m@1") -> dict:
    level = {m: value for m in METRICS}
    return {"overall": {"hybrid": {"chunk": level, "file": level}}, "meta": {"embed_model": model}}


def test_the_gate_fails_on_a_regression_and_names_an_absent_corpus_as_unguarded(capsys):
    baseline = {"corpora": {"a": _result(0.9), "b": _result(0.8)}}
    ok = {"corpora": {"a": _result(0.89), "b": _result(0.8)}, "skipped": {}}
    assert suite.check_suite(ok, baseline, "base.json") == 0
    worse = {"corpora": {"a": _result(0.85), "b": _result(0.8)}, "skipped": {}}
    assert suite.check_suite(worse, baseline, "base.json") == 1
    assert "a: hybrid" in capsys.readouterr().err
    absent = {"corpora": {"a": _result(0.9)}, "skipped": {"b": "folder not found"}}
    assert suite.check_suite(absent, baseline, "base.json") == 0
    assert "b is NOT guarded in this run: folder not found" in capsys.readouterr().err
    dropped = {"corpora": {"a": _result(0.9)}, "skipped": {}}  # left out of the suite file
    assert suite.check_suite(dropped, baseline, "base.json") == 1
    other_model = {"corpora": {"a": _result(0.9, "x@2"), "b": _result(0.8)}, "skipped": {}}
    assert suite.check_suite(other_model, baseline, "base.json") == 1


def test_a_suite_run_skips_the_lockbox_corpora_unless_asked(tmp_path, monkeypatch, capsys):
    """eval/LOCKBOX.md: a lockbox corpus is scored once, at the end; no run scores it by accident."""
    import argparse
    import json

    from vault_index.tooling import suite

    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "suite.json").write_text(json.dumps({"corpora": [
        {"name": "boxed", "vault": "missing-folder", "golden": "eval/g.jsonl", "lockbox": True}]}))
    args = argparse.Namespace(suite=str(tmp_path / "eval" / "suite.json"), fast=False, modes="keyword", json=True,
                              by_kind=False, save=None, baseline=None, parity=None, store=None, lockbox=False)
    suite.run_suite(args)
    report = json.loads(capsys.readouterr().out)
    assert "lockbox" in report["skipped"]["boxed"]
    args.lockbox = True
    suite.run_suite(args)
    report = json.loads(capsys.readouterr().out)
    assert "lockbox" not in report["skipped"].get("boxed", "")  # asked for: it is prepared (here: missing)
