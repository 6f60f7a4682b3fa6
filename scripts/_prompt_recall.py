"""The prompt hook's recall, run by context_guard.py in the same process (docs/hooks.md).

What to inject is decided by vault_index.services.prompt_recall.select, wherever it runs:
1. the session's server, asked over the index socket (`<index>.sock`, edit_client.ask_search): it
   has the model and the vectors loaded and searches hybrid, in its own workspace;
2. when no server of this workspace answers in time: this process, by keywords only (loading the
   model here would cost a second a prompt), with the same budget and threshold;
3. nothing at all when there is no index, the setting is off, or the prompt is a slash command.

Import cost: until it knows it will search, this module and what it calls import `os`, `json` (the
payload's parser loaded it) and two package modules that import `os` and `_socket` only
(locations, edit_client), plus hook_state (json, re, time). The App and its engine (about 200 ms)
are imported only for the fallback.

VAULT_INDEX_HOOK_TRACE=1 prints one line on stderr per prompt: who answered, how many notes, how long
(the bench and the tests read it; Claude Code shows hook stderr in verbose mode only).
"""

from __future__ import annotations

import os
import sys
import time

from _hookio import ensure_package, text

TRACE_ENV = "VAULT_INDEX_HOOK_TRACE"


def injection_text(payload: dict, project, settings: dict) -> str:
    """The additionalContext for this prompt, "" to stay silent."""
    started = time.perf_counter()
    prompt = text(payload, "prompt")
    if not settings.get("prompt_recall", True) or not prompt.strip() or prompt.lstrip().startswith("/"):
        return ""
    ensure_package()
    from vault_index.locations import default_db_path

    db_path = default_db_path()
    if not os.environ.get("VAULT_INDEX_URL") and not os.path.exists(db_path):
        return ""  # nothing indexed yet: nothing to recall
    from vault_index.services import hook_state

    session_id = text(payload, "session_id")
    already = hook_state.injected(session_id)
    found, who = _from_server(db_path, str(project), prompt, already)
    if found is None:
        found, who = _by_keywords(project, prompt, set(already)), f"this process by keywords ({who})"
    notes = [n["path"] for n in found.get("notes") or () if isinstance(n, dict) and isinstance(n.get("path"), str)]
    words = found.get("text") if isinstance(found.get("text"), str) else ""
    if words and notes:
        hook_state.remember_injected(session_id, notes)
    _trace(who, found, time.perf_counter() - started)
    return words if notes else ""


def _from_server(db_path: str, project: str, prompt: str, already: list[str]) -> tuple[dict | None, str]:
    """(the server's injection as a dict, "server"), or (None, why) when it did not answer for us."""
    from vault_index.services.writes.edit_client import ask_search

    # the server cuts the query to 2,000 characters too; this keeps a pasted log off the socket
    answer = ask_search(db_path, {"project": project, "prompt": prompt[:4000], "already": already})
    if answer is None:
        return None, "no server"
    if answer.get("status") != "ok" or not isinstance(answer.get("injection"), dict):
        return None, f"server {answer.get('status')}"
    return answer["injection"], "server"


def _by_keywords(project, prompt: str, already: set[str]) -> dict:
    """select() in this process, keyword mode, with the local person's read grants (as the CLI's search)."""
    from vault_index.config import Settings
    from vault_index.errors import VaultIndexError
    from vault_index.services import prompt_recall
    from vault_index.services.app import App
    from vault_index.services.search.search import Filters
    from vault_index.surfaces.cli_common import role_filters

    try:
        # a short busy wait: a long sync writing the index must not hold the prompt (reads do not wait in WAL)
        app = App.open(Settings.from_env(), busy_timeout=0.5, start=project)
    except VaultIndexError:
        return {}
    try:
        filters = role_filters(app, Filters())
        return prompt_recall.select(app, prompt, already, mode=prompt_recall.KEYWORD, filters=filters).as_dict()
    except VaultIndexError:
        return {}
    finally:
        app.close()


def _trace(who: str, found: dict, seconds: float) -> None:
    if not os.environ.get(TRACE_ENV):
        return
    notes = len(found.get("notes") or ())
    sure = found.get("confidence")
    print(f"prompt recall: {who}; {notes} note(s); mode {found.get('mode') or '-'}; confidence {sure}; "
          f"{found.get('reason') or 'injected'}; {seconds * 1000:.0f} ms", file=sys.stderr)
