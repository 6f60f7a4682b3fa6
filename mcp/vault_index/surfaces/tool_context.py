"""What every MCP tool is given: a ToolContext holding the app, the locks, the vaults and who calls.

`build_server` (surfaces/tools.py) makes one per server; each tool is a top-level function whose
first argument is it, so a test can call `note_write(tc, ...)` without a server. The helpers here
(`call`, `who`, `who_at`, ...) are the ones every tool shares: they take the lock, name the caller
and turn our errors into tool errors that say what to do next.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError

from vault_index.errors import AmbiguousPathError, NotFoundError, OutsideSourcesError, VaultIndexError
from vault_index.services import boundary
from vault_index.services.access.access import Scope, is_indexed, scope_for
from vault_index.services.app import App
from vault_index.services.curation import adr, curation
from vault_index.services.curation.recent import recent_activity
from vault_index.services.graph.graph_rules import fact_roots
from vault_index.services.workspace import other_vault
from vault_index.surfaces import tool_errors
from vault_index.surfaces.denied import denied_outcome, denied_text
from vault_index.surfaces.outcomes import is_outcome
from vault_index.surfaces.tool_inputs import CallerFactory
from vault_index.surfaces.vaults import _Vaults

ADOPT_VECTORS_WAIT_S = 5.0  # the first answer in a project waits this long for its notes' vectors


class ToolContext:
    """One server's state, shared by its tools (they run in worker threads).

    Reads and writes share `app` (one SQLite connection) under `lock`; indexing, which can embed
    for minutes, runs on its own connection under `index_lock`, so searches keep answering
    meanwhile (WAL: the last committed state); the memory graph file has `graph_lock`.
    """

    def __init__(self, app: App, memory_file: Path | None, caller_factory: CallerFactory, vaults: _Vaults):
        self.app, self.memory_file, self.caller_factory, self.vaults = app, memory_file, caller_factory, vaults
        self.lock, self.index_lock, self.graph_lock = threading.Lock(), threading.Lock(), threading.Lock()
        self.indexer: list[App] = []  # opened on first use, sharing the loaded models
        self.adopted = threading.Event()  # the project's own folders indexed (ADR 0020), once per process
        self.elsewhere: dict[Path, _Vaults] = {}  # the person's own notes folders, written as plain vaults

    def call(self, fn, *args, guard: threading.Lock | None = None):
        with guard or self.lock:
            try:
                return fn(*args)
            except VaultIndexError as exc:
                raise ToolError(str(exc)) from exc
            except Exception as exc:  # noqa: BLE001 - becomes a message that names tool, input, next step
                # Trigger: a failure that is not one of ours (the SDK would send only "Error
                # executing tool X"). Why: the agent must learn what failed and what to try.
                # Outcome: the calling tool's name and arguments in the message (every tool
                # calls `call` directly); the traceback on stderr only.
                tool, inputs = tool_errors.calling_tool()
                tool_errors.log_failure(tool, exc)
                raise ToolError(tool_errors.unexpected_failure(tool, inputs, exc)) from exc

    def locked(self, fn, *args, **kwargs):
        """`fn` under the shared connection's lock, its errors as they are (for a callback that the
        caller turns into its own answer)."""
        with self.lock:
            return fn(*args, **kwargs)

    def adopt(self) -> None:
        """Index the project's docs/ and notes/ before the first answer (after the handshake, so
        start-up stays light): keywords now, their vectors on a thread, so a large docs folder
        never holds the first answer for minutes. The first answer waits up to
        ADOPT_VECTORS_WAIT_S for them: a small folder's vectors are in it (the first search in a
        new project said "no vectors yet, run `vault-index index`" while they were being made).
        A failure is logged; the index as it is answers."""
        if self.adopted.is_set():
            return
        worker = None
        with self.index_lock:
            if self.adopted.is_set():
                return
            try:
                if not self.indexer:
                    self.indexer.append(self.app.reopen())
                report = self.indexer[0].adopt_workspace(embed=False)
                if report is not None:
                    worker = threading.Thread(target=self.embed_adopted, daemon=True, name="adopt-vectors")
                    worker.start()
            except Exception as exc:  # noqa: BLE001 - the index as it is still answers
                tool_errors.log_failure("adopt_workspace", exc)
            self.adopted.set()
        self.recover_writes()
        if worker is not None:
            worker.join(ADOPT_VECTORS_WAIT_S)  # after the lock: the worker takes it

    def recover_writes(self) -> None:
        """At the server's start, finish this vault's writes that a crash cut short (a move's links
        rewritten, a change committed: services/writes/recovery.py); later ones, at the next write."""
        try:
            vault = self.vaults.get()
            with self.lock:  # the re-index goes through the shared connection
                self.writer_for(vault).recover(everything=True)
        except Exception as exc:  # noqa: BLE001 - the retry or the next write finishes them instead
            tool_errors.log_failure("recover_writes", exc)

    def embed_adopted(self) -> None:
        with self.index_lock:
            try:
                self.indexer[0].adopt_workspace()
            except Exception as exc:  # noqa: BLE001 - keyword search of those notes still works
                tool_errors.log_failure("adopt_workspace", exc)

    def who(self, ctx):
        """(vault, caller, scope) for this request; a broken config is a tool error that says where."""
        self.adopt()
        try:
            vault = self.vaults.get()
            caller = self.caller_factory(vault, ctx)  # a role the vault lacks (VAULT_ROLE=editr) is refused here
        except VaultIndexError as exc:
            raise ToolError(str(exc)) from exc
        return vault, caller, scope_for(vault, vault.grants(caller.role))

    def who_at(self, ctx, path: str):
        """who(), for a note at `path` as the one boundary resolves it (services/boundary.py): (vault,
        caller, scope, path in that vault), or the not_found outcome a missing note gets when the
        workspace does not see where `path` leads (another project's source, an init vault that is
        not this one, reached by name or through a symlink). A path in a visible source outside this
        vault (the person's own notes, from a project) is written in that folder, under the local
        person's default role there (ADR 0020); one outside everything seen goes on as given, and
        the write service refuses it as outside the vault."""
        vault, caller, scope = self.who(ctx)
        root = Path(vault.root)
        placed = self.within(root, path)
        if is_outcome(placed) or not os.path.isabs(placed) or self.app.workspace.kind == "vault":
            return placed if is_outcome(placed) else (vault, caller, scope, placed)
        with self.lock:
            holder = boundary.source_folder(self.app, placed)
        if holder is None:
            return vault, caller, scope, path  # the write service refuses it as outside the vault
        try:
            other = self.elsewhere.setdefault(holder, _Vaults(self.app, holder)).get()
        except VaultIndexError as exc:
            raise ToolError(str(exc)) from exc
        caller = self.caller_factory(other, ctx)
        return other, caller, scope_for(other, other.grants(caller.role)), str(Path(placed).relative_to(holder))

    def within(self, root: Path, path: str):
        """`path` (relative to `root`, or absolute) for the write service of the vault at `root`: its
        path inside `root` when the workspace sees it there; the real path when it lies in another
        folder the workspace sees; `path` as given when it lies outside all of them (the service
        refuses it); the not_found outcome of a missing note when the workspace does not see it."""
        from vault_index.services.vault.vault import not_visible
        from vault_index.services.writes.write_types import WriteOutcome

        root = boundary.real(root)
        with self.lock:
            try:
                real = boundary.resolve(self.app, path, base=root, for_write=True)
            except OutsideSourcesError:
                return path
            except AmbiguousPathError as exc:  # names two files: the agent picks one of those listed
                raise ToolError(str(exc)) from exc
            except NotFoundError:  # hidden: answered as missing, its path shown as a missing one's
                given = Path(os.path.expanduser(path))  # as written: never where a link leads
                given = Path(os.path.normpath(given if given.is_absolute() else root / given))
                holder = next((r for r in [root, *map(Path, self.app.roots())] if given.is_relative_to(r)), None)
                rel = given.relative_to(holder).as_posix() if holder is not None else path
                return WriteOutcome("not_found", rel, not_visible(rel))
        if real != root and real.is_relative_to(root):
            return real.relative_to(root).as_posix()
        return str(real)

    @staticmethod
    def need_read(scope: Scope, caller) -> None:
        if not scope.reads_any:
            raise ToolError(denied_text(caller, "read"))

    def graph_roots(self) -> list[Path]:
        """Where an agent's fact may name its source (graph_rules.fact_roots)."""
        return fact_roots(self.app, self.call(self.app.sources))

    def index(self, paths: list[str] | None, name: str | None = None):
        if not self.indexer:
            self.indexer.append(self.app.reopen())
        # what an agent may add: services/access/boundaries.py
        return self.indexer[0].index(paths, by_agent=True, name=name)

    def writer_for(self, vault):
        return self.app.writer(vault)

    def hit_decays(self, vault, paths: list[str]) -> dict[str, dict | None]:
        """Decay per hit from the frontmatter the index holds (under `lock`: the shared connection)."""
        today, fraction = dt.date.today(), curation.aging_fraction(vault)
        return self.call(lambda: {p: curation.indexed_decay(self.app.store, p, today, fraction) for p in set(paths)})

    def reindexed(self, outcome, path) -> bool:
        """False when the record was written outside every source, or its re-index failed."""
        return (outcome.status == "written" and bool(path) and self.call(is_indexed, self.app, path)
                and not any("index" in notice for notice in outcome.notices))

    def review(self, vault, caller, scope: Scope, *, fail_on: str, lint: bool, recent_days: int = 0):
        if not scope.reads_any:
            return denied_outcome(caller)
        out = curation.review(self.writer_for(vault), vault, caller, scope, fail_on=fail_on, lint=lint)
        if recent_days:  # recent activity (services/curation/recent.py): git where there is one, else mtimes
            readable = lambda p: scope.can_read(p) and other_vault(vault.root, p) is None  # noqa: E731
            out["data"]["recent"] = recent_activity(Path(vault.root), readable, days=recent_days)
        return out


# --- helpers shared by the tools and the CLI -----------------------------------------------------


def lessons_file(vault) -> Path:
    return Path(vault.root) / "docs" / "lessons.md"


def adr_folder(vault) -> Path:
    """docs/adr, or the decision-record series the project already has (adr.series_folder)."""
    return adr.series_folder(vault.root)


def require_written(outcome) -> None:
    """The lesson and ADR tools answer with their record; any other outcome is a tool error that
    starts with its status (`denied: ...`, `locked: ...`) and says what to do."""
    if not outcome.ok:
        raise ToolError(f"{outcome.status}: {outcome.message}")


def refuse_unwritable(scope: Scope, caller, paths: list[str]) -> None:
    """index_paths / remove_source: write on every collection a path covers; no path means all."""
    targets = [Path(os.path.expanduser(p)).resolve() for p in paths] if paths else [scope.root]
    if not all(scope.can_write(t) for t in targets):
        raise ToolError(denied_text(caller, "write on every collection these paths cover"))
