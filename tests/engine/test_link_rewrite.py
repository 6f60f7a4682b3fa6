"""Which links a move rewrites, and how (engine/parsing/link_rewrite.py): pure text, the index's rule."""

from __future__ import annotations

from vault_index.engine.parsing.link_rewrite import plan

NOTES = {
    "a.md": "# A\n\nSee [[b]], [[b|the bee]], [[b#Part]] and ![[b]].\nAlso [bee](sub/b.md) and [x](./b.md#part), "
            "`[[b]]` in code.\n```\n[[b]]\n```\n[[c]] stays.\n",
    "sub/b.md": "---\ntitle: Bee note\nrelated: \"[[c]]\"\n---\n# Bee\n\nLinks [c](../c.md), [[c]] and [self](b.md).\n",
    "c.md": "---\nsuperseded_by: sub/b.md\nrelated:\n  - \"[[sub/b]]\"\naliases: [\"[[sub/b]]\"]\n---\n"
            "See [[Bee note]], [[sub/b]], [b](sub/b.md) and [b](%73ub/b.md).\n",
}


def rewritten(old="sub/b.md", new="other/deep/b b.md"):
    return {r.path: (r.text, r.links) for r in plan(NOTES, old, new)}


def test_links_by_file_name_path_and_markdown_follow_the_note():
    found = rewritten()
    text, count = found["a.md"]
    assert text.startswith("# A\n\nSee [[b b]], [[b b|the bee]], [[b b#Part]] and ![[b b]].\n"
                           "Also [bee](other/deep/b%20b.md) and [x](./b.md#part), `[[b]]` in code.\n```\n[[b]]\n```\n")
    assert count == 5  # ./b.md names no note (relative to a.md): it was unresolved and stays so


def test_frontmatter_link_fields_follow_and_other_fields_do_not():
    text, count = rewritten()["c.md"]
    assert "superseded_by: other/deep/b b.md\n" in text and '  - "[[other/deep/b b]]"\n' in text
    assert 'aliases: ["[[sub/b]]"]' in text  # aliases are names, not links
    # a title still names the note after the move; paths are rewritten; %-encoding is kept
    assert "See [[Bee note]], [[other/deep/b b]], [b](other/deep/b%20b.md) and [b](other/deep/b%20b.md).\n" in text
    assert count == 5


def test_the_moved_notes_own_relative_links_still_reach_their_notes():
    text, count = rewritten()["other/deep/b b.md"]
    assert "Links [c](../../c.md), [[c]] and [self](b%20b.md).\n" in text
    assert text.startswith("---\ntitle: Bee note\nrelated: \"[[c]]\"\n---\n")
    assert count == 2


def test_a_note_without_links_to_the_moved_one_is_not_in_the_plan():
    assert set(rewritten()) == {"a.md", "c.md", "other/deep/b b.md"}
    assert plan({"x.md": "[[y]]", "y.md": "", "z.md": "plain"}, "z.md", "w.md") == []


def test_a_bare_name_that_would_become_ambiguous_gets_the_path():
    notes = {"a.md": "[[b]]", "b.md": "# B", "deep/c.md": "other"}
    (change,) = [r for r in plan({**notes, "x/b.md": "# Another B"}, "b.md", "y/b.md") if r.path == "a.md"]
    assert change.text == "[[y/b]]"
