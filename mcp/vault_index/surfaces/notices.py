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

from vault_index.services.search import RERANK_NOTICE_PREFIX

ONCE_PREFIXES = (RERANK_NOTICE_PREFIX,)


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


def print_notices(notices, cache: Path, silent: bool) -> None:
    """`note: ...` lines on stderr; none with -s, the once-per-machine ones only the first time."""
    if silent:
        return
    for notice in notices:
        if not notice.startswith(ONCE_PREFIXES) or first_time(cache, notice):
            print(f"note: {notice}", file=sys.stderr)
