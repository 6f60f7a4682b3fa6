"""Which files are notes, and path containment for reads."""

from __future__ import annotations

import os

import pytest
from helpers import write
from vault_index.engine.files.sources import resolve_inside, walk_notes
from vault_index.errors import OutsideSourcesError


def _rel(root, paths):
    return sorted(p.relative_to(root).as_posix() for p in paths)


def test_walk_skips_secrets_hidden_and_non_note_files_and_honours_indexignore(tmp_path):
    root = tmp_path / "v"
    for rel in ("a.md", "b.markdown", "c.txt", "d.mdx", "sub/e.md", "img.png", "secrets/s.md", ".hidden/h.md",
                "node_modules/n.md", ".git/g.md", "drafts/x.md", "sub/tmp.md", "sub/keep.md"):
        write(root, rel, "# x\n")
    write(root, ".indexignore", "drafts/\n")
    write(root, "sub/.indexignore", "tmp.md\n")
    assert _rel(root, walk_notes(root)) == ["a.md", "b.markdown", "c.txt", "d.mdx", "sub/e.md", "sub/keep.md"]


def test_symlink_loop_terminates_and_each_note_is_seen_once(tmp_path):
    root = tmp_path / "v"
    write(root, "a.md", "# a\n")
    write(root, "inner/b.md", "# b\n")
    os.symlink(root, root / "inner" / "loop")  # dir symlink back to the source root
    os.symlink(root / "inner", root / "inner" / "self")  # dir symlink to its own parent
    found = list(walk_notes(root))
    assert sorted(os.path.realpath(p) for p in found) == sorted(
        [os.path.realpath(root / "a.md"), os.path.realpath(root / "inner" / "b.md")]
    )


def test_symlinks_that_leave_the_source_are_not_followed(tmp_path):
    root, outside = tmp_path / "v", tmp_path / "outside"
    write(root, "a.md", "# a\n")
    write(outside, "o.md", "# outside\n")
    os.symlink(outside, root / "outdir")
    os.symlink(outside / "o.md", root / "o-link.md")
    assert _rel(root, walk_notes(root)) == ["a.md"]


def test_resolve_inside_accepts_relative_and_absolute_paths_inside(tmp_path):
    root = tmp_path / "v"
    note = write(root, "sub/n.md", "# n\n")
    assert resolve_inside("sub/n.md", [str(root)]) == note.resolve()
    assert resolve_inside(str(note), [str(root)]) == note.resolve()
    assert resolve_inside("sub/../sub/n.md", [str(root)]) == note.resolve()


@pytest.mark.parametrize("path", ["../outside.md", "sub/../../outside.md", "secrets/k.md", ".hidden/h.md",
                                  "link-out.md", "a\x00.md"])
def test_resolve_inside_refuses_paths_that_leave_the_source_or_are_never_served(tmp_path, path):
    root = tmp_path / "v"
    write(root, "sub/n.md", "# n\n")
    write(root, "secrets/k.md", "secret\n")
    write(root, ".hidden/h.md", "hidden\n")
    outside = write(tmp_path, "outside.md", "outside\n")
    os.symlink(outside, root / "link-out.md")
    with pytest.raises(OutsideSourcesError):
        resolve_inside(path, [str(root)])
    with pytest.raises(OutsideSourcesError):
        resolve_inside(str(root / path) if "\x00" not in path else path, [str(root)])


def test_a_file_source_serves_only_itself(tmp_path):
    note = write(tmp_path, "single.md", "# s\n")
    write(tmp_path, "other.md", "# o\n")
    assert resolve_inside(str(note), [str(note)]) == note.resolve()
    with pytest.raises(OutsideSourcesError):
        resolve_inside(str(tmp_path / "other.md"), [str(note)])


def test_a_relative_path_is_looked_up_in_every_source(tmp_path):
    first, second = tmp_path / "a-first", tmp_path / "b-second"
    write(first, "only-in-first.md", "# 1\n")
    note = write(second, "sub/only-in-second.md", "# 2\n")
    roots = [str(first), str(second)]
    assert resolve_inside("sub/only-in-second.md", roots) == note.resolve()
    assert resolve_inside("only-in-first.md", roots) == (first / "only-in-first.md").resolve()
    missing = resolve_inside("nowhere.md", roots)  # inside, but no such file: the caller says "not found"
    assert missing == (first / "nowhere.md").resolve() and not missing.exists()
    with pytest.raises(OutsideSourcesError):
        resolve_inside("../outside.md", roots)
