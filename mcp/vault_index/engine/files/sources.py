"""Which files of a source are notes: skip rules, `.indexignore`, and safe path containment.

One set of rules serves the folder walk, the single-file re-index and `get_note`, so a file that
is never indexed is never served either.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from vault_index.errors import NotFoundError, OutsideSourcesError

NOTE_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".txt"})
# Never indexed, never served, whatever the ignore files say. Compared in any letter case (see
# folded_name): on macOS and Windows `Secrets/` and `secrets/` are the same folder.
ALWAYS_SKIPPED_DIRS = frozenset({"secrets", ".git", ".obsidian", "node_modules", "__pycache__"})
IGNORE_FILE = ".indexignore"
TEMPLATE_FOLDER_NAMES = frozenset({"templates", "_templates"})  # at a source's root: note templates
# Obsidian settings that name where templates live: (file under the vault root, JSON key).
OBSIDIAN_TEMPLATE_SETTINGS = (
    (".obsidian/templates.json", "folder"),
    (".obsidian/plugins/templater-obsidian/data.json", "templates_folder"),
    (".obsidian/daily-notes.json", "template"),
)
MAX_SETTINGS_BYTES = 1_000_000
MAX_IGNORE_FILE_BYTES = 1_000_000  # an .indexignore larger than this is not a list of patterns
BINARY_SNIFF_BYTES = 8192  # a NUL byte in a file's first 8 KB marks it binary, not a note

if TYPE_CHECKING:  # pathspec loads only where a folder has an ignore file: the skip rules below
    import pathspec  # stay importable on a bare python3 (scripts/adr.py links records there)

_Specs = list[tuple[Path, "pathspec.GitIgnoreSpec"]]


REALPATH_TRIES = 3  # a path swapped between lstat and readlink makes realpath fail; it settles fast


def real_path(path: str | os.PathLike) -> str:
    """os.path.realpath that survives a path being swapped while it is resolved.

    Trigger: realpath lstat()s a name, sees a link, then readlink() fails (EINVAL, ENOENT) when
    the link was replaced by a file meanwhile. Why: that race raised a raw OSError out of
    get_note and the edit hook. Outcome: retried a few times, then NotFoundError.
    """
    for _ in range(REALPATH_TRIES - 1):
        try:
            return os.path.realpath(path)
        except OSError:
            continue
    try:
        return os.path.realpath(path)
    except OSError as exc:
        raise NotFoundError(f"{path} changed while it was being looked up; try again") from exc


def looks_binary(head: bytes) -> bool:
    """`head`: the file's first bytes (at least BINARY_SNIFF_BYTES where the file has them)."""
    return b"\x00" in head[:BINARY_SNIFF_BYTES]


def folded_name(part: str) -> str:
    """A name as a case-insensitive file system compares it (roughly): `SECRETS`, `Secrets `
    and `ｓｅｃｒｅｔｓ` all fold to `secrets`.

    Trigger: the skip rule compared names exactly. Why: on macOS and Windows `Secrets/` is the
    folder `secrets/`, and Windows drops trailing dots and spaces. Outcome: NFKC, casefold, and
    trailing dots and spaces stripped; folding more names than the file system does only skips
    more, never less.
    """
    return unicodedata.normalize("NFKC", part).casefold().rstrip(". ")


def is_skipped_part(part: str) -> bool:
    return part.startswith(".") or folded_name(part) in ALWAYS_SKIPPED_DIRS


def check_source_path(path: Path) -> None:
    """Refuse a source that is itself hidden or secret (`~/.ssh`, `vault/Secrets`), or that lies
    inside a secrets or tooling folder (`vault/secrets/x`, `repo/.git/x`, `node_modules/x`).

    A hidden folder ABOVE the source is the person's choice (`~/.local/share/notes`,
    `~/.cache/x`): they named it. Hidden folders BELOW a source stay skipped by the walk. Whether
    an agent may name the path at all is decided before this, in services/access/boundaries.py.
    """
    named = path.parts[1:]
    if (named and is_skipped_part(named[-1])) or any(folded_name(part) in ALWAYS_SKIPPED_DIRS for part in named):
        raise OutsideSourcesError(
            f"{path} is or lies in a hidden, secrets or tooling folder; vault-index never indexes those"
        )
    if path.is_file() and path.suffix.lower() not in NOTE_SUFFIXES:
        raise NotFoundError(f"{path} is not a markdown or text file ({', '.join(sorted(NOTE_SUFFIXES))})")


def _load_spec(directory: Path) -> pathspec.GitIgnoreSpec | None:
    raw = _read_ignore_file(directory / IGNORE_FILE)
    if raw is None:
        return None
    lines = raw.decode("utf-8", errors="replace").splitlines()
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _read_ignore_file(path: Path) -> bytes | None:
    """The ignore file's bytes, or None; never blocks on a FIFO named `.indexignore`.

    Unlike a note, a linked ignore file is honoured: its patterns are never served, and not
    applying them would index (and serve) the very files it excludes.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_IGNORE_FILE_BYTES:
            return None
        return os.read(fd, MAX_IGNORE_FILE_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)


def template_paths(root: Path) -> tuple[frozenset[str], frozenset[str]]:
    """(folders, files) under `root` that hold note templates, as folded root-relative paths.

    Trigger: Obsidian keeps templates (`{{date}}` placeholders, empty headings) in a folder.
    Why: indexed as notes they answer searches with blanks and double every daily-note heading.
    Outcome: `templates/` and `_templates/` at the source's root, the folder named in
    `.obsidian/templates.json` (core Templates) and in Templater's settings, and the file named
    as the daily-note template in `.obsidian/daily-notes.json` are skipped like `.indexignore`d
    paths. A settings file that cannot be read or parsed names nothing.
    """
    if not root.is_dir():
        return frozenset(), frozenset()
    folders = {name for name in TEMPLATE_FOLDER_NAMES}
    files: set[str] = set()
    for settings_file, key in OBSIDIAN_TEMPLATE_SETTINGS:
        named = _json_setting(root / settings_file, key)
        if not named:
            continue
        if settings_file.endswith("daily-notes.json"):
            files.add(folded_path(named if named.lower().endswith(".md") else named + ".md"))
        else:
            folders.add(folded_path(named))
    return frozenset(folders), frozenset(files)


def folded_path(relative: str) -> str:
    """A root-relative path compared the way the file system may (any letter case, either slash)."""
    return "/".join(folded_name(part) for part in relative.replace("\\", "/").strip("/").split("/") if part)


def _json_setting(path: Path, key: str) -> str | None:
    """A string setting from a small JSON settings file; None for anything odd (never raises)."""
    import json
    import stat as stat_module

    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)  # no link, no FIFO wait
    try:
        fd = os.open(path, flags)
        try:
            info = os.fstat(fd)
            if not stat_module.S_ISREG(info.st_mode) or info.st_size > MAX_SETTINGS_BYTES:
                return None
            value = json.loads(os.read(fd, MAX_SETTINGS_BYTES).decode("utf-8")).get(key)
        finally:
            os.close(fd)
    except (OSError, ValueError, AttributeError):
        return None
    return value.strip() if isinstance(value, str) and value.strip() else None


def _is_template(path: Path, root: Path, templates: tuple[frozenset[str], frozenset[str]], is_dir: bool) -> bool:
    if not (templates[0] if is_dir else templates[1]):
        return False  # no template folder or file configured (most vaults): nothing to compare
    try:
        rel = folded_path(path.relative_to(root).as_posix())
    except ValueError:
        return False
    folders, files = templates
    return rel in folders if is_dir else rel in files


def _ignored(path: Path, is_dir: bool, specs: _Specs) -> bool:
    for base, spec in specs:
        try:
            rel = path.relative_to(base).as_posix()
        except ValueError:
            continue
        if spec.match_file(rel + ("/" if is_dir else "")):
            return True
    return False


def is_note_path(path: Path, root: Path) -> bool:
    """Whether the walk of `root` would index `path` (suffix, skipped folders, ignore files)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return False
    if path.suffix.lower() not in NOTE_SUFFIXES or any(is_skipped_part(p) for p in rel.parts):
        return False
    templates = template_paths(root)
    if _is_template(path, root, templates, False) or any(
            _is_template(folder, root, templates, True) for folder in path.parents if folder != root):
        return False
    specs: _Specs = []
    directory = root
    for part in rel.parts[:-1]:
        spec = _load_spec(directory)
        if spec is not None:
            specs.append((directory, spec))
        directory = directory / part
        if _ignored(directory, True, specs):
            return False
    spec = _load_spec(directory)
    if spec is not None:
        specs.append((directory, spec))
    return not _ignored(path, False, specs)


def walk_notes(root: Path, unreadable: list[Path] | None = None) -> Iterator[Path]:
    """walk_note_paths as Path objects."""
    return map(Path, walk_note_paths(root, unreadable))


def walk_note_paths(root: Path, unreadable: list[Path] | None = None) -> Iterator[str]:
    """Yield the paths of the note files under `root` (a resolved directory), honouring skip rules.

    Files are yielded by their real path (symlinks resolved), once each: that path is the key a
    note has in the index, whichever way it was reached. Symlinks are followed only while they
    stay inside the root, and each real directory is read once, so a symlink loop ends instead of
    recursing forever. Folders that cannot be listed are appended to `unreadable`, so the caller
    can keep (not drop) what it indexed there before. Strings, not Paths: building 20,000 Path
    objects was 40% of the walk, and a sync needs a Path only for a note that changed (issue 26).
    """
    seen_dirs: set[str] = set()
    seen_files: set[str] = set()
    specs: _Specs = []
    templates = template_paths(root)

    def visit(directory: Path) -> Iterator[str]:
        try:
            real = real_path(directory)
        except NotFoundError:  # swapped while we looked: the next sync sees what settles
            return
        if real in seen_dirs or not _inside(Path(real), root):
            return
        seen_dirs.add(real)
        spec = _load_spec(directory)
        if spec is not None:
            specs.append((directory, spec))
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            entries = []
            if unreadable is not None:
                unreadable.append(directory)
        for entry in entries:
            if is_skipped_part(entry.name):
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
                is_file = not is_dir and entry.is_file(follow_symlinks=True)
            except OSError:
                continue
            if is_dir:
                path = Path(entry.path)
                if not _ignored(path, True, specs) and not _is_template(path, root, templates, True):
                    yield from visit(path)
                continue
            if not is_file or os.path.splitext(entry.name)[1].lower() not in NOTE_SUFFIXES:
                continue
            if specs or templates[1]:  # an ignore file or a template setting: they need the path
                path = Path(entry.path)
                if _ignored(path, False, specs) or _is_template(path, root, templates, False):
                    continue
            # A plain file's real path is its real folder's (checked inside the root above) plus its
            # name: no realpath call (a syscall per path component; it tripled the no-change re-sync
            # at 100k notes) and no second containment check.
            linked = entry.is_symlink()
            try:
                real_file = real_path(Path(entry.path)) if linked else os.path.join(real, entry.name)
            except NotFoundError:
                continue
            if real_file in seen_files or (linked and not _inside(Path(real_file), root)):
                continue
            seen_files.add(real_file)
            yield real_file
        if spec is not None:
            specs.pop()

    yield from visit(root)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def source_of(path: str, roots: list[str]) -> tuple[Path, Path] | None:
    """(real path of the file, its source root) for a path inside a source, else None; the deepest
    source holding it when sources nest (a project's docs/ inside a personal folder), as the
    workspace rule decides (services/workspace.path_rule).

    The real path is the key the folder walk gives the note, so an edit reported through a
    linked folder updates the same row.
    """
    real = Path(real_path(path))
    for root in sorted(roots, key=lambda r: len(Path(real_path(r)).parts), reverse=True):
        root_path = Path(root)
        if _inside(real, Path(real_path(root))):
            return real, root_path
    return None


def resolve_inside(path: str, roots: list[str]) -> Path:
    """Resolve `path` (absolute, or relative to a source) to a note inside a registered source.

    Refuses anything that leaves every source (`../`, absolute paths elsewhere, symlinks out),
    anything under a skipped folder such as `secrets/`, files `.indexignore` excludes and files
    that are not notes: what is never indexed is never served.
    """
    if "\x00" in path:
        raise OutsideSourcesError("path contains a NUL byte")
    candidates = [Path(path)] if os.path.isabs(path) else [Path(r) / path for r in roots]
    first_inside: Path | None = None  # a relative path is looked up in every source, in order
    # the deepest source holding the file judges it: .serena/memories/x.md is a note of that source,
    # though the walk of a folder holding the whole project skips .serena
    reals = sorted((Path(real_path(root)) for root in roots), key=lambda r: len(r.parts), reverse=True)
    for candidate in candidates:
        real = Path(real_path(candidate))
        for root_real in reals:
            if root_real.is_file():
                if real == root_real:
                    return real
                continue
            if _inside(real, root_real):
                if not is_note_path(real, root_real):
                    raise OutsideSourcesError(
                        f"{path} is never served: it is hidden, under secrets/, excluded by "
                        ".indexignore, or not a note (.md, .markdown, .mdx, .txt)"
                    )
                if real.exists():
                    return real
                first_inside = first_inside or real
    if first_inside is not None:
        return first_inside
    raise OutsideSourcesError(
        f"{path} is outside every registered source; `vault-index sources` lists them"
    )
