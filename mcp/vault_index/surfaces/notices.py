"""Notices a terminal prints once per machine rather than on every command.

Trigger: each terminal `search` or `recall` is a new process, so "once per process" (what the
server does) would still be every search. Why: the reranker's absence does not change between
searches, and `status` keeps saying it. Outcome: such a notice is printed the first time, then
remembered by a marker file in the model cache.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from vault_index.engine.embedding.models import MODEL_NOTICE_PREFIX
from vault_index.services.search.search import RERANK_NOTICE_PREFIX

ONCE_PREFIXES = (RERANK_NOTICE_PREFIX, MODEL_NOTICE_PREFIX)


def first_time(cache: Path, notice: str) -> bool:
    """Whether this machine has not yet been told `notice` (and remember that it now has)."""
    marker = cache / "said" / hashlib.sha256(notice.encode()).hexdigest()[:16]
    if marker.exists():
        return False
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass  # cannot remember: say it each time rather than never
    return True


def once_per_machine(notices, cache: Path, surface: str) -> list[str]:
    """`notices` without the once-per-machine ones this surface has said on this machine before.

    Trigger: every MCP answer carried "rerank off: ... could not load" (a client such as the MCP
    Inspector CLI starts a server per call, and a session restarts the server). Why: an optional
    reranker that is missing does not change between answers; each answer's `reranked: false`
    and mode "hybrid" keep saying it, and `vault-index status` names it. Outcome: the first answer
    on this machine says it, later ones do not. `surface` keeps the terminal's and the agent's
    markers apart, so a terminal search never silences the agent's first answer.
    """
    return [n for n in notices if not n.startswith(ONCE_PREFIXES) or first_time(cache, f"{surface}:{n}")]


def print_notices(notices, cache: Path, silent: bool) -> None:
    """`note: ...` lines on stderr; none with -s, the once-per-machine ones only the first time."""
    if silent:
        return
    for notice in notices:
        if not notice.startswith(ONCE_PREFIXES) or first_time(cache, notice):
            print(f"note: {notice}", file=sys.stderr)
