"""Follow the registered sources on disk and re-index what changes outside Claude Code.

An editor save, a `git pull` or a sync client changes notes without any hook firing. A watchdog
observer per source root feeds changed paths into a queue; one consumer thread drains it after a
quiet period (editors write a file in several steps) and re-indexes each path with the same
`App.reindex_file` the edit hook uses, so a watched change is indexed by exactly the rules of a
full sync. Folder moves and deletions, and queue overflow, fall back to one incremental sync.

The consumer owns its own `App` (SQLite connections stay on the thread that opened them); the
server passes its loaded models in so nothing is loaded twice.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

DEBOUNCE_SECONDS = 0.5  # quiet time before a burst of events is indexed
SOURCE_RESCAN_SECONDS = 5.0  # how often new or removed sources are picked up
MAX_PENDING = 2000  # beyond this many distinct paths, one full sync is cheaper
MAX_KEPT_ERRORS = 100  # a server watching for weeks keeps only the latest errors
SYNC_ALL = "\0sync"  # queue marker: run a full incremental sync


@dataclass
class WatchStats:
    reindexed: int = 0
    removed: int = 0
    syncs: int = 0
    errors: list[str] = field(default_factory=list)


class _Handler:
    """watchdog event handler: only puts paths on the queue (runs on the observer thread)."""

    def __init__(self, events: queue.Queue):
        self.events = events

    def dispatch(self, event) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.is_directory:
            if event.event_type in ("deleted", "moved"):
                self.events.put(SYNC_ALL)
            return
        for attr in ("src_path", "dest_path"):
            path = getattr(event, attr, "")
            if path:
                self.events.put(os.fsdecode(path))


class Watcher:
    """Watch every registered source; call `run(stop)` on the thread that should do the indexing."""

    def __init__(self, open_app: Callable, debounce: float = DEBOUNCE_SECONDS,
                 on_change: Callable[[str, str], None] | None = None, catch_up: bool = True,
                 own_workspace: bool = False):
        self.open_app = open_app  # () -> App, called on the consumer thread
        # a server's watcher follows and syncs only the sources its workspace sees (issue 39: a
        # server in project B embedded project A's pending chunks); a terminal's follows every source
        self.own_workspace = own_workspace
        self.catch_up = catch_up  # sync once after watching starts: changes made while we were away
        self.debounce = debounce
        self.on_change = on_change or (lambda kind, path: None)
        self.events: queue.Queue = queue.Queue()
        self.stats = WatchStats()
        self.ready = threading.Event()  # set once every source root is being watched
        self._watches: dict[str, object] = {}

    def run(self, stop: threading.Event) -> WatchStats:
        from watchdog.observers import Observer

        app = self.open_app()
        observer = Observer()
        observer.start()
        try:
            self._rescan(app, observer)
            if self.catch_up:
                self._apply(app, {SYNC_ALL})
            self.ready.set()
            next_rescan = time.monotonic() + SOURCE_RESCAN_SECONDS
            while not stop.is_set():
                batch = self._collect(stop)
                if batch:
                    self._apply(app, batch)
                if time.monotonic() >= next_rescan:
                    self._rescan(app, observer)
                    next_rescan = time.monotonic() + SOURCE_RESCAN_SECONDS
        finally:
            observer.stop()
            observer.join(timeout=5)
            app.close()
        return self.stats

    def _rescan(self, app, observer) -> None:
        roots = {}
        # every checkout on this machine (ADR 0019); a server's: those its workspace sees
        for root in (app.roots() if self.own_workspace else [r for _, r in app.store.sources()]):
            path = Path(root)
            folder = path if path.is_dir() else path.parent
            if folder.is_dir():
                roots[str(folder)] = folder
        for gone in set(self._watches) - set(roots):
            observer.unschedule(self._watches.pop(gone))
        for key, folder in roots.items():
            if key not in self._watches:
                self._watches[key] = observer.schedule(_Handler(self.events), str(folder), recursive=True)

    def _collect(self, stop: threading.Event) -> set[str]:
        """Block for the first event, then gather until `debounce` passes with no new one."""
        try:
            first = self.events.get(timeout=0.2)
        except queue.Empty:
            return set()
        batch = {first}
        while not stop.is_set():
            try:
                batch.add(self.events.get(timeout=self.debounce))
            except queue.Empty:
                break
            if len(batch) > MAX_PENDING:
                batch = {SYNC_ALL}
        return batch

    def _apply(self, app, batch: set[str]) -> None:
        if SYNC_ALL in batch:
            # by_agent: every source the workspace sees, as an agent's index_paths with no paths
            self._guard(lambda: app.index(None, by_agent=self.own_workspace), "sync", "all sources")
            self.stats.syncs += 1
            return
        for path in sorted(batch):
            report = self._guard(lambda p=path: app.reindex_file(p), "reindex", path)
            if report is None:
                continue  # outside every source, or not a note there
            if report.removed:
                self.stats.removed += 1
                self.on_change("removed", path)
            elif report.indexed:
                self.stats.reindexed += 1
                self.on_change("indexed", path)

    def _guard(self, fn, what: str, path: str):
        try:
            return fn()
        except Exception as exc:  # a watcher must outlive one bad file or a busy database
            message = f"{what} {path}: {exc}"
            self.stats.errors.append(message)
            del self.stats.errors[:-MAX_KEPT_ERRORS]
            self.on_change("error", message)
            return None


def start_in_background(open_app: Callable, on_change=None) -> tuple[threading.Thread, threading.Event, Watcher]:
    """Run a Watcher on a daemon thread (the server's --watch), over the sources of the server's
    workspace; returns (thread, stop, watcher)."""
    stop = threading.Event()
    watcher = Watcher(open_app, on_change=on_change, own_workspace=True)

    def target() -> None:
        try:
            watcher.run(stop)
        except Exception as exc:  # never take the server down with the watcher
            print(f"vault-index: watch stopped: {exc}", file=sys.stderr)
            watcher.ready.set()

    thread = threading.Thread(target=target, name="vault-index-watch", daemon=True)
    thread.start()
    return thread, stop, watcher
