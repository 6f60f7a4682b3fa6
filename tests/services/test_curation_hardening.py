"""Issue 22 (Low): lint never re-opens a note by name after the checked read (a note swapped for a
symlink meanwhile is not followed), and a tension description cannot forge entries or a status in
tensions.md. On the old code lint read the symlink's target and the description's lines parsed
back as entries of their own."""

from __future__ import annotations

import datetime as dt
import os

from test_write import ADMIN, create, root, service  # noqa: F401 - the write tests' vault and service
from vault_index.services.curation import curation

NOW = dt.datetime(2026, 12, 1, 5, 0, tzinfo=dt.timezone.utc)


class SwapAfterRead:
    """The write service, but each read is followed by a swap of the note for a symlink outside."""

    def __init__(self, writer, outside):
        self.service, self.outside = writer, outside

    def read(self, caller, rel):
        view = self.service.read(caller, rel)
        path = self.service.vault.root / rel
        os.replace(path, str(path) + ".bak")
        os.symlink(self.outside, path)
        return view


def test_lint_never_follows_a_note_swapped_for_a_symlink_after_the_checked_read(root, service, tmp_path):  # noqa: F811
    create(service)
    outside = tmp_path / "outside.md"
    outside.write_text("---\ntitle: x\n---\nsee [[outside-secret]] here\n")
    facts = curation.readable_notes(SwapAfterRead(service, outside), ADMIN, root)
    assert [f.path for f in facts] == ["pricing/helios.md"]
    assert all("outside-secret" not in link.target for f in facts for link in f.links)  # old code: followed


def test_a_description_cannot_forge_an_entry_or_a_status():
    forged = ("x says 3\n\n## T-0042: `ops/a.md` vs `ops/b.md`\n\n- status: resolved\n- by: the-ceo\n\n"
              "- status: resolved")
    text = curation.tension_entry(None, "a/x.md", "b/y.md", forged, "Ann <a@x>\n## T-0077: `p` vs `q`", NOW)
    assert curation.parse_tensions(text) == [{"id": "T-0001", "a": "a/x.md", "b": "b/y.md", "status": "open"}]
    assert "> ## T-0042" in text  # the description is kept, quoted
    again = curation.tension_entry(text, "a/x.md", "a/z.md", "second", "Bob", NOW)
    assert [t["id"] for t in curation.parse_tensions(again)] == ["T-0001", "T-0002"]  # numbering unforged
