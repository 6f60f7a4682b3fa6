"""Retrieval eval over several corpora in one run (`vault-index eval --suite eval/suite.json`).

A suite file lists corpora. Each names a vault folder and a golden file, or a source file and a
converter script that writes both (LoCoMo). Paths may start with `${VAR:-default}`, so a corpus
that lives outside the repository (data we must not commit) is found from an environment
variable or from a folder beside the repository; a corpus whose folder or source is absent is
skipped with a message that says how to get it. `--fast` runs each corpus's `fast` subset (CI).

Every corpus gets its own eval index under the eval cache folder, so vectors are embedded once
per chunk and model and reused by every later run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from vault_index.errors import UsageError
from vault_index.services.search import fusion
from vault_index.tooling.evaluation import (
    METRICS,
    REGRESSION_TOLERANCE,
    check_parity,
    evaluate,
    format_table,
    load_golden,
    regressions,
)

SUITE_MODES = ("keyword", "vector", "hybrid", "hybrid+rerank")
_VAR = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class Corpus:
    name: str
    vault: str | None = None  # folder the notes are in (given, or written by the converter)
    golden: str | None = None
    root: str | None = None  # folder the golden file's paths are relative to (default: repo root)
    source: str | None = None  # input of the converter
    converter: str | None = None  # a script with convert(source, out_dir, **options) -> (vault, golden)
    options: dict = field(default_factory=dict)  # converter options for the full run
    fast: dict | None = None  # converter options for the CI subset; None: the corpus is not in it
    about: str = ""  # where the data comes from (repo and commit, licence), shown when it is absent
    kind: str = ""  # what sort of text it is (handbook, meeting notes, ...), for reading the results
    lockbox: bool = False  # questions frozen before the ranking work; scored once (eval/LOCKBOX.md)


def expand(value: str, base: Path) -> Path:
    """`${VAR:-default}` from the environment, then relative to `base` (the repository root)."""
    text = _VAR.sub(lambda m: os.environ.get(m.group(1)) or (m.group(2) or ""), value)
    path = Path(text).expanduser()
    return path if path.is_absolute() else base / path


def load_suite(path: Path) -> list[Corpus]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        corpora = [Corpus(**item) for item in data["corpora"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path}: not a suite file ({exc}); see eval/suite.json") from exc
    for corpus in corpora:
        if not corpus.converter and not (corpus.vault and corpus.golden):
            raise UsageError(f"{path}: corpus {corpus.name!r} needs vault and golden, or a converter")
    names = [c.name for c in corpora]
    if len(set(names)) != len(names):
        raise UsageError(f"{path}: corpus names must be unique")
    return corpora


def _converter(script: Path):
    spec = importlib.util.spec_from_file_location(f"_suite_converter_{script.stem}", script)
    if spec is None or spec.loader is None:
        raise UsageError(f"converter {script} cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cache_dir() -> Path:
    from vault_index.config import Settings

    configured = os.environ.get("VAULT_EVAL_CACHE")
    return Path(configured) if configured else Settings.from_env().model_cache.parent / "eval"


def prepare(corpus: Corpus, base: Path, fast: bool, cache: Path) -> tuple[Path, Path, Path] | str:
    """(vault, golden, golden root) ready to index, or why the corpus is skipped."""
    if corpus.converter:
        source = expand(corpus.source or "", base)
        if not source.exists():
            return f"source {source} not found. {corpus.about}".strip()
        options = (corpus.fast or {}) if fast else corpus.options
        out = cache / (corpus.name + ("-fast" if fast else ""))
        vault, golden = _converter(expand(corpus.converter, base)).convert(source, out, **options)
        return Path(vault), Path(golden), out
    vault = expand(corpus.vault, base)
    if not vault.is_dir():
        return f"folder {vault} not found. {corpus.about}".strip()
    root = expand(corpus.root, base) if corpus.root else base
    return vault, expand(corpus.golden, base), root


def corpus_app(name: str, vault: Path, cache: Path, store_url: str | None = None):
    """An App on this corpus's own eval index (other sources removed): the SQLite file
    `<cache>/<name>.db`, or with `store_url` (`eval --store`) the database vault_eval_<name> on
    that PostgreSQL server, filled from the SQLite file when it is new (tooling/evaluation.eval_app)."""
    from vault_index.tooling.evaluation import eval_app

    cache.mkdir(parents=True, exist_ok=True)
    return eval_app(vault, cache / f"{name}.db", store_url, f"vault_eval_{name}")


def run_corpus(name: str, vault: Path, golden: Path, root: Path, cache: Path, modes,
               store_url: str | None = None, subqueries: bool = False) -> dict:
    questions = load_golden(golden, root)
    app = corpus_app(name, vault, cache, store_url)
    try:
        report = app.index([str(vault)])
        results = evaluate(app, questions, list(modes), subqueries)
        kinds: dict[str, int] = {}
        for q in questions:
            kinds[q.kind] = kinds.get(q.kind, 0) + 1
        results["meta"] = {
            "questions": len(questions), "kinds": kinds,
            "with_subqueries": sum(q.subqueries is not None for q in questions),
            "fusion_version": fusion.FUSION_VERSION,
            "embed_model": app.store.get_meta("embed_model") or None,
            "chunks": app.store.counts()["chunks"], "vector_used": report.vector_used,
            "store": app.store.kind,
        }
    finally:
        app.close()
    return results


def run_prompts(name: str, vault: Path, golden: Path, root: Path, cache: Path, prompts: Path) -> dict:
    """What the prompt hook would inject on this corpus (tooling/prompt_eval.py), with the
    session's server (hybrid) and without it (keyword, the hook alone)."""
    from vault_index.tooling.prompt_eval import injection_report, load_prompts

    app = corpus_app(name, vault, cache)
    try:
        app.index([str(vault)])  # nothing to do after run_corpus; the prompts never meet a stale index
        questions, unrelated = load_golden(golden, root), load_prompts(prompts)
        return {mode: injection_report(app, unrelated, questions, mode) for mode in ("hybrid", "keyword")}
    finally:
        app.close()


def run_suite(args) -> int:
    suite_path = Path(args.suite).resolve()
    base = suite_path.parent.parent  # the repository root: eval/suite.json
    corpora = load_suite(suite_path)
    if args.fast:
        corpora = [c for c in corpora if c.fast is not None]
    modes = SUITE_MODES if args.modes == "all" else tuple(m.strip() for m in args.modes.split(",") if m.strip())
    cache = cache_dir()
    results: dict = {}
    skipped: dict[str, str] = {}
    for corpus in corpora:
        if corpus.lockbox and not getattr(args, "lockbox", False):
            # scored once, at the end of the ranking work it guards (eval/LOCKBOX.md)
            skipped[corpus.name] = "a lockbox corpus: scored only with --lockbox (eval/LOCKBOX.md)"
            print(f"eval: skipping {corpus.name}: {skipped[corpus.name]}", file=sys.stderr)
            continue
        prepared = prepare(corpus, base, args.fast, cache)
        if isinstance(prepared, str):
            skipped[corpus.name] = prepared
            print(f"eval: skipping {corpus.name}: {prepared}", file=sys.stderr)
            continue
        label = corpus.name + ("-fast" if args.fast else "")
        results[corpus.name] = run_corpus(label, *prepared, cache, modes, getattr(args, "store", None),
                                          getattr(args, "subqueries", False))
        if getattr(args, "prompts", None):
            results[corpus.name]["prompts"] = run_prompts(label, *prepared, cache, Path(args.prompts))
    report = {"corpora": results, "skipped": skipped, "fusion_version": fusion.FUSION_VERSION}
    if args.json:
        print(json.dumps(report))
    else:
        print(format_suite(results, by_kind=args.by_kind))
        for name, res in results.items():
            for mode, notes in res.get("notices", {}).items():
                for note in notes:
                    print(f"note ({name}, {mode}): {note}", file=sys.stderr)
    if getattr(args, "prompts", None) and not args.json:
        from vault_index.tooling.prompt_eval import format_report

        print(format_report({f"{name} ({mode})": r for name, res in results.items()
                             for mode, r in res.get("prompts", {}).items()}))
    if args.save:
        Path(args.save).write_text(json.dumps(report, indent=2) + "\n")
    status = check_parity(report, args.parity) if getattr(args, "parity", None) else 0
    if args.baseline:
        status = check_suite(report, json.loads(Path(args.baseline).read_text()), args.baseline) or status
    return status


def format_suite(results: dict, by_kind: bool = False) -> str:
    """Per corpus: the mode table, the file NDCG@5 summary by kind, and LoCoMo's session figures."""
    out = []
    for name, res in results.items():
        meta = res["meta"]
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(meta["kinds"].items()))
        out.append(f"== {name}: {meta['questions']} questions ({kinds}); {meta['chunks']} chunks; "
                   f"model {meta['embed_model']}; {meta['fusion_version']}; store {meta.get('store', 'sqlite')}")
        out.append(format_table(res["overall"], "all questions"))
        out.append(kind_summary(res, "file") + "\n" + kind_summary(res, "chunk"))
        if by_kind:
            for kind, scores in res["by_kind"].items():
                out.append(format_table(scores, f"{kind} ({meta['kinds'][kind]})"))
        out.append("")
    return "\n".join(out)


def kind_summary(res: dict, level: str) -> str:
    """NDCG@5 per mode (rows) and question kind (columns) at one level."""
    kinds = sorted(res["by_kind"])
    lines = [f"{level + ' ndcg@5':19}" + "".join(f"{'all':>9}") + "".join(f"{k[:14]:>16}" for k in kinds)]
    for mode in res["overall"]:
        row = f"{mode:19}{res['overall'][mode][level]['ndcg@5']:>9.3f}"
        row += "".join(f"{res['by_kind'][k][mode][level]['ndcg@5']:>16.3f}" for k in kinds)
        lines.append(row)
    return "\n".join(lines)


def check_suite(report: dict, baseline: dict, baseline_name: str) -> int:
    """Exit status of the CI gate: no corpus of the baseline may regress.

    A corpus whose data is absent (LoCoMo on a machine without ../shared/data) is skipped with a
    warning that names it as unguarded; one that is neither run nor skipped fails the gate.
    """
    failures = []
    for name, base in baseline.get("corpora", {}).items():
        now = report["corpora"].get(name)
        if now is None and name in report.get("skipped", {}):
            print(f"eval: WARNING: {name} is NOT guarded in this run: {report['skipped'][name]}", file=sys.stderr)
            continue
        if now is None:
            failures.append(f"{name}: in the baseline but not in the suite run")
            continue
        expected = (base.get("meta", {}).get("embed_model") or "").split("@")[0]
        if expected and expected != (now["meta"]["embed_model"] or "").split("@")[0]:
            failures.append(f"{name}: baseline measured with {expected}, this run used {now['meta']['embed_model']}")
            continue
        failures += [f"{name}: {f}" for f in regressions(now, base)]
    for failure in failures:
        print(f"regression: {failure}", file=sys.stderr)
    if failures:
        return 1
    guarded = [n for n in baseline.get("corpora", {}) if n in report["corpora"]]
    print(f"no hybrid metric more than {REGRESSION_TOLERANCE} below {baseline_name} on {', '.join(guarded)}",
          file=sys.stderr)
    return 0


__all__ = ["Corpus", "METRICS", "check_suite", "expand", "load_suite", "prepare", "run_suite"]
