"""What each page of the web page shows, from the App and the services (surfaces/web.py serves them).

Every read goes through the caller's grants and the workspace, as search_notes and get_note do:
a search filters with access.granted_filters, a note is found by services/boundary.resolve and
refused with the missing note's words when hidden or not granted, counts come only from notes
the caller may read, and the index's own state only for a caller who reads every collection.
Writes (revert, promote) go through the write service as the signed-in person.
"""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

from vault_index.errors import VaultIndexError
from vault_index.services import boundary
from vault_index.services.search.search import MODES, Filters
from vault_index.surfaces.cli_common import outcome_line

TEMPLATES = Path(__file__).parent / "web_templates"
HITS = 10  # hits a search page shows


class Pages:
    """The page handlers over one App; its connection is used under `lock`, off the event loop."""

    def __init__(self, app):
        import jinja2
        from markdown_it import MarkdownIt

        self.app, self.lock = app, threading.Lock()
        self.env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                                      trim_blocks=True, lstrip_blocks=True)
        self.markdown = MarkdownIt("commonmark", {"html": False})  # a note's raw HTML is shown as text

    def render(self, template: str, **data) -> str:
        return self.env.get_template(template).render(modes=MODES, **data)

    async def run(self, fn, session, params: dict):
        import anyio

        def locked():
            with self.lock:
                return fn(session.principal, {k: str(v) for k, v in params.items()})

        return await anyio.to_thread.run_sync(locked)

    # --- pages (GET): (template, data, status) -------------------------------------------------

    def search(self, who, params: dict):
        from vault_index.services.access.access import granted_filters
        from vault_index.services.curation import curation

        query, why = params.get("q", "").strip(), params.get("why", "").strip()
        mode = params.get("mode") or None
        mode = mode if mode in MODES else None
        tags = tuple(t.strip() for t in params.get("tag", "").split(",") if t.strip())
        filters = granted_filters(Filters(params.get("path") or None, tags, params.get("status") or None,
                                          params.get("collection") or None), who.scope)
        data = {"title": "Search", "params": params, "result": None, "why": None, "problem": "", "decays": {}}
        if not query:
            return "search.html", data, 200
        try:
            result = self.app.search(query, mode, HITS, filters, explain=True)
            if why:
                data["why"] = self.app.why(query, why, mode=mode, limit=HITS, filters=filters)
        except VaultIndexError as exc:
            data["problem"] = str(exc)
            return "search.html", data, 400
        today, fraction = dt.date.today(), curation.aging_fraction(who.vault)
        data["decays"] = {h.path: curation.indexed_decay(self.app.store, h.path, today, fraction) for h in result.hits}
        data["result"] = result
        return "search.html", data, 200

    def note(self, who, params: dict):
        from vault_index.services.curation import curation, health
        from vault_index.services.graph.linkgraph import note_links

        asked = params.get("path", "")
        try:
            real = boundary.resolve(self.app, asked, served=True)
            if not who.scope.can_read(real):
                raise VaultIndexError(boundary.unseen(asked))
            shown = self.app.get_note(str(real))
        except VaultIndexError as exc:  # missing, hidden and not granted: one answer
            return "message.html", {"title": "No such note", "message": str(exc)}, 404
        can_read = who.scope.can_read
        links = {d: self._links(note_links, d, str(real), can_read) for d in ("links", "backlinks")}
        root = Path(who.vault.root).resolve()
        rel = real.relative_to(root).as_posix() if real.is_relative_to(root) else None
        history = health.note_history(who.vault, rel) if rel else health.file_history(real)
        lint = []
        if rel:
            notes = curation.readable_notes(self.app.writer(who.vault), who.caller, root)
            lint = [i for i in curation.lint_notes(notes, dt.date.today()) if i["path"] == rel]
        today, fraction = dt.date.today(), curation.aging_fraction(who.vault)
        body = _body(shown["content"])
        return "note.html", {
            "title": shown.get("title") or real.name, "note": shown, "html": self.markdown.render(body),
            "links": links, "history": history, "lint": lint, "rel": rel, "path": str(real),
            "decay": curation.indexed_decay(self.app.store, str(real), today, fraction),
        }, 200

    def _links(self, note_links, direction: str, path: str, can_read) -> list[dict]:
        try:
            return note_links(self.app, direction, path, can_read=can_read, limit=100)["results"]
        except VaultIndexError:
            return []

    def health(self, who, params: dict):
        from vault_index.services.curation import health

        if not who.scope.reads_any:
            return "message.html", {"title": "Health", "message": "your role reads no collection"}, 403
        data = health.health(self.app, self.app.writer(who.vault), who.vault, who.caller, who.scope)
        return "health.html", {"title": "Health", **data}, 200

    def review(self, who, params: dict):
        from vault_index.services.curation import curation, health

        root = Path(who.vault.root).resolve()
        writes = health.writes(who.vault, who.scope)
        for write in writes:
            write["can_revert"] = who.may("write", str(root / write["path"]))
        notes = curation.readable_notes(self.app.writer(who.vault), who.caller, root) if who.scope.reads_any else []
        drafts = [{"path": n.path, "title": n.title, "version": _version(root, n.path),
                   "can_promote": who.may("promote", str(root / n.path))}
                  for n in notes if n.frontmatter.get("status") == "draft"]
        done, status = params.get("done", ""), params.get("status", "")
        return "review.html", {"title": "Review", "writes": writes, "drafts": drafts, "status": status,
                               "done": outcome_line(status, done) if done else ""}, 200  # the CLI's line

    # --- actions (POST): (page, query) of the page to go back to -------------------------------

    def revert(self, who, form: dict):
        from vault_index.services.writes import revert

        path, commit = form.get("path", ""), form.get("commit", "")
        outcome = revert.revert(self.app.writer(who.vault), who.caller, path, commit, form.get("version") or None)
        return "review", {"status": outcome.status, "done": outcome.message}

    def promote(self, who, form: dict):
        from vault_index.services.writes.write_types import WriteRequest

        request = WriteRequest("promote", form.get("path", ""), base_version=form.get("version") or None,
                               reason="promoted on the web page")
        outcome = self.app.writer(who.vault).write(who.caller, request)
        return "review", {"status": outcome.status, "done": outcome.message}


def _body(text: str) -> str:
    """The note without its frontmatter block (the page shows the fields as a table)."""
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            return text[end + 4:].lstrip("\n")
    return text


def _version(root: Path, rel: str) -> str | None:
    from vault_index.services.writes.revert import current_version

    return current_version(root, rel)
