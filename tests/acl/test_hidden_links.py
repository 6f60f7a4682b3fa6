"""Issue 22 (Medium): note_links(direction=links) must not tell a limited role which names exist in
collections it cannot read: a link to a hidden note reads exactly like a link to a missing one.
On the old code the hidden link was left out while the missing one was listed as unresolved."""

from __future__ import annotations

from helpers import write
from test_acl_matrix import app, call_as, note, vault  # noqa: F401 - the matrix's fixtures and client


def test_a_hidden_target_and_a_missing_one_read_the_same(app, vault, tmp_path):  # noqa: F811
    write(vault, "alpha/mixed.md", note("mixed", "see [[beta-one]] and [[gamma-none]]"))
    app.index([str(vault)])
    rows = {}
    for role in ("alpha_reader", "admin"):
        (result,) = call_as(app, vault, role, [("note_links", {"direction": "links", "path": "alpha/mixed.md"})],
                            tmp_path)
        rows[role] = {r["raw"]: r for r in result.structured_content["data"]["results"]}
    assert rows["admin"]["beta-one"]["target"] is not None  # the admin sees it resolve
    hidden, missing = rows["alpha_reader"]["beta-one"], rows["alpha_reader"]["gamma-none"]
    assert hidden["target"] is None and missing["target"] is None
    same_shape = {k: v for k, v in hidden.items() if k not in ("raw", "line")}
    assert same_shape == {k: v for k, v in missing.items() if k not in ("raw", "line")}


def test_a_name_shared_with_a_hidden_note_is_not_ambiguous_for_the_limited_role(app, vault, tmp_path):  # noqa: F811
    write(vault, "alpha/dup.md", note("dup", "the alpha one"))
    write(vault, "beta/dup.md", note("dup", "the hidden one"))
    write(vault, "alpha/asks.md", note("asks", "see [[dup]]"))
    app.index([str(vault)])
    seen = {}
    for role in ("alpha_reader", "admin"):
        (result,) = call_as(app, vault, role, [("note_links", {"direction": "links", "path": "alpha/asks.md"})],
                            tmp_path)
        (seen[role],) = result.structured_content["data"]["results"]
    assert seen["admin"]["status"] == "ambiguous"
    # as if beta/dup.md did not exist: old code said "ambiguous", telling of a hidden note named dup
    assert seen["alpha_reader"]["status"] == "resolved"
    assert seen["alpha_reader"]["target"] == str(vault / "alpha" / "dup.md")
