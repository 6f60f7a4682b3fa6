"""UserPromptSubmit hook: ask for a handoff once the session's context passes a threshold, and
bring in the notes that answer the prompt (prompt-time recall, _prompt_recall.py).

stdin: {"session_id", "transcript_path", "cwd", "hook_event_name": "UserPromptSubmit", "prompt"}
stdout, one of:
- nothing: under the threshold, or the size is unknown (no transcript, nothing parseable);
- {"decision": "block", "reason": ...}: over it; the prompt is not sent and the reason tells
  the person to run /handoff (or raise threshold_tokens in .claude/handoff.json);
- {"systemMessage": ...}: over it, but this session already has a handoff note;
- {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": ...}}: the
  prompt is /handoff, which always passes; the context names the session id and transcript so
  the command can write them into the note;
- {"hookSpecificOutput": {... "additionalContext": "vault-index: notes that may answer ..."}}: at
  most three notes whose search answer cleared the confidence threshold, each injected once a
  session (beside a systemMessage above, never beside a block: the guard wins);
- a systemMessage, once a session, when .claude/handoff.json is broken (the defaults are used).

The size is the latest main-chain assistant message's input + cache_creation + cache_read
tokens, as the API reported them: what the model actually read, not an estimate.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _hooklib as hooks  # noqa: E402 - the scripts folder is not a package
import _prompt_recall as recall  # noqa: E402

HANDOFF_COMMAND = "/handoff"


def is_handoff(prompt: str) -> bool:
    first = prompt.strip().split(maxsplit=1)[0] if prompt.strip() else ""
    # A plugin's commands are namespaced: /vault-index:handoff.
    return first == HANDOFF_COMMAND or (first.startswith("/") and first.endswith(":handoff"))


def decide(payload: dict) -> dict | None:
    """The hook's answer for one payload (None = print nothing)."""
    project = hooks.project_dir(payload)
    session_id, transcript = hooks.text(payload, "session_id"), hooks.text(payload, "transcript_path")
    if is_handoff(hooks.text(payload, "prompt")):
        return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": (
            f"Handoff details: session_id={session_id or 'unknown'}; transcript_path={transcript or 'unknown'}. "
            f"Pass them to scripts/handoff.py new as --session and --transcript.")}}
    settings, problem = hooks.read_settings(project)
    answer = dict(guard(project, session_id, transcript) or {})
    if answer.get("decision") != "block":  # a held prompt is not sent: nothing to add to it
        try:
            context = recall.injection_text(payload, os.path.abspath(project), settings)
        except Exception as exc:  # noqa: BLE001 - a broken index costs the recall, never the guard's answer
            hooks.warn(f"prompt recall skipped: {type(exc).__name__}: {exc}")
            context = ""
        if context:
            answer["hookSpecificOutput"] = {"hookEventName": "UserPromptSubmit", "additionalContext": context}
    notice = hooks.settings_notice(problem, session_id)
    if notice:
        answer["systemMessage"] = f"{answer['systemMessage']} {notice}" if answer.get("systemMessage") else notice
    return answer or None


def guard(project, session_id: str, transcript: str) -> dict | None:
    """The context guard's own answer: None under the threshold, a block or a reminder over it."""
    if not transcript:
        return None
    tokens = hooks.latest_context_tokens(transcript)
    threshold = hooks.read_threshold(project)
    if tokens is None or tokens < threshold:
        return None
    existing = hooks.handoff_for_session(hooks.content_dir(project), session_id)
    if existing is not None:
        return {"systemMessage": (
            f"Context is {tokens:,} tokens (threshold {threshold:,}). This session's handoff note is "
            f"{_shown(existing, project)}: start a fresh session (/clear) and paste its card.")}
    return {"decision": "block", "reason": (
        f"The context is {tokens:,} tokens (threshold {threshold:,}), so this prompt was not sent. "
        f"Run /handoff [topic] to write a handoff note and a card for a fresh session, then /clear and "
        f"paste the card. To keep going here instead, raise threshold_tokens in "
        f"{hooks.HANDOFF_CONFIG.as_posix()}.")}


def _shown(path, project) -> str:
    try:
        return path.relative_to(project).as_posix()
    except ValueError:
        return str(path)


def main() -> None:
    answer = decide(hooks.read_payload())
    if answer is not None:
        hooks.emit(answer)


if __name__ == "__main__":
    hooks.run(main)
