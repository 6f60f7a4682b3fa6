"""Which files of a source are notes: skip rules, `.indexignore`, and safe path containment."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pathspec

from vault_index.errors import OutsideSourcesError

NOTE_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".txt"})
# Never indexed, never served, whatever the ignore files say.
ALWAYS_SKIPPED_DIRS = frozenset({"secrets", ".git", ".obsidian", "node_modules", "__pycache__"})
IGNORE_FILE = ".indexignore"


def is_skipped_part(part: str) -> bool:
    return part in ALWAYS_SKIPPED_DIRS or part.startswith(".")


def walk_notes(root: Path) -> Iterator[Path]:
    """Yield note files under `root` (a resolved directory), honouring skip rules.

    Symlinks are followed only while they stay inside the root, and each real directory is read
    once, so a symlink loop ends instead of recursing forever.
    """
    seen_dirs: set[str] = set()
    specs: list[tuple[Path, pathspec.GitIgnoreSpec]] = []

    def ignored(path: Path, is_dir: bool) -> bool:
        for base, spec in specs:
            try:
                rel = path.relative_to(base).as_posix()
            except ValueError:
                continue
            if spec.match_file(rel + ("/" if is_dir else "")):
                return True
        return False

    def visit(directory: Path) -> Iterator[Path]:
        real = os.path.realpath(directory)
        if real in seen_dirs or not _inside(Path(real), root):
            return
        seen_dirs.add(real)
        ignore_file = directory / IGNORE_FILE
        pushed = False
        if ignore_file.is_file():
            try:
                lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
                specs.append((directory, pathspec.GitIgnoreSpec.from_lines(lines)))
                pushed = True
            except OSError:
                pass
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            entries = []
        for entry in entries:
            path = Path(entry.path)
            if is_skipped_part(entry.name):
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
                is_file = entry.is_file(follow_symlinks=True)
            except OSError:
                continue
            if is_dir:
                if not ignored(path, True):
                    yield from visit(path)
            elif is_file and path.suffix.lower() in NOTE_SUFFIXES and not ignored(path, False):
                if entry.is_symlink() and not _inside(Path(os.path.realpath(path)), root):
                    continue
                yield path
        if pushed:
            specs.pop()

    yield from visit(root)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def resolve_inside(path: str, roots: list[str]) -> Path:
    """Resolve `path` (absolute, or relative to a source) to a file inside a registered source.

    Refuses anything that leaves every source (`../`, absolute paths elsewhere, symlinks out)
    and anything under a skipped folder such as `secrets/`.
    """
    if "\x00" in path:
        raise OutsideSourcesError("path contains a NUL byte")
    candidates = [Path(path)] if os.path.isabs(path) else [Path(r) / path for r in roots]
    first_inside: Path | None = None  # a relative path is looked up in every source, in order
    for candidate in candidates:
        real = Path(os.path.realpath(candidate))
        for root in roots:
            root_real = Path(os.path.realpath(root))
            if root_real.is_file():
                if real == root_real:
                    return real
                continue
            if _inside(real, root_real):
                rel_parts = real.relative_to(root_real).parts
                if any(is_skipped_part(p) for p in rel_parts):
                    raise OutsideSourcesError(f"{path} is in a folder that is never served")
                if real.exists():
                    return real
                first_inside = first_inside or real
    if first_inside is not None:
        return first_inside
    raise OutsideSourcesError(
        f"{path} is outside every registered source; `vault-index sources` lists them"
    )
