"""Ending a server whose watcher may still be embedding (stdio and HTTP share this).

Trigger: a session ended (stdin closed, Ctrl-C) while the --watch catch-up sync, or a project's
vectors, were being embedded on their thread; interpreter shutdown tore onnxruntime down under it
and the server died of SIGABRT ("terminate called without an active exception").
Outcome: an idle watcher is stopped and joined; a thread still embedding makes the process leave
at once with exit code 0. Every write is one SQLite transaction, so the embedding resumes at the
next start.
"""

from __future__ import annotations

import os
import sys
import threading

# our threads that may be inside onnxruntime (the last two load the model or embed a prompt)
EMBEDDING_THREADS = ("vault-index-watch", "adopt-vectors", "vault-index-warm-up", "vault-index-hook-search")
WATCH_STOP_WAIT_S = 1.0  # an idle watcher sees its stop event within 0.2 s


def stop_watcher(thread: threading.Thread | None, stop: threading.Event | None) -> None:
    if stop is not None:
        stop.set()
    if thread is not None:
        thread.join(timeout=WATCH_STOP_WAIT_S)


def leave_if_still_embedding(code: int = 0) -> None:
    """Call after the server's own clean-up: returns only when no embedding thread is running."""
    if not any(t.name in EMBEDDING_THREADS and t.is_alive() for t in threading.enumerate()):
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing left to say on it
            pass
    os._exit(code)
