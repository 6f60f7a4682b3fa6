"""engine/files/local_paths.Roots: which root of each source is this machine's, and the one translation
between stored (canonical) paths and local ones (ADR 0019). Pure: folders are told, not looked at."""

from __future__ import annotations

from vault_index.engine.files.local_paths import Roots

ALICE, BOB, CAROL = "/home/alice/team-vault", "/home/bob/team-vault", "/srv/carol/team-vault"


def _roots(here: set[str]) -> Roots:
    return Roots([(1, ALICE), (2, "/home/bob/notes")],
                 [(1, 1, ALICE), (2, 1, BOB), (3, 1, CAROL), (4, 2, "/home/bob/notes")], exists=here.__contains__)


def test_paths_stay_as_stored_where_the_canonical_root_is_here():
    roots = _roots({ALICE, BOB})
    assert roots.shown == {1: ALICE, 2: "/home/bob/notes"} and roots.outbound == []
    assert roots.local(f"{ALICE}/a.md") == f"{ALICE}/a.md"
    assert roots.stored(f"{BOB}/a.md") == f"{ALICE}/a.md"  # any checkout's path means the stored note
    assert roots.here[1] == [ALICE, BOB]


def test_paths_move_under_the_first_checkout_here_and_only_at_folder_boundaries():
    roots = _roots({BOB, CAROL, "/home/bob/notes"})
    assert roots.shown[1] == BOB and roots.here[1] == [BOB, CAROL]
    assert roots.local(f"{ALICE}/x/a.md") == f"{BOB}/x/a.md" and roots.local(ALICE) == BOB
    assert roots.local(f"{ALICE}2/a.md") == f"{ALICE}2/a.md"  # a sibling folder is not under the root
    assert roots.stored(f"{CAROL}/x/a.md") == f"{ALICE}/x/a.md"
    assert roots.stored("/home/bob/notes/a.md") == "/home/bob/notes/a.md"  # a one-checkout source
    assert roots.under_checkout(f"{ALICE}/x/a.md", 3) == f"{CAROL}/x/a.md"
    assert roots.local(None) is None


def test_a_source_with_no_checkout_here_is_shown_as_stored():
    roots = _roots({"/home/bob/notes"})
    assert roots.shown[1] == ALICE and roots.here[1] == [] and roots.outbound == []
    assert roots.roots[ALICE] == [(ALICE, False), (BOB, False), (CAROL, False)]
