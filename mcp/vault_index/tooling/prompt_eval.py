"""What prompt-time recall would inject, measured per corpus (`vault-index eval --suite S --prompts P`).

Two sets of prompts go through the hook's own selection (services/prompt_recall.select, the very
function the UserPromptSubmit hook calls) on a corpus's eval index:
- unrelated prompts (eval/prompts/unrelated.jsonl): what a developer types mid-session that no
  note answers; any injection is a false one;
- the corpus's golden questions, typed as prompts: the expected file should be among the injected.
Reported: the share of each that injected anything, the right-note share, the tokens injected per
prompt, and the selection's own latency (the hook's whole process, start to output, is in the bench).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from vault_index.errors import UsageError


def load_prompts(path: Path) -> list[dict]:
    prompts = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                item = json.loads(line)
                prompts.append({"id": item["id"], "prompt": item["prompt"], "kind": item.get("kind", "")})
            except (ValueError, KeyError, TypeError) as exc:
                raise UsageError(f"{path}:{number}: not a prompt line ({exc})") from exc
    return prompts


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def injection_report(app, prompts: list[dict], questions, mode: str = "hybrid") -> dict:
    """`mode`: "hybrid" is the hook with the session's server (its warm model), "keyword" the hook
    answering alone in its own process."""
    from vault_index.services import prompt_recall

    def run(text: str):
        started = time.perf_counter()
        injection = prompt_recall.select(app, text, mode=mode)
        return injection, (time.perf_counter() - started) * 1000

    false, by_kind, tokens, latency = 0, {}, [], []
    for item in prompts:
        injection, ms = run(item["prompt"])
        latency.append(ms)
        tokens.append(injection.tokens)
        hit = bool(injection.notes)
        false += hit
        kind = by_kind.setdefault(item["kind"], [0, 0])
        kind[0], kind[1] = kind[0] + hit, kind[1] + 1
    right = any_golden = 0
    golden_tokens = []
    for q in questions:
        injection, ms = run(q.query)
        latency.append(ms)
        golden_tokens.append(injection.tokens)
        paths = {note.path for note in injection.notes}
        any_golden += bool(paths)
        right += bool(paths & q.files)
    return {
        "unrelated": len(prompts), "false_injections": round(false / max(1, len(prompts)), 4),
        "false_by_kind": {k: f"{v[0]}/{v[1]}" for k, v in sorted(by_kind.items())},
        "golden": len(questions), "golden_injected": round(any_golden / max(1, len(questions)), 4),
        "right_note": round(right / max(1, len(questions)), 4),
        "tokens_per_unrelated_prompt": round(sum(tokens) / max(1, len(tokens)), 1),
        "tokens_per_golden_prompt": round(sum(golden_tokens) / max(1, len(golden_tokens)), 1),
        "select_ms_p50": round(_percentile(latency, 0.5), 1), "select_ms_p95": round(_percentile(latency, 0.95), 1),
    }


def format_report(reports: dict) -> str:
    lines = ["| corpus (hook) | unrelated prompts | false injections | golden questions | any injected | right note "
             "| tokens / unrelated | tokens / golden | select p50 / p95 ms |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, r in reports.items():
        lines.append(f"| {name} | {r['unrelated']} | {r['false_injections']:.3f} | {r['golden']} | "
                     f"{r['golden_injected']:.3f} | {r['right_note']:.3f} | {r['tokens_per_unrelated_prompt']} | "
                     f"{r['tokens_per_golden_prompt']} | {r['select_ms_p50']} / {r['select_ms_p95']} |")
    return "\n".join(lines)
