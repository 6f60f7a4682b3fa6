"""MCP resources: every indexed note, a template to name any note, and a guide to this memory.

- `vault-index://note/{+path}`: a note by its path relative to its source (or absolute, for a
  note whose relative path another source holds too; or any path get_note accepts). Reading one
  calls the get_note tool itself (surfaces/tools.py), so a resource answers exactly what get_note
  answers: the same grants, the same refusals with the same words (secrets, hidden, outside,
  missing), the same bounded window (MAX_NOTE_LINES lines, MAX_NOTE_CHARS characters).
- `vault-index://guide`: how to use this memory, built from the index state when read.
- resources/list pages through the notes the caller may read, PAGE_SIZE at a time (cursor).
- When the list changes (a source added or removed, notes created, deleted or renamed), the server
  says so with notifications/resources/list_changed after the next request it serves; on the
  2026-07-28 protocol the same event goes to subscriptions/listen streams.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.server.mcpserver.resources.templates import ResourceSecurity
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, ListResourcesResult, PaginatedRequestParams, Resource

from vault_index.services.app import MAX_NOTE_LINES, App

NOTE_TEMPLATE = "vault-index://note/{+path}"
GUIDE_URI = "vault-index://guide"
MARKDOWN = "text/markdown"
# Trigger: resources/list has no size limit of its own, and a vault can hold tens of thousands of
# notes. Why: a host that lists resources on connect should not receive megabytes at once.
# Outcome: pages of this many notes, the rest behind next_cursor (and the template for any path).
PAGE_SIZE = 100
LOCK_WAIT_S = 0.1
# Requests after which the list is not re-checked: they cannot change it and come often.
QUIET_METHODS = frozenset({"ping", "initialize", "resources/list", "resources/read", "prompts/list",
                           "prompts/get", "resources/templates/list", "tools/list", "completion/complete"})

ReadNote = Callable[..., Any]  # the get_note tool: (path, ctx, start_line, max_lines) -> NoteOut
ScopeOf = Callable[[Any], Any]  # Context -> the caller's Scope (services/access/access.py)


def note_uri(path: str) -> str:
    """The resource URI of a note path (relative to its source, or absolute).

    Every character but letters, digits, `-._~` and `/` is percent-encoded: the template's `{+path}`
    would leave `#`, `?` and `%` as they are, and a note named `q?.md` would not come back.
    """
    return NOTE_TEMPLATE.replace("{+path}", quote(path, safe="/"))


def listed_notes(app: App) -> list[tuple[str, str]]:
    """(real path, path for its URI) of every indexed note, in the order get_note looks them up:
    sources in the store's order, so a relative path names the note get_note would open."""
    seen: set[str] = set()
    twice: set[str] = set()
    listed: set[int] = set()
    notes = []
    visible, sees = app.visible_roots(), app.sees_path()  # this workspace's notes only (ADR 0020)
    for source_id, root in app.store.sources():
        if source_id in listed or (visible is not None and root not in visible):
            continue  # a further checkout of the source (listed once), or another workspace's
        listed.add(source_id)
        file_root = Path(root).is_file()
        for real in sorted(app.store.file_paths(source_id)):
            if sees is not None and not sees(real):
                continue
            rel = real if file_root else os.path.relpath(real, root)
            notes.append((real, rel))
            (twice if rel in seen else seen).add(rel)
    # a relative path two sources hold names both (services/boundary: an error): each goes by its real path
    return [(real, real if rel in twice or rel.startswith("..") else rel) for real, rel in notes]


def note_text(note) -> str:
    """The resource body: the note's window, and where it stops when the note is longer."""
    if not note.truncated:
        return note.content
    return (f"{note.content}\n\n<!-- vault-index: truncated after line {note.line_end} of {note.total_lines}; "
            f"get_note with start_line={note.line_end + 1} reads on -->")


def guide(app: App, lock: threading.Lock, full: bool = True) -> str:
    """A short page on this memory, from the index state (as the server instructions are).

    `full` False (a caller that may not read every collection): no source paths, no note count."""
    from vault_index.surfaces.cli_common import counted
    from vault_index.surfaces.prompts import commands

    prompts = "\n".join(f"- `{c.name}` ({c.argument}): {c.description}" for c in commands())
    if full:
        with lock:
            status = app.status()
        sources = "\n".join(f"- {s['path']}" for s in status["sources"][:20]) or "- none yet: call index_paths"
        more = len(status["sources"]) - 20
        search = "hybrid keyword + vector search" if status["vectors_live"] else "keyword search (no vectors yet)"
        waiting = ", ".join(map(str, app.not_indexed_yet()))  # not counted as none before the first search
        holds = ((f"Not indexed yet (the first search or recall indexes them): {waiting}.\n" if waiting else "")
                 + f"{counted(status['files'], 'markdown note')} in {counted(len(status['sources']), 'source')}, "
                 f"{search}:\n{sources}\n" + (f"- and {more} more (list_sources)\n" if more > 0 else ""))
    else:
        holds = "Markdown notes; `list_sources` shows the ones you may read.\n"
    return (
        "# Using this memory (vault-index)\n\n" + holds
        + "\nBefore answering about past work, decisions, people or lessons, search instead of guessing:\n"
        "`recall` (notes, lessons and the memory graph at once), then `search_notes`, each with `keywords` "
        "(the terms the notes would use) and a `hypothetical` answer (a sentence as a note might say it) "
        "beside the question; open a hit with `get_note` and cite its path and line.\n\n"
        f"Each note is a resource `{NOTE_TEMPLATE}` (path relative to its source, as search hits show "
        "it, or absolute); secrets, hidden files and paths outside the sources are never served.\n\n"
        f"Prompts (the same guidance as the Claude Code slash commands):\n{prompts}\n"
    )


def register_resources(server, app: App, *, read_note: ReadNote, scope_of: ScopeOf, lock: threading.Lock) -> None:
    """Add the note template, the guide, a paged resources/list and list_changed notices to `server`.

    `read_note` is the get_note tool function and `scope_of(ctx)` the caller's read scope, both
    from build_server, so resources never read a file or decide a grant on their own.
    """

    # Trigger: the SDK refuses `..` and absolute paths in template parameters with its own
    # "Unknown resource" message. Why: get_note already refuses every path outside the sources,
    # in its own words; two rule sets would answer the same path differently. Outcome: the path
    # goes to get_note unchecked here, and get_note's rules (and message) decide.
    @server.resource(NOTE_TEMPLATE, name="note", title="A note in the index", mime_type=MARKDOWN,
                     security=ResourceSecurity(exempt_params={"path"}),
                     description="A markdown note by its path relative to its source (or absolute); "
                                 f"at most {MAX_NOTE_LINES} lines, as get_note reads it.")
    def note(path: str, ctx: Context) -> str:
        try:
            return note_text(read_note(path=path, ctx=ctx, start_line=1, max_lines=MAX_NOTE_LINES))
        except ToolError as exc:  # the get_note refusal, word for word
            raise ResourceNotFoundError(str(exc)) from exc

    @server.resource(GUIDE_URI, name="guide", title="How to use this memory", mime_type=MARKDOWN,
                     description="What the index holds and how to search it; built from the index state.")
    def guide_page() -> str:
        # A static resource gets no Context (the SDK refuses one); the caller factories find the
        # role without it (stdio: the local person; HTTP: the request's token, a contextvar).
        try:
            full = scope_of(None).reads_all
        except ToolError:  # a broken config: the plain page
            full = False
        return guide(app, lock, full)

    def page(ctx: Context, cursor: str | None) -> ListResourcesResult:
        start = _offset(cursor)
        try:
            scope = scope_of(ctx)
        except ToolError:  # a broken vault config: nothing is readable until it is fixed
            scope = None
        with lock:
            notes = [n for n in listed_notes(app) if scope is not None and scope.can_read(n[0])]
            chosen = notes[start:start + PAGE_SIZE]
            titles = {real: (app.store.file_record(real) or {}).get("title") for real, _ in chosen}
        listed = [Resource(uri=GUIDE_URI, name="guide", title="How to use this memory", mime_type=MARKDOWN)
                  ] if start == 0 else []
        listed += [Resource(uri=note_uri(shown), name=shown, title=titles.get(real) or None, mime_type=MARKDOWN)
                   for real, shown in chosen]
        following = start + PAGE_SIZE
        return ListResourcesResult(resources=listed, next_cursor=str(following) if following < len(notes) else None)

    async def list_resources(request_ctx, params: PaginatedRequestParams | None) -> ListResourcesResult:
        ctx = Context(request_context=request_ctx, mcp_server=server)
        return await anyio.to_thread.run_sync(page, ctx, params.cursor if params else None)

    # Trigger: MCPServer answers resources/list with every registered resource and ignores the
    # cursor. Why: our notes are not registered one by one (they change while the server runs).
    # Outcome: our own handler on the low-level server, paged; the SDK's template and read
    # handlers stay in place. tests/surfaces/test_prompts_resources.py fails if this seam moves.
    server._lowlevel_server.add_request_handler("resources/list", PaginatedRequestParams, list_resources)
    server.middleware.append(_ListChanges(app, lock, server))


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit() or len(cursor) > 9:
        raise MCPError(code=INVALID_PARAMS, message="invalid cursor: pass back the next_cursor resources/list gave")
    return int(cursor)


class _ListChanges:
    """Middleware that tells the client when the note list changed (held state: the last list seen).

    A cheap key (sources and the index generation) is read after each request that could change
    things; only when it moves is the whole list hashed, so an edited note (generation moves, list
    does not) sends nothing. Changes made by another process or the watcher are seen at the next
    request: there is no timer.
    """

    def __init__(self, app: App, lock: threading.Lock, server):
        self.app, self.lock, self.server = app, lock, server
        with lock:
            self.key, self.digest = self._key(), self._digest()

    def _key(self) -> tuple:
        return tuple(self.app.store.sources()), self.app.store.generation()

    def _digest(self) -> str:
        return hashlib.sha256("\n".join(uri for _, uri in listed_notes(self.app)).encode()).hexdigest()

    def changed(self) -> bool:
        # Trigger: a search can hold the shared connection for seconds (the first one loads the
        # model). Why: waiting here would delay the answer of the request that just finished.
        # Outcome: a busy connection skips this check; the next request makes it.
        if not self.lock.acquire(timeout=LOCK_WAIT_S):
            return False
        try:
            key = self._key()
            if key == self.key:
                return False
            self.key, digest = key, self._digest()
            moved, self.digest = digest != self.digest, digest
            return moved
        finally:
            self.lock.release()

    async def __call__(self, ctx, call_next):
        result = await call_next(ctx)
        if ctx.request_id is not None and ctx.method not in QUIET_METHODS:
            if await anyio.to_thread.run_sync(self.changed):
                await _notify(ctx, self.server)
        return result


async def _notify(ctx, server) -> None:
    """notifications/resources/list_changed on the handshake era; the subscriptions bus on the
    2026-07-28 era (where the SDK drops the bare notification, as the spec asks)."""
    from mcp.server.subscriptions import ResourcesListChanged

    try:
        await ctx.session.send_resource_list_changed()
    except Exception:  # noqa: BLE001 - a closed stream: the client is gone, nothing to tell
        pass
    bus = getattr(server, "_subscriptions", None)  # MCPServer's bus; ctx.notify_* needs a tool context
    if bus is not None:
        await bus.publish(ResourcesListChanged())
