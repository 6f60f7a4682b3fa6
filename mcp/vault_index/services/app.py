"""The composition point: one App per process wires settings, store, models and the searcher.

Every surface (CLI, MCP server, eval, bench) goes through these methods; none of them composes
engine pieces on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from vault_index.config import MAX_FILE_BYTES, Settings, project_dir
from vault_index.engine.embedding.models import Models
from vault_index.engine.files.fileio import read_note
from vault_index.engine.files.sources import looks_binary, real_path
from vault_index.engine.stores.store import BUSY_TIMEOUT_S
from vault_index.engine.stores.store_contract import IndexStore, open_store
from vault_index.errors import NotFoundError, UsageError, VaultIndexError
from vault_index.services import boundary, index_state
from vault_index.services import workspace as workspaces
from vault_index.services.access.boundaries import agent_sources
from vault_index.services.search import confidence
from vault_index.services.search.per_note import PER_NOTE_DEFAULT
from vault_index.services.search.search import DEFAULT_MODE, RERANK_MODE, Filters, Searcher, under_any
from vault_index.services.search.subqueries import SubQueries
from vault_index.services.vault.vault import Vault
from vault_index.services.workspace import Workspace
from vault_index.types import SearchResult, SyncReport

if TYPE_CHECKING:  # imported where used: the MCP handshake needs neither (issue 26)
    from vault_index.services.writes.write import WriteService

MAX_NOTE_LINES = 2000  # get_note returns at most this many lines per call
MAX_NOTE_CHARS = 100_000
NOTHING_RELEVANT = "nothing relevant"  # how a notice says the hits are not answers; surfaces match on it


def nothing_relevant(sure: float, kind: str | None = "hybrid", waiting: int = 0) -> str:
    """The notice of an answer under the threshold of the confidence model `kind` that judged it
    (services/search/confidence.py); `waiting`: chunks searched with no vector yet, ranked lower."""
    limit = confidence.threshold(kind)
    places = 2 if f"{sure:.2f}" != f"{limit:.2f}" else 3  # never "0.39, under 0.39"
    pending = (f"; {waiting} of the chunks searched wait for vectors and rank lower until embedded: ask again "
               "then" if waiting else "")
    return (f"{NOTHING_RELEVANT}: the first hit's confidence is {sure:.{places}f}, under {limit:.2f}; "
            f"the hits are the nearest notes, not answers{pending}")


EMPTY_INDEX_NOTICE = ("the index is empty: add a folder of notes with `vault-index index FOLDER` "
                      "(agents: the index_paths tool), then search again")


@dataclass
class App:
    settings: Settings
    store: IndexStore
    models: Models
    searcher: Searcher
    workspace: Workspace = Workspace(workspaces.PERSONAL)
    _pending: tuple | None = None  # ((generation, model), {root: chunks waiting}, {root: chunks}): index_state

    @classmethod
    def open(cls, settings: Settings | None = None, models: Models | None = None,
             busy_timeout: float = BUSY_TIMEOUT_S, workspace: Workspace | None = None,
             start: str | Path | None = None) -> App:
        """`busy_timeout`: how long a write waits for another process's write (the edit hook: short).
        `workspace`: which sources this process sees (default: services/workspace.find from `start`,
        e.g. a --vault folder, else the project or the working folder)."""
        settings = settings or Settings.from_env()
        store = open_store(settings.db_path, settings.index_url, busy_timeout)
        models = models or Models(
            settings.embed_model, settings.rerank_model, settings.model_cache, settings.rerank
        )
        if workspace is None:
            workspace = workspaces.find({s for s in store.source_scopes().values() if s}, start)
        return cls(settings, store, models, Searcher(store, models, settings.vector_backend), workspace)

    def serve_from(self, start: str | Path) -> None:
        """Work in the workspace found from `start` (a server told which vault it serves)."""
        self.workspace = workspaces.find({s for s in self.store.source_scopes().values() if s}, start)

    def reopen(self, models: Models | None = None) -> App:
        """Another App on its own connection, in the same workspace (indexing threads, listeners)."""
        return App.open(self.settings, models=models or self.models, workspace=self.workspace)

    # --- the workspace (ADR 0020) -------------------------------------------------------------

    def visible_roots(self) -> list[str] | None:
        """The roots of the sources this workspace sees; None when it sees every source."""
        scopes = self.store.source_scopes()
        if all(self.workspace.sees(scope) for scope in scopes.values()):
            return None
        return sorted(path for path, scope in scopes.items() if self.workspace.sees(scope))

    def _seen(self) -> Callable[[str], bool]:
        """Whether a source root is visible here, from one read of the sources' workspaces."""
        roots = self.visible_roots()
        return (lambda _path: True) if roots is None else set(roots).__contains__

    def resolve(self, path: str | Path, **how) -> Path:
        """`path` as the one boundary resolves and checks it for this workspace (services/boundary.py):
        the modules below the App that take a path from an agent call this."""
        return boundary.resolve(self, path, **how)

    def sees_path(self) -> Callable[[str], bool] | None:
        """Whether this workspace sees a file (services/workspace.path_rule: the deepest source
        holding it decides); None when every source is seen."""
        return workspaces.path_rule(self.workspace, self.store.source_scopes())

    def fact_visible(self) -> Callable[[str], bool]:
        """For the memory graph: whether a fact's source is seen here (services/workspace.fact_rule:
        the notes' rule, and a fact from another project's files is hidden even when that project
        has no source; in a vault only the vault's own files count)."""
        return workspaces.fact_rule(self.workspace, self.store.source_scopes())

    def adopt_workspace(self, progress=None, embed: bool = True) -> SyncReport | None:
        """Register the project's own folders (docs/, notes/) and README.md that no visible source
        covers, and the memory other agents keep for it, and bring them up to date (`embed`: their
        vectors too); None when the project has none."""
        wanted = [str(f) for f in self._unadopted_own()]
        self._adopt_agent_memory()
        ours = [p for p, scope in self.store.source_scopes().items()
                if scope and scope == self.workspace.key and self.workspace.kind == workspaces.PROJECT]
        if not wanted and not ours:
            return None
        from vault_index.engine import indexer

        scope_of = lambda p: self.workspace.scope_for(p, by_agent=False)  # noqa: E731
        # the project's sources registered before are brought up to date with the new ones
        return indexer.sync(self.store, self.models, [*wanted, *ours], progress, embed=embed, scope_of=scope_of)

    def close(self) -> None:
        self.store.close()

    # --- writes to the index ----------------------------------------------------------------

    def index(self, paths: list[str] | None = None, progress=None, *, by_agent: bool = False,
              name: str | None = None, checkout: bool = False) -> SyncReport:
        """Register `paths` (none: every source; an agent's: every source its workspace sees) and sync.
        `by_agent`: the paths come from an agent (MCP), which may add only what
        services/access/boundaries.py allows; the person (CLI) adds anything.
        `checkout`: the one path may be another checkout of the source `name` (ADR 0019)."""
        if by_agent and name:  # the store's refusal would name the other workspace's folder
            owner = self.store.source_names().get(name)
            if owner is not None and not self._seen()(owner):
                raise UsageError(f"the name {name!r} is already used by a source outside "
                                 f"{self.workspace.describe()}; choose another name")
        paths = [boundary.given(self, p, self.workspace.root or project_dir()) for p in paths] if paths else paths
        if by_agent and paths:
            visible = self.visible_roots()
            registered = [p for _, p in self.store.sources() if visible is None or p in visible]
            project = self.workspace.root or project_dir()
            # Trigger: an agent in project A added a file of project B's docs/ that lay inside a
            # personal folder; it became a personal source, seen by every project.
            # Why: the agent rule above judged where the path lies, not whether A sees it.
            # Outcome: what an agent adds must be a path this workspace sees (services/boundary.py);
            # a hidden one is refused in the words a missing one gets.
            paths = [str(boundary.resolve(self, p, base=project))
                     for p in agent_sources(paths, project, registered)]
        within, paths = self._files_in_sources(paths or []) if not checkout else ([], paths)
        report = SyncReport() if within and not paths else self._sync(paths, progress, by_agent, name, checkout)
        for path, source, target in within:
            report.add((self.reindex_file(target) if path == target else self._sync([target], progress, by_agent,
                                                                                     None, False)) or SyncReport())
            report.notices.append(f"{path} lies in the source {source}: re-indexed there, not added as a "
                                  "source of its own" + (f" (the name {name!r} is not used)" if name else ""))
        return self._seen_problems(report) if by_agent else report

    def _sync(self, paths: list[str] | None, progress, by_agent: bool, name: str | None, checkout: bool) -> SyncReport:
        # Trigger: the model is recorded before the sync, not after it.
        # Why: a first index interrupted while embedding kept its vectors, yet `status` counted
        # them under the model of the last *finished* run (none) and said 0.
        # Outcome: `status` counts the vectors of the model this run embeds with, finished or not.
        # The fingerprint is known without loading the model: a sync with nothing to embed loads none.
        fingerprint = self.models.embed_fingerprint() or ""
        with self.store.transaction() as db:
            self.store.set_meta(db, "embed_model", fingerprint)
        from vault_index.engine import indexer

        scope_of = partial(self._scope_of, by_agent=by_agent)
        # Trigger: an agent's index_paths with no paths re-synced every workspace's sources and
        # counted their files in its answer (issue 36). Outcome: an agent re-syncs what it sees.
        seen = self._seen() if by_agent and not paths else None
        # an agent's folder that holds another workspace's source (B's docs/ inside ~/notes/B): those
        # notes are B's to index; the agent's sync neither touches nor counts them
        unseen = None
        if by_agent and paths:
            sees = boundary.seen(self, self.workspace.root or project_dir())
            unseen = lambda path: not sees(path)  # noqa: E731 - the walk gives real paths, as stored
        report = indexer.sync(self.store, self.models, paths or None, progress, name=name, checkout=checkout,
                              scope_of=scope_of, seen=seen, unseen=unseen)
        if fingerprint and not report.vector_used:  # the model could not load here: no vectors of it
            with self.store.transaction() as db:
                self.store.set_meta(db, "embed_model", "")
        self._claim_for_vaults(paths or [])
        return report

    def _files_in_sources(self, paths: list[str]) -> tuple[list[tuple[str, str, str]], list[str]]:
        """((path, its source's name, what to re-index) for each note of a folder source this workspace
        sees and each folder of a project's own source; the other paths). Trigger: `index NOTES/x.md`
        registered a new source, listed everywhere. A file its source's rules skip stays a source."""
        from vault_index.engine.files.sources import is_note_path, source_of

        seen, scopes = self._seen(), self.store.source_scopes()
        names = {p: n for n, p in self.store.source_names().items()}
        folders = [root for _, root in self.store.sources() if seen(root) and Path(root).is_dir()]
        within, rest = [], []
        for raw in paths:
            path = Path(raw).expanduser().resolve()
            found = source_of(str(path), folders) if path.exists() else None
            if found and path.is_dir() and found[0] != Path(real_path(found[1])) and scopes.get(str(found[1])):
                # synced in its project's source, never a personal one every project sees (walkthrough E)
                within.append((str(path), names.get(str(found[1]), str(found[1])), str(found[1])))
            elif found is not None and path.is_file() and is_note_path(found[0], Path(real_path(found[1]))):
                within.append((str(path), names.get(str(found[1]), str(found[1])), str(path)))
            else:
                rest.append(raw)
        return within, rest

    def _seen_problems(self, report: SyncReport) -> SyncReport:
        """`report` with only the problems of files this workspace sees: a re-sync of every source
        must not name another project's files to an agent."""
        sees, roots = self.sees_path(), self.visible_roots()
        if sees is None:
            return report
        report.problems = [(p, m) for p, m in report.problems if under_any(p, tuple(roots)) and sees(p)]
        return report

    def _claim_for_vaults(self, paths: list[str]) -> None:
        """A source already registered (say personal) that now lies in an init vault becomes the
        vault's: `index kb` then `init kb` left the vault seeing none of its notes, and every
        project seeing all of them."""
        scopes = self.store.source_scopes()
        for raw in paths:
            path = Path(raw).expanduser().resolve()
            vault = workspaces.vault_root(path)
            if vault is not None and scopes.get(str(path), str(vault)) != str(vault):
                self.store.set_source_scope(str(path), str(vault))

    def _scope_of(self, path: Path, *, by_agent: bool) -> str:
        """The workspace a new source at `path` joins. An agent's folder inside a source it sees
        keeps that source's workspace: a subfolder of the person's notes, added from one project,
        must not vanish from every other project (services/workspace.path_rule)."""
        if by_agent and workspaces.vault_root(path) is None:  # inside a vault: always the vault's
            scopes = self.store.source_scopes()
            holders = [r for r in scopes if self.workspace.sees(scopes[r]) and under_any(str(path), (r,))]
            if holders:
                return scopes[max(holders, key=len)]
        return self.workspace.scope_for(path, by_agent=by_agent)

    def reindex_file(self, path: str) -> SyncReport | None:
        """Re-index one written or edited file. A project's docs/ or notes/ that did not exist
        when the session adopted its folders (the first lesson makes docs/) is registered now:
        the note is found by the next search, not only in the next session."""
        from vault_index.engine import indexer

        report = indexer.reindex_file(self.store, self.models, path)
        if report is None and any(Path(path).is_relative_to(f) for f in self._unadopted_folders()):
            return self.adopt_workspace()
        return report

    def not_indexed_yet(self) -> list[Path]:
        """The project's own folders and README.md that no source covers yet (the first search or
        sync indexes them): what the server's instructions say instead of counting them as none."""
        return self._unadopted_own() + index_state.registered_unindexed(self)

    def _unadopted_folders(self) -> list[Path]:
        """What the project indexes by itself and has not registered yet."""
        return self._unadopted_own() + self._agent_memory_unadopted()

    def _unadopted_own(self) -> list[Path]:
        """The project's own folders and README.md that no visible source covers yet."""
        visible = [Path(p) for p in (self.visible_roots() or [p for _, p in self.store.sources()])]
        own = [*self.workspace.own_folders(), *filter(None, [self.workspace.readme()])]
        return [f for f in own if not any(f == root or root in f.parents for root in visible)]

    def _agent_memory_unadopted(self) -> list[Path]:
        """Other agents' memory folders of this project that are not yet sources of this project.

        Trigger: a personal source holding the project (a person indexed ~/code) covers memory-bank/.
        Why: covered, it would be searched in every workspace. Outcome: each such folder is a source
        of its own, of this project, and the deepest source decides (services/workspace.path_rule)."""
        scopes = self.store.source_scopes()
        return [f for _, f in self.workspace.agent_memory() if scopes.get(str(f)) != self.workspace.key]

    def _adopt_agent_memory(self) -> None:
        """Register each agent memory folder as this project's source, named by the project and its kind
        (`orders/claude-memory`, `orders/serena-memories`); one a person indexed becomes the project's."""
        from vault_index.engine.files.source_names import free_name, owned

        scopes = self.store.source_scopes()
        for kind, folder in self.workspace.agent_memory():
            if scopes.get(str(folder)) == "":
                self.store.set_source_scope(str(folder), self.workspace.key)
            elif str(folder) not in scopes:
                try:
                    key = self.workspace.key
                    name = free_name(owned(kind, key), key, set(self.store.source_names()))
                    self.store.add_source(str(folder), name, scope=self.workspace.key)
                except UsageError:  # the name was taken meanwhile (another process adopting): the default
                    self.store.add_source(str(folder), scope=self.workspace.key)

    def source_target(self, path: str) -> str:
        """The registered path `path` means: a source's path (as typed or resolved), else a source's
        name; anything else is returned unchanged (remove then says it is not a source)."""
        try:  # a path is matched as the boundary resolves it; a name (or a path it refuses) as given
            resolved = str(boundary.resolve(self, path, for_write=True)) if path else path
        except VaultIndexError:
            resolved = path
        seen = self._seen()
        known = {p for _, p in self.store.sources() if seen(p)}
        if resolved in known or path in known:
            return resolved if resolved in known else path
        named = self.store.source_names().get(path, path)
        return named if seen(named) else path

    def remove(self, path: str) -> int:
        """Unregister a source named by its path or its name; the path of one checkout of a source
        with several unregisters that checkout only (ADR 0019)."""
        target = self.source_target(path)
        if not self._seen()(target):
            raise NotFoundError(f"{path} is not a source of {self.workspace.describe()}")
        return self.store.remove_source(target)

    # --- the curated write path -------------------------------------------------------------

    def vault(self, root: Path | None = None) -> Vault:
        """The vault at `root` (default: the project folder); raises ConfigError on a bad config."""
        return Vault.open(root or project_dir())

    def writer(self, vault: Vault) -> WriteService:
        """The write service for `vault`, re-indexing each written file through this App."""
        from vault_index.services.writes.write import WriteService

        return WriteService(vault, reindex=lambda path: self.reindex_file(str(path)),
                            visible=boundary.seen(self, vault.root))

    # --- reads ------------------------------------------------------------------------------

    @property
    def default_mode(self) -> str:
        """hybrid, or hybrid+rerank when VAULT_RERANK=1 asks for it (search.DEFAULT_MODE says why)."""
        return RERANK_MODE if self.settings.rerank_default and self.models.rerank_enabled else DEFAULT_MODE

    def search(self, query: str, mode: str | None = None, limit: int = 10,
               filters: Filters | None = None, explain: bool = False, source: str | None = None,
               per_note: bool = PER_NOTE_DEFAULT, subqueries: SubQueries | None = None) -> SearchResult:
        """`mode` None: `default_mode`. `source`: a source name, resolved to its root as a path prefix
        (with `path_prefix`, both hold); `per_note`: one hit per note with its other matched sections
        (every surface's default), or chunks; `subqueries`: the calling agent's extra phrasings
        (services/search/subqueries.py)."""
        mode = mode or self.default_mode
        filters = self.search_filters(filters, source)
        if filters is None:  # the path prefix lies outside the named source: nothing can match
            return SearchResult(query, mode, False, False, ())
        waiting, total = index_state.waiting_in(self, filters and filters.path_prefix) \
            if mode in (DEFAULT_MODE, RERANK_MODE) else (0, 0)
        fallback = index_state.keyword_only_notice(waiting, total)  # most wait: keyword-only (ADR 0038)
        result = self.searcher.search(query, "keyword" if fallback else mode, limit, filters, explain, per_note,
                                      subqueries)
        notices = self.index_notices() + ([fallback] if fallback else [])
        if mode != "keyword" and mode != "grep":  # vectors were asked for: say what has none yet
            notices += self.pending_notices(vector_only=mode == "vector")
        if result.hits and result.confidence is not None and not result.relevant:
            notices.append(nothing_relevant(result.confidence, result.judged_by, waiting if result.vector_used else 0))
        if not result.hits and not self.store.chunk_count():
            notices.append(EMPTY_INDEX_NOTICE)
        return replace(result, notices=(*notices, *result.notices)) if notices else result

    def search_filters(self, filters: Filters | None, source: str | None = None) -> Filters | None:
        """`filters` as a search applies them: a relative path filter found (services/boundary.prefix),
        `source` as its root, the workspace's roots; None when nothing can match."""
        if filters is not None and filters.path_prefix:
            # found as every path is (services/boundary.prefix), or refused by name
            filters = replace(filters, path_prefix=boundary.prefix(self, filters.path_prefix))
        if source:
            filters = self._source_filters(filters or Filters(), source)
            if filters is None:
                return None
        visible = self.visible_roots()
        if visible is not None:
            filters = replace(filters or Filters(), scope_roots=tuple(visible), scope_allowed=self.sees_path())
        return filters or Filters()

    def why(self, query: str, path: str, **how) -> dict:
        """Where the note at `path` stands for `query`, and why it is not a hit (services/why.py):
        the one explainer of the CLI's --why, search_notes' `why` and the page's inspector."""
        from vault_index.services.why import why_not

        return why_not(self, query, path, **how)

    def _source_filters(self, filters: Filters, source: str) -> Filters | None:
        """`filters` narrowed to the named source's root; None when its path prefix excludes the source."""
        # only this workspace's names: the store's own error lists every source of the index
        seen = self._seen()
        names = {n: p for n, p in self.store.source_names().items() if seen(p)}
        found = names.get(source)
        if found is None:
            raise NotFoundError(f"no source is named {source!r} in {self.workspace.describe()}; "
                                f"sources: {', '.join(sorted(names)) or '(none)'}")
        root = Path(found)
        if not filters.path_prefix:
            return replace(filters, path_prefix=str(root))
        prefix = Path(filters.path_prefix.rstrip("/") or "/")
        if prefix == root or root in prefix.parents:
            return filters
        if prefix in root.parents:
            return replace(filters, path_prefix=str(root))
        return None

    def pending_notices(self, vector_only: bool = False) -> list[str]:
        """services/index_state.pending_notices: what a search with vectors could not use."""
        return index_state.pending_notices(self, vector_only)

    def sources(self, model: str | None = None) -> list[dict]:
        return index_state.sources(self, model)

    def files(self, source: str | None = None) -> list[dict]:
        return index_state.files(self, source)

    def status(self, probe_models: bool = False) -> dict:
        return index_state.status(self, probe_models)

    def index_notices(self) -> list[str]:
        """What the person must know about the index itself: rebuilt after damage, read-only."""
        notices = list(self.store.notices)
        rebuilt = self.store.recovery_notice()
        return notices + [rebuilt] if rebuilt else notices

    def roots(self) -> list[str]:
        """The root of every source this workspace sees."""
        visible = self.visible_roots()
        return [p for _, p in self.store.sources() if visible is None or p in visible]

    def get_note(self, path: str, start_line: int = 1, max_lines: int = MAX_NOTE_LINES) -> dict:
        """A note's text (a window of lines), only for files inside a registered source."""
        if start_line < 1 or not 1 <= max_lines <= MAX_NOTE_LINES:
            raise UsageError(f"start_line must be >= 1 and max_lines from 1 to {MAX_NOTE_LINES}")
        roots = self.roots()
        if not roots:
            raise NotFoundError("no sources are registered; index a folder first")
        real = boundary.resolve(self, path, served=True)  # missing and hidden: one answer
        raw = _read_served(real, roots, path)
        # An empty file is one empty line, as an editor shows it: every answer has
        # line_start <= line_end <= total_lines.
        lines = raw.split(b"\n")
        if len(lines) > 1 and not lines[-1]:
            lines.pop()
        total = len(lines)
        if start_line > total:
            raise UsageError(f"start_line {start_line} is past the end of {path}: it has {total} lines; "
                             f"ask for a start_line from 1 to {total}")
        window, size, cut = [], 0, False
        for raw_line in lines[start_line - 1 : start_line - 1 + max_lines]:
            line = raw_line.decode("utf-8", errors="replace").rstrip("\r")
            room = MAX_NOTE_CHARS - size
            if len(line) > room:  # the cap falls inside this line: show its start, if any room is left
                cut = True
                if room > 0:
                    window.append(line[:room])
                break
            window.append(line)
            size += len(line) + 1
        content = "\n".join(window)
        line_end = start_line + len(window) - 1
        record = self.store.file_record(str(real)) or {}
        return {
            "path": str(real), "title": record.get("title"), "indexed": bool(record),
            "frontmatter": record.get("frontmatter", {}), "line_start": start_line,
            "line_end": line_end, "total_lines": total,
            "truncated": line_end < total or cut, "content": content,
        }

def _read_served(real: Path, roots: list[str], asked: str) -> bytes:
    """The bytes of a note get_note may serve: opened once through engine/files/fileio (no link followed,
    regular file, one hard link), and refused where indexing would skip it (too big, binary).

    Trigger: the whole file is read, so a window answer needs a cap. Why: a 400 MB one-line file
    was read whole under the server's lock. Outcome: MAX_FILE_BYTES, the indexing cap, bounds it.
    """
    # The source is found from `real` as checked, never by resolving it again (that was the gap).
    root = next((r for r in map(boundary.real, roots) if real == r or r in real.parents), None)
    if root is None:
        raise NotFoundError(f"{asked} is not a file in the index sources")
    try:
        raw, info = read_note(root, real, MAX_FILE_BYTES)
    except NotFoundError:  # gone since it was resolved: the answer a missing note gets
        raise NotFoundError(boundary.unseen(asked)) from None
    except OSError as exc:
        raise NotFoundError(f"{asked} cannot be read ({exc.strerror or exc})") from exc
    if raw is None:
        raise UsageError(f"{asked} is {info.st_size:,} bytes, over the {MAX_FILE_BYTES:,} byte limit: "
                         "it is neither indexed nor served; open it in an editor")
    if looks_binary(raw):
        raise UsageError(f"{asked} is a binary file, not a note")
    return raw

