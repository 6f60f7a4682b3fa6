"""scripts/context_guard.py as Claude Code runs it on UserPromptSubmit."""

from __future__ import annotations

import json
import os

from hookrun import FIXTURES, LONG_CONTEXT, answer, hook_env, prompt_payload, run_script

LONG, SHORT = FIXTURES / "long_session.jsonl", FIXTURES / "short_session.jsonl"


def _threshold(project, tokens) -> None:
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / "handoff.json").write_text(json.dumps({"threshold_tokens": tokens}), encoding="utf-8")


def guard(project, transcript, prompt="carry on", session="sess-1", **env):
    return answer(run_script("context_guard.py", prompt_payload(project, transcript, prompt, session), hook_env(**env)))


def test_under_the_threshold_it_prints_nothing(project):
    assert guard(project, SHORT) is None


def test_over_the_threshold_it_blocks_with_a_reason_that_says_what_to_do(project):
    out = guard(project, LONG)
    assert out["decision"] == "block" and set(out) == {"decision", "reason"}
    reason = out["reason"]
    assert f"{LONG_CONTEXT:,}" in reason and "450,000" in reason
    assert "/handoff" in reason and ".claude/handoff.json" in reason and "threshold_tokens" in reason


def test_sidechain_lines_do_not_count(project):
    # The transcript's last usage is a subagent's 19,502 tokens: counting it would let this pass.
    assert guard(project, LONG)["decision"] == "block"


def test_a_message_split_over_several_lines_counts_once(project):
    _threshold(project, 1_000_000)  # three lines of 471,412 summed would be over this
    assert guard(project, LONG) is None


def test_the_threshold_is_read_from_the_project_handoff_json(project, tmp_path):
    _threshold(project, LONG_CONTEXT + 1)
    assert guard(project, LONG) is None
    _threshold(project, LONG_CONTEXT)
    assert guard(project, LONG)["decision"] == "block"


def test_claude_project_dir_wins_over_the_payload_cwd(project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _threshold(elsewhere, 2_000_000)
    assert guard(project, LONG, CLAUDE_PROJECT_DIR=str(elsewhere)) is None
    assert guard(project, LONG)["decision"] == "block"


def test_a_compaction_after_the_latest_message_resets_the_size(project):
    assert guard(project, FIXTURES / "compacted_session.jsonl") is None


def test_handoff_prompts_pass_and_carry_the_session_details(project):
    for prompt in ("/handoff garden battery", "  /handoff", "/vault-index:handoff"):
        out = guard(project, LONG, prompt=prompt, session="sess-42")
        assert "decision" not in out, prompt
        context = out["hookSpecificOutput"]["additionalContext"]
        assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
        assert "session_id=sess-42" in context and f"transcript_path={LONG}" in context
    assert guard(project, LONG, prompt="/handoffs please")["decision"] == "block"  # another word


def test_a_written_handoff_for_this_session_lets_prompts_through_with_a_reminder(project):
    notes = project / "docs" / "handoffs"
    notes.mkdir(parents=True)
    (notes / "2026-11-30-other.md").write_text('---\ntitle: "x"\nsession_id: "sess-9"\ntype: handoff\n---\n')
    assert guard(project, LONG, session="sess-1")["decision"] == "block"  # another session's note
    (notes / "2026-11-30-battery.md").write_text('---\ntitle: "x"\nsession_id: "sess-1"\ntype: handoff\n---\n')
    out = guard(project, LONG, session="sess-1")
    assert set(out) == {"systemMessage"}
    assert "docs/handoffs/2026-11-30-battery.md" in out["systemMessage"] and "fresh session" in out["systemMessage"]


def test_missing_corrupt_or_odd_transcripts_stay_silent(project, tmp_path):
    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_bytes(LONG.read_bytes()[:-700] + b"\n\xff\x00{{{ truncated")  # cut mid-line, binary junk
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)  # opening it would block for ever: a hook must not hang on it
    for transcript in (tmp_path / "missing.jsonl", tmp_path, "", "\x00bad", fifo, "/dev/zero"):
        assert guard(project, transcript) is None, transcript
    # A cut, corrupted tail (the subagent and synthetic lines lost): the latest complete
    # main-chain usage before it is still read.
    assert guard(project, corrupt)["decision"] == "block"
