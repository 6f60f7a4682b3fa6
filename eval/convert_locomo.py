"""LoCoMo (snap-research/LoCoMo, CC BY-NC 4.0) as a vault: one note per session, and a golden file.

The data stays outside the repository (`../shared/data/locomo/locomo10.json` from the project
root); this script writes the notes and `golden.jsonl` into a cache folder outside it too.

Each session becomes `<sample_id>/session-NN.md`: frontmatter with the date and both speakers, an
H1 that names them and the date, then one paragraph per turn (`Speaker: text`, a shared photo as
`[shares a photo: caption]`). Questions of categories 1-4 (multi-hop, temporal, open-domain,
single-hop) whose evidence names a session become golden lines; category 5 (adversarial, no
answer in the conversation) is dropped. A question's answers are the sessions its evidence dialog
ids (`D3:12` -> session 3) point to; any of them counts, as in the session-level R@5 and MRR that
others publish (basic-memory: R@5 0.823 on LoCoMo).

Usage: python eval/convert_locomo.py SOURCE.json OUT_DIR [--conversations N]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

KEPT_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA = re.compile(r"D(\d+):")


def session_numbers(conversation: dict) -> list[int]:
    """Numbers of the sessions that have turns (the data lists dates for some empty ones)."""
    found = []
    for key, value in conversation.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if match and isinstance(value, list) and value:
            found.append(int(match.group(1)))
    return sorted(found)


def session_heading(number: int, conversation: dict) -> str:
    """The note's H1, which is also its heading path: both speakers, the session and its date."""
    when = str(conversation.get(f"session_{number}_date_time", "")).strip()
    return f"{conversation['speaker_a']} and {conversation['speaker_b']}, session {number} ({when})"


def session_note(sample_id: str, number: int, conversation: dict) -> str:
    a, b = conversation["speaker_a"], conversation["speaker_b"]
    when = str(conversation.get(f"session_{number}_date_time", "")).strip()
    lines = [
        "---",
        f"date: {json.dumps(when)}",
        f"speakers: [{a}, {b}]",
        f"conversation: {sample_id}",
        "---",
        "",
        f"# {session_heading(number, conversation)}",
        "",
    ]
    for turn in conversation[f"session_{number}"]:
        text = str(turn.get("text", "")).strip()
        caption = str(turn.get("blip_caption") or "").strip()
        if caption:
            text = f"{text} [shares a photo: {caption}]".strip()
        lines += [f"{turn.get('speaker', '?')}: {text}", ""]
    return "\n".join(lines)


def session_path(sample_id: str, number: int) -> str:
    return f"{sample_id}/session-{number:02d}.md"


def convert(source: Path, out_dir: Path, conversations: int | None = None) -> tuple[Path, Path]:
    """Write the notes under out_dir/vault and the questions to out_dir/golden.jsonl.

    Returns (vault folder, golden file). Paths in the golden file are relative to out_dir, the
    way eval/golden.jsonl names files relative to the repository root.
    """
    data = json.loads(Path(source).read_text(encoding="utf-8"))
    if conversations is not None:
        data = data[:conversations]
    vault = out_dir / "vault"
    golden_lines = []
    for sample in data:
        sample_id = str(sample["sample_id"])
        conversation = sample["conversation"]
        numbers = session_numbers(conversation)
        for number in numbers:
            path = vault / session_path(sample_id, number)
            path.parent.mkdir(parents=True, exist_ok=True)
            text = session_note(sample_id, number, conversation)
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
        for index, qa in enumerate(sample.get("qa", [])):
            kind = KEPT_CATEGORIES.get(qa.get("category"))
            if kind is None:
                continue
            sessions = sorted({int(m) for e in qa.get("evidence") or [] for m in _DIA.findall(str(e))})
            sessions = [s for s in sessions if s in numbers]
            if not sessions:
                continue  # no evidence: cannot be scored for retrieval
            answers = [
                {"file": f"vault/{session_path(sample_id, s)}", "heading": session_heading(s, conversation)}
                for s in sessions
            ]
            line = {"id": f"{sample_id}-q{index:03d}", "query": str(qa["question"]), "kind": kind, **answers[0]}
            if len(answers) > 1:
                line["also"] = answers[1:]
            golden_lines.append(json.dumps(line))
    golden = out_dir / "golden.jsonl"
    golden.write_text("\n".join(golden_lines) + "\n", encoding="utf-8")
    return vault, golden


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    args = parser.parse_args(argv)
    vault, golden = convert(args.source, args.out_dir, args.conversations)
    print(f"{vault}\n{golden}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
