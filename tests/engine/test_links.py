"""Link extraction and the one resolution rule, as a table run through both users of the rule:
lint's in-memory lookup and the index (real SQLite, real indexer), plus renames and deletes."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import FakeEmbedder, write
from vault_index.engine.parsing import links as L

NOTES = {
    "index.md": "---\ntitle: Home\nrelated: ['[[Glossary]]']\nsupersedes: projects/alpha/notes\n---\n# Home\n",
    "projects/alpha/plan.md": "---\ntitle: Alpha plan\naliases: [Project Alpha]\n---\n# Alpha plan\n\n## Risks\n",
    "projects/alpha/notes.md": "---\ntitle: Alpha notes\n---\n# Alpha notes\n",
    "projects/beta/notes.md": "---\ntitle: Beta notes\n---\n# Beta notes\n",
    "ref/glossary.md": "---\ntitle: Glossary\n---\n# Glossary\n",
    "misc/Zebra-Facts.md": "---\ntitle: Striped horses\n---\n# Striped horses\n",
    "team/one/meeting.md": "---\ntitle: Weekly sync\n---\n# Weekly sync\n",
    "team/two/meeting-b.md": "---\ntitle: Weekly sync\n---\n# Weekly sync\n",
}

# (linking note, link as written, status, target, rule, fragment)
TABLE = [
    ("index.md", "[[Alpha plan]]", "resolved", "projects/alpha/plan.md", "name", ""),
    ("index.md", "[[project alpha]]", "resolved", "projects/alpha/plan.md", "name", ""),  # alias, other case
    ("index.md", "[[Alpha plan#Risks]]", "resolved", "projects/alpha/plan.md", "name", "Risks"),
    ("index.md", "[[Alpha plan#^b1]]", "resolved", "projects/alpha/plan.md", "name", "^b1"),
    ("index.md", "[[Alpha plan|the plan]]", "resolved", "projects/alpha/plan.md", "name", ""),
    ("index.md", "![[Glossary]]", "resolved", "ref/glossary.md", "name", ""),
    ("projects/alpha/plan.md", "[[notes]]", "resolved", "projects/alpha/notes.md", "relative", ""),
    ("index.md", "[[notes]]", "ambiguous", None, "file", ""),  # alpha/notes and beta/notes
    ("projects/alpha/plan.md", "[[../beta/notes]]", "resolved", "projects/beta/notes.md", "relative", ""),
    ("projects/alpha/plan.md", "[[projects/beta/notes]]", "resolved", "projects/beta/notes.md", "root", ""),
    ("projects/alpha/plan.md", "[[/ref/glossary.md]]", "resolved", "ref/glossary.md", "root", ""),
    ("projects/alpha/plan.md", "[b](../beta/notes.md#Top)", "resolved", "projects/beta/notes.md", "relative", "Top"),
    ("index.md", "[[zebra-facts]]", "resolved", "misc/Zebra-Facts.md", "file", ""),  # file name, case differs
    ("index.md", "[[ZEBRA-FACTS]]", "resolved", "misc/Zebra-Facts.md", "file", ""),
    ("index.md", "[[Weekly sync]]", "ambiguous", None, "name", ""),  # two notes share a title
    ("index.md", "[[missing]]", "unresolved", None, "", ""),
    ("projects/alpha/plan.md", "[[../../../outside]]", "unresolved", None, "", ""),  # leaves the vault
]


def build(root: Path) -> None:
    for rel, text in NOTES.items():
        write(root, rel, text)


def test_extract_forms_and_code_is_not_a_link():
    text = ("---\ntitle: T\nrelated: ['[[a]]', 'https://example.org']\nsources: [free text, '[[b]]']\n---\n"
            "x [[c|C]] ![[d#H]] [[e#^blk]] [m](f.md) [u](https://g) [img](h.png) [[#local]]\n"
            "inline `[[no1]]` and ``[[no2]]``\n```\n[[no3]]\n```\n~~~~\n[[no4]]\n~~~~\n    after [[i]]\n")
    found = L.extract(text, {"related": ["[[a]]", "https://example.org"], "sources": ["free text", "[[b]]"]},
                      L.body_start(text))
    assert [(x.target, x.kind, x.line, x.fragment) for x in found] == [
        ("b", "provenance", 4, ""), ("a", "related", 3, ""),
        ("c", "wikilink", 6, ""), ("d", "embed", 6, "H"), ("e", "wikilink", 6, "^blk"),
        ("f.md", "markdown", 6, ""), ("i", "wikilink", 14, "")]


def _first_link(source: str, written: str) -> L.Link:
    text = f"# x\n\n{written}\n"
    (link,) = L.extract(text, {}, 0)
    return link


@pytest.mark.parametrize(("source", "written", "status", "target", "rule", "fragment"), TABLE)
def test_resolution_table_in_memory(source, written, status, target, rule, fragment):
    from vault_index.engine.parsing.parse import parse_note

    names = [(rel, L.note_names(rel, parse_note(rel, t).frontmatter, parse_note(rel, t).title))
             for rel, t in NOTES.items()]
    link = _first_link(source, written)
    found = L.resolve(link.target, source, "", L.memory_lookup(names))
    assert (found.status, found.target, found.rule, link.fragment) == (status, target, rule, fragment)
    if status == "ambiguous":
        assert len(found.candidates) == 2


def test_resolution_table_in_the_index(tmp_path, open_app):
    root = tmp_path / "v"
    build(root)
    for number, (_source, written, *_rest) in enumerate(TABLE):
        write(root, f"probe/{number:02d}.md", f"# probe {number}\n\n{written}\n")
    app = open_app(FakeEmbedder())
    app.index([str(root)])
    real = Path(root).resolve()
    for number, (source, written, status, target, _rule, fragment) in enumerate(TABLE):
        if source != "index.md":
            continue  # the index resolves from the probe's own folder: only root-level rows carry over
        (edge,) = app.store.links("outgoing", str(real / f"probe/{number:02d}.md"))
        expected = str(real / target) if target else None
        assert (edge["status"], edge["target"], edge["fragment"]) == (status, expected, fragment), written
    # the rows written from a subfolder: as real links of the note they are written in
    plan = real / "projects/alpha/plan.md"
    text = NOTES["projects/alpha/plan.md"] + "".join(
        f"{w}\n" for s, w, *_ in TABLE if s == "projects/alpha/plan.md")
    plan.write_text(text)
    app.index()
    edges = app.store.links("outgoing", str(plan))
    expected = [(st, str(real / t) if t else None) for s, _w, st, t, *_ in TABLE if s == "projects/alpha/plan.md"]
    assert [(e["status"], e["target"]) for e in edges] == expected


def test_rename_and_delete_reresolve(tmp_path, open_app):
    root = tmp_path / "v"
    build(root)
    write(root, "linker.md", "# Linker\n\n[[Alpha plan]] and [[zebra-facts]] and [[glossary]]\n")
    app = open_app(FakeEmbedder())
    app.index([str(root)])
    real = Path(root).resolve()
    linker = str(real / "linker.md")

    def targets():
        return [(e["raw"], e["status"], e["target"]) for e in app.store.links("outgoing", linker)]

    assert [t[1] for t in targets()] == ["resolved"] * 3
    (real / "projects/alpha/plan.md").rename(real / "projects/alpha/roadmap.md")  # title unchanged
    (real / "misc/Zebra-Facts.md").rename(real / "misc/stripes.md")  # linked by file name only
    app.index()
    assert targets() == [("Alpha plan", "resolved", str(real / "projects/alpha/roadmap.md")),
                         ("zebra-facts", "unresolved", None),
                         ("glossary", "resolved", str(real / "ref/glossary.md"))]
    (real / "ref/glossary.md").unlink()
    app.index()
    assert targets()[2] == ("glossary", "unresolved", None)
    write(real, "ref/new/Glossary.md", "# Glossary\n")  # a note answering the name again
    app.index()
    assert targets()[2] == ("glossary", "resolved", str(real / "ref/new/Glossary.md"))
    assert [b["path"] for b in app.store.links("backlinks", str(real / "ref/new/Glossary.md"))] == \
        [str(real / "index.md"), linker]


# Where two steps of the rule would name different notes, the earlier step decides, and a step that
# names several notes ends the search (it does not fall through to a step that would find one).
PRECEDENCE_NOTES = {
    "a/plan.md": "---\ntitle: Plan\n---\n# Plan\n",
    "a/notes.md": "---\ntitle: Plan notes\n---\n# Plan notes\n",       # [[notes]] relative to a/plan.md
    "z/summary.md": "---\ntitle: Summary\naliases: [notes]\n---\n# Summary\n",  # ... and by alias
    "a/ref/guide.md": "---\ntitle: Near guide\n---\n# Near guide\n",   # [[ref/guide]] relative
    "ref/guide.md": "---\ntitle: Root guide\n---\n# Root guide\n",     # ... and from the root
    "x/one.md": "---\ntitle: Shared\n---\n# Shared\n",
    "y/two.md": "---\ntitle: Shared\n---\n# Shared\n",
    "w/shared.md": "---\ntitle: Other\n---\n# Other\n",                # the unique file name 'shared'
    "c/Guide.md": "---\ntitle: Upper\n---\n# Upper\n",                 # two files, one name but for case
    "c/guide.md": "---\ntitle: Lower\n---\n# Lower\n",
}
# (link as written from a/plan.md, status, target, rule)
PRECEDENCE = [
    ("[[notes]]", "resolved", "z/summary.md", "name"),           # name before relative and file
    ("[[ref/guide]]", "resolved", "a/ref/guide.md", "relative"),  # relative before root
    ("[[/ref/guide]]", "resolved", "ref/guide.md", "root"),       # a leading / skips relative
    ("[[Shared]]", "ambiguous", None, "name"),                    # not on to the unique file name
    ("[[c/guide]]", "ambiguous", None, "root"),                   # case-insensitive: both files
]


def test_earlier_steps_win_and_ambiguity_stops_the_search(tmp_path, open_app):
    from vault_index.engine.parsing.parse import parse_note

    parsed = {rel: parse_note(rel, text) for rel, text in PRECEDENCE_NOTES.items()}
    lookup = L.memory_lookup((rel, L.note_names(rel, p.frontmatter, p.title)) for rel, p in parsed.items())
    for written, status, target, rule in PRECEDENCE:
        found = L.resolve(_first_link("a/plan.md", written).target, "a/plan.md", "", lookup)
        assert (found.status, found.target, found.rule) == (status, target, rule), written
    root = tmp_path / "v"
    for rel, text in PRECEDENCE_NOTES.items():
        write(root, rel, text + ("".join(f"{w}\n" for w, *_ in PRECEDENCE) if rel == "a/plan.md" else ""))
    if len(list((root / "c").iterdir())) < 2:
        pytest.skip("a case-insensitive file system cannot hold c/Guide.md beside c/guide.md")
    app = open_app(FakeEmbedder())
    app.index([str(root)])
    real = root.resolve()
    edges = app.store.links("outgoing", str(real / "a/plan.md"))
    assert [(e["status"], e["target"]) for e in edges] == \
        [(status, str(real / target) if target else None) for _w, status, target, _r in PRECEDENCE]
