"""The eval's scoring: metrics per ranking, relevance with alternatives, the regression gate."""

from __future__ import annotations

import json
import math

import pytest
from vault_index.tooling import evaluation
from vault_index.tooling.evaluation import Question, score_ranking
from vault_index.types import Hit


def _hit(path: str, heading: str) -> Hit:
    return Hit(path=path, heading=heading, line_start=1, line_end=1, score=1.0, snippet="")


def test_metrics_count_the_first_relevant_result():
    assert score_ranking([True]) == {"ndcg@5": 1.0, "mrr": 1.0, "recall@5": 1.0, "hit@1": 1.0}
    third = score_ranking([False, False, True])
    assert third["ndcg@5"] == pytest.approx(1 / math.log2(4))
    assert third["mrr"] == pytest.approx(1 / 3)
    assert third["recall@5"] == 1.0 and third["hit@1"] == 0.0
    sixth = score_ranking([False] * 5 + [True])
    assert sixth["ndcg@5"] == 0.0 and sixth["recall@5"] == 0.0 and sixth["mrr"] == pytest.approx(1 / 6)
    assert score_ranking([]) == {"ndcg@5": 0.0, "mrr": 0.0, "recall@5": 0.0, "hit@1": 0.0}


def test_golden_alternatives_count_as_answers(tmp_path):
    golden = tmp_path / "eval" / "golden.jsonl"
    golden.parent.mkdir()
    golden.write_text(
        json.dumps({"id": "q1", "query": "why the bracket", "kind": "paraphrase", "file": "v/a.md",
                    "heading": "A > Enclosure", "also": [{"file": "v/b.md", "heading": "B > Fix"}]}) + "\n"
    )
    (q,) = evaluation.load_golden(golden, tmp_path)
    a, b = str(tmp_path / "v" / "a.md"), str(tmp_path / "v" / "b.md")
    assert q.answers == ((a, "A > Enclosure"), (b, "B > Fix"))
    hits = [_hit(str(tmp_path / "v" / "c.md"), "C"), _hit(b, "B > Fix > Detail"), _hit(a, "A > Enclosure")]
    assert evaluation.chunk_relevance(hits, q) == [False, True, False]  # one answer is enough
    assert evaluation.file_relevance(hits, q) == [False, True, True]
    assert not evaluation.relevant_chunk(a, "A > Enclosure2", q)  # a sibling, not a child


def test_later_chunks_of_an_answer_already_found_do_not_count_again():
    q = Question("q", "x", "k", (("/v/a.md", "A"),))
    hits = [_hit("/v/a.md", "A"), _hit("/v/a.md", "A > B"), _hit("/v/b.md", "B")]
    assert evaluation.chunk_relevance(hits, q) == [True, False, False]
    assert evaluation.file_relevance(hits, q) == [True, False]  # files collapse, first wins


def test_a_malformed_golden_line_is_a_clear_usage_error(tmp_path):
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"id": "q1", "query": "no labels"}\n')
    with pytest.raises(evaluation.UsageError, match="golden.jsonl:1"):
        evaluation.load_golden(golden, tmp_path)


def _scores(value: float) -> dict:
    level = {m: value for m in evaluation.METRICS}
    return {"overall": {mode: {"chunk": dict(level), "file": dict(level)} for mode in evaluation.GUARDED_MODES}}


def test_regression_gate_allows_the_tolerance_and_flags_more():
    baseline = _scores(0.80)
    assert evaluation.regressions(_scores(0.80 - evaluation.REGRESSION_TOLERANCE + 1e-9), baseline) == []
    failures = evaluation.regressions(_scores(0.80 - evaluation.REGRESSION_TOLERANCE - 0.01), baseline)
    assert len(failures) == len(evaluation.GUARDED_MODES) * 2 * len(evaluation.METRICS)
    assert all("baseline 0.800" in f for f in failures)


def test_the_repository_golden_labels_point_at_real_headings():
    """Every label names a file of example-vault/ and a heading path the parser produces there."""
    from pathlib import Path

    from vault_index.engine.parsing.parse import parse_note

    root = Path(__file__).resolve().parents[2]
    questions = evaluation.load_golden(root / "eval" / "golden.jsonl", root)
    assert len(questions) >= 60
    for q in questions:
        for file, heading in q.answers:
            note = parse_note(file, Path(file).read_text(encoding="utf-8"))
            headings = {s.heading for s in note.sections}
            assert any(h == heading or h.startswith(heading + " > ") for h in headings), (q.id, heading)
            assert "/secrets/" not in file


def test_golden_sub_queries_are_read_and_the_eval_reports_with_and_without(tmp_path, open_app, fake_embedder):
    from helpers import write as _write
    from vault_index.errors import UsageError as _UsageError
    from vault_index.services.search.subqueries import SubQueries

    vault = tmp_path / "v"
    _write(vault, "bike.md", "# Bike\n\n## Brakes\n\nReplace the brake pads when the groove wears away.\n")
    _write(vault, "kiln.md", "# Kiln\n\nFire the kiln at dawn.\n")
    item = {"id": "b1", "query": "awful noise when I stop", "kind": "paraphrase", "file": "v/bike.md",
            "heading": "Bike > Brakes", "subqueries": {"keywords": "brake pads", "paraphrases": ["squeaky brakes"],
                                                       "hypothetical": "Replace the pads."}}
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps(item) + "\n" + json.dumps({**item, "id": "b2", "subqueries": {}}) + "\n")
    first, second = evaluation.load_golden(golden, tmp_path)
    assert first.subqueries == SubQueries(("brake pads",), ("squeaky brakes",), ("Replace the pads.",))
    assert second.subqueries is None
    app = open_app(fake_embedder)
    app.index([str(vault)])
    results = evaluation.evaluate(app, [first], ["hybrid", "grep"], subqueries=True)
    assert set(results["overall"]) == {"hybrid", "grep", "hybrid +sub"}  # grep takes no sub-queries
    assert results["overall"]["hybrid +sub"]["file"]["ndcg@5"] == 1.0
    golden.write_text(json.dumps({**item, "subqueries": {"paraphrases": ["a", "b", "c", "d"]}}) + "\n")
    with pytest.raises(_UsageError, match="golden.jsonl:1: not a golden question"):
        evaluation.load_golden(golden, tmp_path)


def test_the_eval_scores_chunks_whatever_the_surfaces_default(tmp_path, open_app):
    """Issue 39 item 7: every surface gives one hit per note by default now; the eval keeps scoring
    chunk ranks (its baselines were measured on chunks), so an answer in a note's second-best
    section still counts at chunk level."""
    from helpers import write as _write

    vault = tmp_path / "v"
    _write(vault, "bike.md", "# Bike\n\n## Brakes\n\nBrake brake brake: the brake pads.\n\n"
                             "## Cables\n\nA brake cable stretches.\n")
    question = Question("c1", "brake", "exact", ((str(vault / "bike.md"), "Bike > Cables"),))
    app = open_app(None)
    app.index([str(vault)])
    assert [h.heading for h in app.search("brake", "keyword", 10, per_note=False).hits] == [
        "Bike > Brakes", "Bike > Cables"]  # the answer is the note's second chunk
    results = evaluation.evaluate(app, [question], ["keyword"])
    assert results["overall"]["keyword"]["chunk"]["mrr"] == 0.5
