"""The stdio transport: start the App, build the server from surfaces/tools.py, serve stdin/stdout.

Every tool is declared in surfaces/tools.py; a transport only chooses the wire and who the caller
is (here: the local person, surfaces/callers.py). Start-up must stay light: the handshake is
answered before numpy, onnxruntime or fastembed load, and before the tool modules are imported
(they register before the first message after initialize); models load on the first search.
"""

from __future__ import annotations

import threading
from pathlib import Path

from vault_index.errors import VaultIndexError
from vault_index.services.app import App
from vault_index.surfaces.callers import stdio_caller_factory
from vault_index.surfaces.shutdown import leave_if_still_embedding, stop_watcher
from vault_index.surfaces.tools import build_server, graph_summary, instructions, start_server

__all__ = ["build_server", "graph_summary", "instructions", "serve_stdio", "start_server"]


def _exit_on_interrupt() -> None:
    """Ctrl-C (or a client's SIGINT) ends the server at once, as SIGTERM does.

    The SDK reads stdin on a worker thread that a KeyboardInterrupt cannot wake, so the default
    handler left the process running until its client gave up and sent SIGTERM. Every write
    (SQLite transactions, graph and note replacements) is atomic, so stopping here loses nothing.
    """
    import os
    import signal

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, lambda *_: os._exit(130))


def listen_for_edits(app: App, tc=None):
    """Take edited notes from the edit hook over the index's socket (ADR 0010), and answer the
    prompt hook's searches with the tools' own App (`tc`, surfaces/hook_search.py); None when
    another server already listens for this index or the socket cannot be made here."""
    from functools import partial

    from vault_index.services.writes.edit_queue import EditListener

    search = None
    if tc is not None:
        from vault_index.surfaces import hook_search

        search = partial(hook_search.answer, tc)
    listener = EditListener(app.settings.db_path, lambda: app.reopen(), search=search)
    if not listener.start():
        return None
    if tc is not None:  # only the server that holds the socket gets the hook's searches: warm it
        hook_search.warm_up(tc)
    return listener


def serve_stdio(memory_file: str | Path | None = None, watch: bool = False, role: str | None = None,
                vault_root: str | Path | None = None) -> None:
    _exit_on_interrupt()
    try:
        app = App.open(start=vault_root)
    except VaultIndexError as exc:  # an index that cannot be opened at all: say why, no traceback
        import sys

        print(f"vault-index: the server cannot start: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
    started: dict = {}
    try:
        # initialize is answered with the instructions alone; the tools, the edit listener and
        # the watcher start after it, before any later message reaches the SDK (issue 26)
        server, register = start_server(app, memory_file, stdio_caller_factory(role), vault_root=vault_root)

        def after_handshake() -> None:
            tc = register()
            # Trigger: a fresh project was indexed only at the agent's first tool call, so the first
            # prompt's hook found nothing and "a running server embeds them" was untrue (walkthrough
            # F). Outcome: the project is adopted now, on a thread; a first call waits for it.
            threading.Thread(target=tc.adopt, daemon=True, name="adopt-at-start").start()
            started["edits"] = listen_for_edits(app, tc)
            if watch:  # its own connection on its own thread; shares the (lazily loaded) models
                from vault_index.services.watch import start_in_background

                started["watcher"], started["stop"], _ = start_in_background(lambda: app.reopen())

        import anyio

        from vault_index.surfaces import stdio_guard

        anyio.run(stdio_guard.serve, server, after_handshake)  # the SDK's stdio transport, behind the guard
    finally:
        stop_watcher(started.get("watcher"), started.get("stop"))
        if started.get("edits") is not None:
            started["edits"].stop()
        app.close()
    leave_if_still_embedding()  # never finalize under a thread inside onnxruntime (surfaces/shutdown.py)
