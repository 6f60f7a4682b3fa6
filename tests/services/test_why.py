"""The miss explainer (services/why.py): each verdict, from the same pipeline as every hit."""

from __future__ import annotations

import os

import pytest
from helpers import write
from vault_index.services.search import fusion
from vault_index.services.search.search import Filters


@pytest.fixture
def indexed(vault, open_app, fake_embedder):
    write(vault, "ignored/skip.md", "# Skip\n\nbrake pads again\n")
    write(vault, ".indexignore", "ignored/\n")
    write(vault, "empty.md", "")
    app = open_app(fake_embedder)
    app.index([str(vault)])
    return app


def test_a_hit_is_ranked_with_both_sides_places(indexed, vault):
    why = indexed.why("brake pads groove", str(vault / "bike.md"))
    assert why["verdict"] == "ranked" and why["rank"] == 1
    assert why["keyword"]["rank"] == 1 and why["keyword"]["heading"].endswith("Brakes")
    assert why["vector"]["rank"] is not None and why["vector"]["score"] is not None


def test_a_limit_of_one_puts_the_second_note_below_the_limit(indexed, vault):
    hits = indexed.search("brake pads compost starter", limit=3).hits
    second = hits[1].path
    why = indexed.why("brake pads compost starter", second, limit=1)
    assert why["verdict"] == "below_limit" and why["rank"] == 2


def test_a_filtered_note_names_the_filter(indexed, vault):
    why = indexed.why("brake pads", str(vault / "bike.md"), filters=Filters(tags=("garden",)))
    assert why["verdict"] == "filtered" and why["kind"] == "tag"
    why = indexed.why("brake pads", "bike.md", filters=Filters(path_prefix=str(vault / "kitchen")))
    assert why["verdict"] == "filtered" and why["kind"] == "path"


def test_a_note_outranked_on_both_sides(vault, open_app, fake_embedder):
    for n in range(fusion.CANDIDATES_PER_SIDE + 10):  # more chunks that say the words than either cut-off
        write(vault, f"many/brakes-{n:03}.md", f"# Brakes {n}\n\nbrake pads brake pads groove brake {n}\n")
    write(vault, "far.md", "# Far\n\nThe hydraulic lever, and once a brake.\n" + "filler words here. " * 200)
    app = open_app(fake_embedder)
    app.index([str(vault)])
    why = app.why("brake pads groove", str(vault / "far.md"))
    assert why["verdict"] == "outranked"
    assert why["keyword"]["rank"] > fusion.CANDIDATES_PER_SIDE
    assert why["vector"]["rank"] is None or why["vector"]["rank"] > fusion.CANDIDATES_PER_SIDE
    assert "both sides" in why["reason"]


@pytest.mark.parametrize("rel, kind", [("secrets/keys.md", "secret"), ("ignored/skip.md", "ignored"),
                                       (".hidden/notes.md", "ignored"), ("empty.md", "no_chunk")])
def test_a_note_the_index_never_holds(indexed, vault, rel, kind):
    why = indexed.why("brake pads", str(vault / rel))
    assert why["verdict"] == "not_indexed" and why["kind"] == kind


def test_a_note_the_sync_could_not_read_is_said_so(vault, open_app, fake_embedder):
    broken = vault / "broken.md"
    broken.write_bytes(b"# Broken\n\x00\x01brake pads\n")  # binary: the sync records a problem for it
    app = open_app(fake_embedder)
    app.index([str(vault)])
    why = app.why("brake pads", str(broken))
    assert why["verdict"] == "not_indexed" and why["kind"] == "unreadable"
    assert any(path == str(broken) for path, _ in app.store.problems())


def test_a_note_without_read_permission_is_said_so(vault, open_app, fake_embedder):
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    locked = write(vault, "locked.md", "# Locked\n\nbrake pads\n")
    locked.chmod(0)
    app = open_app(fake_embedder)
    app.index([str(vault)])
    assert app.why("brake pads", str(locked))["kind"] == "unreadable"


def test_a_note_not_yet_indexed(indexed, vault):
    late = write(vault, "late.md", "# Late\n\nbrake pads\n")
    why = indexed.why("brake pads", str(late))
    assert why["verdict"] == "not_indexed" and why["kind"] == "not_yet"


def test_missing_and_ungranted_notes_answer_alike(indexed, vault):
    missing = indexed.why("brake pads", str(vault / "nope.md"))
    assert missing["verdict"] == "not_found"
    denied = indexed.why("brake pads", str(vault / "bike.md"),
                         filters=Filters(granted_prefixes=(str(vault / "kitchen"),)))
    assert denied["verdict"] == "not_found"
    assert denied["reason"] == missing["reason"].replace("nope.md", "bike.md")
