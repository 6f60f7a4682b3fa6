"""The server's answer to the prompt hook's search over the index socket (services/writes/edit_queue.py).

The hook of a Claude Code session asks the session's own server, which holds the embedding model
and the vectors in memory, instead of loading them itself on every prompt. The server answers with
services/prompt_recall.select on the very App its tools search (under the tools' lock, with the
local person's read grants, as search_notes), and only for the workspace it serves: one index has
one socket, and the server of another project that holds it must not answer with its own
workspace's notes. Its answers:
- {"status": "ok", "injection": {...}}: what the hook injects (an empty text: stay silent);
- {"status": "elsewhere"}: this server serves another workspace: the hook searches by itself;
- {"status": "busy"}: a tool call held the lock past LOCK_WAIT_S: the hook searches by itself.

Shortly after the handshake, when the project's settings keep prompt recall on, `warm_up` runs one
search, so the model and the vectors are loaded before the first prompt arrives rather than during it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from vault_index.services import hook_state, prompt_recall
from vault_index.services import workspace as workspaces
from vault_index.services.access.access import granted_filters, scope_for
from vault_index.services.search.search import Filters
from vault_index.surfaces import tool_errors

# Trigger: a tool call (a write re-indexing with the model) can hold the lock for a second.
# Why: the hook gives the whole exchange edit_client.SEARCH_TIMEOUT_S (1 s). Outcome: wait at most
# this long for the lock, then say "busy" so the hook still has time to search by itself.
LOCK_WAIT_S = 0.4
# Trigger: the invariants' launch check starts a server, lists its tools and ends it; a warm-up at once
# loaded the model in every such probe (a second of CPU, and index-fresh then saw the project's docs/
# half adopted when the warm-up also indexed them). Outcome: wait this long first (a server that lives
# is warm a second or two later; a prompt before that is searched by keywords), and never adopt here:
# the project's folders are indexed by the first tool call, as before.
WARM_UP_DELAY_S = 2.0
MAX_ALREADY = hook_state.MAX_SESSION_NOTES


def answer(tc, request: dict) -> dict:
    """The answer to one search request {"project", "prompt", "already"} (see the module docstring)."""
    project, prompt, already = request.get("project"), request.get("prompt"), request.get("already") or []
    if not isinstance(project, str) or not isinstance(prompt, str) or not isinstance(already, list):
        return {"status": "malformed"}
    already = {p for p in already[:MAX_ALREADY] if isinstance(p, str)}
    if not tc.lock.acquire(timeout=LOCK_WAIT_S):
        return {"status": "busy"}
    try:
        app = tc.app
        if not serves(app, project):
            return {"status": "elsewhere"}
        filters = _read_filters(tc)
        if filters is None:
            return {"status": "ok", "injection": prompt_recall.Injection(reason="the caller reads nothing").as_dict()}
        found = prompt_recall.select(app, prompt, already, filters=filters)
    finally:
        tc.lock.release()
    return {"status": "ok", "injection": found.as_dict()}


def serves(app, project: str) -> bool:
    """Whether the workspace found from the hook's project folder is this server's own."""
    if not os.path.isabs(project):
        return False
    found = workspaces.find({s for s in app.store.source_scopes().values() if s}, project)
    return found == app.workspace


def _read_filters(tc) -> Filters | None:
    """The local person's read grants, as search_notes applies them (tc.who without its adoption
    of the project's folders, which can take seconds); None when the caller may read nothing."""
    vault = tc.vaults.get()
    role_of = getattr(tc.caller_factory, "role_of", None)  # stdio: the role without `git config`
    role = role_of(vault) if role_of is not None else tc.caller_factory(vault, None).role
    scope = scope_for(vault, vault.grants(role))
    return granted_filters(Filters(), scope) if scope.reads_any else None


def warm_up(tc) -> threading.Thread | None:
    """Load what the hook's searches need on a thread of its own, when the project wants them."""
    project = tc.app.workspace.root or Path.cwd()
    if not hook_state.read_settings(project)[0]["prompt_recall"]:
        return None
    thread = threading.Thread(target=_warm, args=(tc,), name="vault-index-warm-up-wait", daemon=True)
    thread.start()
    return thread


def _warm(tc) -> None:
    import time

    time.sleep(WARM_UP_DELAY_S)
    # named now: only a thread that may be inside onnxruntime keeps the server from a normal exit
    threading.current_thread().name = "vault-index-warm-up"  # (surfaces/shutdown.EMBEDDING_THREADS)
    try:
        with tc.lock:
            tc.app.search("warm up", mode=prompt_recall.HYBRID, limit=1)
    except Exception as exc:  # noqa: BLE001 - a cold server still answers, only slower
        tool_errors.log_failure("warm_up", exc)
