"""Retrieval eval: golden questions scored per mode at chunk and file level.

A golden line names its answer (`file`, `heading`) and, where another section answers equally
well, alternatives in `also`. A chunk is relevant when it is in an answer's file and its heading
path is the answer's or below it. File level collapses hits to their files, first occurrence
wins. Every metric counts the first relevant result (a question needs one answer), so Recall@5
is the share of questions answered in the top 5.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from vault_index.errors import UsageError
from vault_index.services.search import fusion
from vault_index.services.search.search import MODES
from vault_index.services.search.subqueries import SubQueries, sub_queries

EVAL_DEPTH = 10
REGRESSION_TOLERANCE = 0.03  # CI fails when a hybrid metric drops more than this below baseline
GUARDED_MODES = ("hybrid", "hybrid+rerank")
METRICS = ("ndcg@5", "mrr", "recall@5", "hit@1")
SUBQUERY_SUFFIX = " +sub"  # `eval --subqueries`: the row of a mode run with the agent sub-queries


@dataclass(frozen=True)
class Question:
    id: str
    query: str
    kind: str
    answers: tuple[tuple[str, str], ...]  # (absolute file, heading path), the label first
    subqueries: SubQueries | None = None  # the agent's extra phrasings, written with the question

    @property
    def files(self) -> set[str]:
        return {f for f, _ in self.answers}


def load_golden(path: Path, root: Path) -> list[Question]:
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            labels = [item] + list(item.get("also", []))
            answers = tuple((str((root / a["file"]).resolve()), a["heading"]) for a in labels)
            sub = item.get("subqueries") or {}
            found = sub_queries(sub.get("keywords"), sub.get("paraphrases"), sub.get("hypothetical"))
            questions.append(Question(item["id"], item["query"], item.get("kind", "unlabelled"), answers, found))
        except (ValueError, KeyError, AttributeError, UsageError) as exc:
            raise UsageError(f"{path}:{number}: not a golden question ({exc})") from exc
    return questions


def heading_matches(heading: str, label: str) -> bool:
    """A chunk's heading path answers a label when it is the label or a section under it."""
    return heading == label or heading.startswith(label + " > ")


def broken_labels(path: Path, root: Path) -> tuple[int, list[str]]:
    """(labels checked, problems): every label must name an existing file and heading path.

    A golden set whose answers moved scores every mode as wrong; the invariants run this so the
    drift shows up at session start rather than as a mysterious eval drop."""
    from vault_index.engine.parsing.parse import parse_note

    try:
        questions = load_golden(path, root)
    except UsageError as exc:
        return 0, [str(exc)]
    headings: dict[str, set[str]] = {}
    count, problems = 0, []
    for q in questions:
        for file, label in q.answers:
            count += 1
            if not Path(file).is_file():
                problems.append(f"{q.id}: file {Path(file).relative_to(root.resolve())} does not exist")
                continue
            if file not in headings:
                note = parse_note(file, Path(file).read_text(encoding="utf-8", errors="replace"))
                headings[file] = {section.heading for section in note.sections}
            if not any(heading_matches(h, label) for h in headings[file]):
                problems.append(f"{q.id}: no heading '{label}' in {Path(file).relative_to(root.resolve())}")
    return count, problems


def relevant_chunk(path: str, heading: str, q: Question) -> bool:
    return any(
        path == file and heading_matches(heading, label)
        for file, label in q.answers
    )


def score_ranking(relevance: list[bool]) -> dict[str, float]:
    """Metrics for one ranked list of relevance flags (one answer per question)."""
    first = next((i for i, r in enumerate(relevance) if r), None)
    ideal = 1.0  # a single relevant item at rank 1
    dcg = sum(1 / math.log2(i + 2) for i, r in enumerate(relevance[:5]) if r)
    return {
        "ndcg@5": min(1.0, dcg / ideal) if first is not None and first < 5 else 0.0,
        "mrr": 1 / (first + 1) if first is not None else 0.0,
        "recall@5": 1.0 if first is not None and first < 5 else 0.0,
        "hit@1": 1.0 if first == 0 else 0.0,
    }


def chunk_relevance(hits, q: Question) -> list[bool]:
    flags, seen_answer = [], False
    for hit in hits:
        ok = relevant_chunk(hit.path, hit.heading, q)
        # Later chunks of the same answer add no new information: count the answer once.
        flags.append(ok and not seen_answer)
        seen_answer = seen_answer or ok
    return flags


def file_relevance(hits, q: Question) -> list[bool]:
    files = list(dict.fromkeys(hit.path for hit in hits))
    return [f in q.files for f in files]


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {m: round(sum(r[m] for r in rows) / len(rows), 4) if rows else 0.0 for m in METRICS}


def evaluate(app, questions: list[Question], modes: list[str], subqueries: bool = False) -> dict:
    """Scores per mode, level and kind. Searches go through the one pipeline (App.search).
    `subqueries`: each mode also runs with the questions' sub-queries, as the row '<mode> +sub' (a
    question without any runs plain there too)."""
    results: dict = {"overall": {}, "by_kind": {}, "notices": {}}
    runs = [(m, False) for m in modes] + ([(m, True) for m in modes if m != "grep"] if subqueries else [])
    for mode, with_sub in runs:
        per: dict[str, dict[str, list]] = {"chunk": defaultdict(list), "file": defaultdict(list)}
        notices: set[str] = set()
        for q in questions:
            # chunks, not one hit per note (the surfaces' default): chunk ranks are scored too, and
            # the baselines were measured so
            result = app.search(q.query, mode, EVAL_DEPTH, per_note=False,
                                subqueries=q.subqueries if with_sub else None)
            notices.update(result.notices)
            levels = (("chunk", chunk_relevance(result.hits, q)), ("file", file_relevance(result.hits, q)))
            for level, flags in levels:
                row = score_ranking(flags)
                per[level]["all"].append(row)
                per[level][q.kind].append(row)
        row_name = mode + (SUBQUERY_SUFFIX if with_sub else "")
        results["overall"][row_name] = {level: _mean(per[level]["all"]) for level in per}
        for kind in sorted({q.kind for q in questions}):
            results["by_kind"].setdefault(kind, {})[row_name] = {level: _mean(per[level][kind]) for level in per}
        results["notices"][row_name] = sorted(notices)
    return results


def format_table(scores: dict[str, dict], title: str) -> str:
    head = f"{'mode':18}" + "".join(f"{'chunk ' + m:>15}" for m in METRICS)
    head += "".join(f"{'file ' + m:>14}" for m in METRICS)
    lines = [title, head]
    for mode, levels in scores.items():
        lines.append(f"{mode:18}" + "".join(f"{levels['chunk'][m]:>15.3f}" for m in METRICS)
                     + "".join(f"{levels['file'][m]:>14.3f}" for m in METRICS))
    return "\n".join(lines)


def regressions(results: dict, baseline: dict) -> list[str]:
    failures = []
    for mode in GUARDED_MODES:
        base = baseline.get("overall", {}).get(mode)
        now = results["overall"].get(mode)
        if not base or not now:
            continue
        for level in ("chunk", "file"):
            for metric in METRICS:
                if now[level][metric] < base[level][metric] - REGRESSION_TOLERANCE:
                    failures.append(
                        f"{mode} {level} {metric}: {now[level][metric]:.3f} < baseline "
                        f"{base[level][metric]:.3f} - {REGRESSION_TOLERANCE}"
                    )
    return failures


def eval_app(vault: Path, db_path: Path | None = None, store_url: str | None = None, database: str = "vault_eval"):
    """An App on a dedicated index for the eval, so other sources cannot compete with the vault.

    SQLite: the file `db_path` (default VAULT_EVAL_DB, else eval/eval.db beside the model cache).
    PostgreSQL (`store_url`, `eval --store`): the database `database` on that server, created if
    missing; when it is empty and the SQLite file exists, it is first filled from it by
    engine/stores/migrate_store (vectors included: nothing is re-embedded), then synced as usual.

    Trigger: the eval removes every source but the vault from its index. Why: with
    VAULT_INDEX_URL set, an App on the settings' URL was the person's real (team) index, and the
    eval would have unregistered its sources. Outcome: the eval never follows VAULT_INDEX_URL;
    only --store puts it on PostgreSQL, in databases of its own.
    """
    from vault_index.config import Settings
    from vault_index.services.app import App

    settings = Settings.from_env()
    if db_path is None:
        db_path = Path(os.environ.get("VAULT_EVAL_DB") or settings.model_cache.parent / "eval" / "eval.db")
    url = None
    if store_url:
        from vault_index.engine.stores.pg_schema import ensure_database

        url = ensure_database(store_url, database)
    app = App.open(replace(settings, db_path=Path(db_path), index_url=url))
    try:
        if url and not app.store.counts()["sources"] and Path(db_path).is_file():
            seed_from_sqlite(app.store, Path(db_path))
        known = {p for _, p in app.store.sources()}
        # the vault as registered is its real path; the suite names it as written (`../corpora/x`)
        for stale in known - {str(vault), os.path.realpath(vault)}:
            app.store.remove_source(stale)
    except BaseException:
        app.close()
        raise
    return app


def seed_from_sqlite(target, db_path: Path) -> None:
    """Fill the empty PostgreSQL eval index `target` from the SQLite eval index at `db_path`."""
    from vault_index.engine.stores.migrate_store import copy_index
    from vault_index.engine.stores.store import Store

    source = Store(db_path)
    try:
        copied = copy_index(source, target)
    finally:
        source.close()
    print(f"eval: filled {target.location} from {db_path} ({copied['chunks']} chunks, "
          f"{sum(copied['vectors'].values())} vectors; nothing re-embedded)", file=sys.stderr)


PARITY_MODES = ("keyword", "vector", "hybrid")
# issue 25 (issue 14 had 0.01): file NDCG@5 on PostgreSQL within this of SQLite's, per corpus and mode (ADR 0028)
PARITY_TOLERANCE = 0.005


def parity(report: dict, other: dict, tolerance: float = PARITY_TOLERANCE) -> tuple[list[str], list[str]]:
    """(table lines, failures): file NDCG@5 per corpus and mode of two reports of the same eval
    on different stores (`--save` output of the plain eval or of a suite)."""
    mine, theirs = report.get("corpora") or {"eval": report}, other.get("corpora") or {"eval": other}
    lines = [f"{'corpus':18}{'mode':10}{'this run':>10}{'other':>10}{'diff':>9}   file ndcg@5 "
             f"({report_store(report)} against {report_store(other)})"]
    failures = []
    for name, res in mine.items():
        base = theirs.get(name)
        if base is None:
            failures.append(f"{name}: not in the other report")
            continue
        for mode in PARITY_MODES:
            if mode not in res["overall"] or mode not in base["overall"]:
                continue
            now, then = res["overall"][mode]["file"]["ndcg@5"], base["overall"][mode]["file"]["ndcg@5"]
            lines.append(f"{name:18}{mode:10}{now:>10.4f}{then:>10.4f}{now - then:>+9.4f}")
            if abs(now - then) > tolerance:
                failures.append(f"{name} {mode}: file ndcg@5 {now:.4f} against {then:.4f}, more than {tolerance} apart")
    return lines, failures


def report_store(report: dict) -> str:
    corpora = report.get("corpora") or {"eval": report}
    kinds = {res.get("meta", {}).get("store") for res in corpora.values()}
    return "/".join(sorted(k or "?" for k in kinds))


def check_parity(report: dict, other_path: str) -> int:
    """Exit status of `eval --parity FILE`: 1 when a corpus and mode differ by more than the tolerance."""
    try:
        other = json.loads(Path(other_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--parity {other_path}: not a saved eval report ({exc}); write one with --save") from exc
    lines, failures = parity(report, other)
    print("\n".join(lines), file=sys.stderr)
    for failure in failures:
        print(f"parity: {failure}", file=sys.stderr)
    if failures:
        return 1
    print(f"parity: every file ndcg@5 within {PARITY_TOLERANCE} of {other_path}", file=sys.stderr)
    return 0


def run_eval(_app, args) -> int:
    golden = Path(args.golden).resolve()
    vault = Path(args.vault).resolve()
    if not golden.is_file():
        raise UsageError(f"golden file {golden} not found (run from the repository root or pass --golden)")
    if not vault.is_dir():
        raise UsageError(f"vault {vault} not found (pass --vault)")
    questions = load_golden(golden, golden.parent.parent)
    modes = list(MODES) if args.modes == "all" else [m.strip() for m in args.modes.split(",") if m.strip()]
    for mode in modes:
        if mode not in MODES:
            raise UsageError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    app = eval_app(vault, store_url=args.store)
    try:
        report = app.index([str(vault)])
        results = evaluate(app, questions, modes, getattr(args, "subqueries", False))
        results["meta"] = {
            "questions": len(questions), "with_subqueries": sum(q.subqueries is not None for q in questions),
            "fusion_version": fusion.FUSION_VERSION,
            "embed_model": app.store.get_meta("embed_model") or None,
            "chunks": app.store.counts()["chunks"], "vector_used": report.vector_used,
            "store": app.store.kind,
        }
    finally:
        app.close()
    if args.json:
        print(json.dumps(results))
    else:
        kinds = {}
        for q in questions:
            kinds[q.kind] = kinds.get(q.kind, 0) + 1
        print(f"{len(questions)} questions ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}); "
              f"{results['meta']['chunks']} chunks; model {results['meta']['embed_model']}; {fusion.FUSION_VERSION}")
        print(format_table(results["overall"], "\nall questions"))
        if args.by_kind:
            for kind, scores in results["by_kind"].items():
                print(format_table(scores, f"\n{kind} ({kinds[kind]})"))
        for mode, notes in results["notices"].items():
            for note in notes:
                print(f"note ({mode}): {note}", file=sys.stderr)
    if args.save:
        Path(args.save).write_text(json.dumps(results, indent=2) + "\n")
    status = check_parity(results, args.parity) if args.parity else 0
    if args.baseline:
        baseline = json.loads(Path(args.baseline).read_text())
        # Compare model names: the fingerprint after "@" includes file times, so it is per machine.
        expected = (baseline.get("meta", {}).get("embed_model") or "").split("@")[0]
        if expected and expected != (results["meta"]["embed_model"] or "").split("@")[0]:
            print(f"eval: the baseline was measured with {expected}, this run used "
                  f"{results['meta']['embed_model']}; set VAULT_EMBED_MODEL to compare", file=sys.stderr)
            return 1
        failures = regressions(results, baseline)
        for failure in failures:
            print(f"regression: {failure}", file=sys.stderr)
        if failures:
            return 1
        print(f"no hybrid metric more than {REGRESSION_TOLERANCE} below {args.baseline}", file=sys.stderr)
    return status
