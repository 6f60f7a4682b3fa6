"""Source names (ADR 0012): a short handle for a registered folder, for `--source` and `remove`.

A folder inside its workspace's folder (a project's docs/, notes/, doc/adr/) is named
`<project>/<folder>` (`orders/doc-adr` when deeper), and a project's agent memory
`<project>/<kind>`: named by their base names alone, six projects' docs were `docs`, `docs-2`
... `docs-6` in `sources`, and nobody could tell which was which (issue 39).
"""

from __future__ import annotations

import re
from pathlib import Path

from vault_index.errors import UsageError

MAX_NAME_CHARS = 64
# One word of letters, digits, '.', '_', '-', or two joined by '/' (`orders/docs`).
SOURCE_NAME = re.compile(rf"(?=.{{1,{MAX_NAME_CHARS}}}$)[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)?")


def _word(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")[:60]


def default_name(path: str, scope: str = "") -> str:
    """A folder's base name reduced to the allowed characters (a source name when none is given);
    `<workspace>/<folder>` for a folder inside its workspace's folder `scope`, its parts joined by
    '-' when deeper (`orders/doc-adr`: walkthrough I saw `adr-2` for a second project's doc/adr)."""
    base = _word(Path(path).name) or "source"
    if scope and Path(path).is_relative_to(scope) and Path(path) != Path(scope):
        return owned(_word("-".join(Path(path).relative_to(scope).parts)) or base, scope)
    return base


MAX_ANCESTORS = 3  # folders above a workspace that may tell two of the same name apart


def owned(word: str, scope: str, above: int = 0) -> str:
    """`<workspace>/<word>` within MAX_NAME_CHARS (`orders/serena-memories`), with the names of `above`
    folders over the workspace's in front (`x2-svc/docs`); `word` when the workspace's name has no
    allowed character."""
    word = word[:MAX_NAME_CHARS - 2]
    owner = _word(Path(scope).name)
    parents = [name for p in Path(scope).parents if (name := _word(p.name))][:above]
    if owner:
        owner = "-".join([*reversed(parents), owner])
    owner = owner[: MAX_NAME_CHARS - len(word) - 1]
    return f"{owner}/{word}" if owner else word


def free_name(name: str, scope: str, taken: set[str]) -> str:
    """`name` (a default_name or `owned` one), unique among `taken`: a project in a folder of the
    same name as another's is told by the folders above it (`x2-svc/docs`, `x3-x2-svc/docs`) before a
    number is added (walkthroughs J, K: `svc/docs-2`, which `--source svc/docs` there did not find)."""
    if scope and "/" in name and name.startswith(owned("", scope)):
        word = name.split("/", 1)[1]
        for above in range(1, MAX_ANCESTORS + 1):
            longer = owned(word, scope, above)
            if name not in taken or longer == owned(word, scope, above - 1):  # none taken, or no folder above
                break
            name = longer
    return unique_name(name, taken)


def unique_name(base: str, taken: set[str]) -> str:
    """`base`, or `base-2`, `base-3`, ... when another source already uses it."""
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    return name


def check_name(name: str) -> str:
    if not SOURCE_NAME.fullmatch(name):
        raise UsageError(f"source name {name!r}: use 1-64 letters, digits, '-', '_' or '.' (one '/' may join two "
                         "such words, as in orders/docs)")
    return name


def fill_missing(db) -> None:
    """Give every unnamed source its default name (a rebuilt index registers paths only)."""
    taken = {n for (n,) in db.execute("SELECT name FROM sources WHERE name IS NOT NULL")}
    for source_id, path in db.execute("SELECT id, path FROM sources WHERE name IS NULL ORDER BY id").fetchall():
        name = unique_name(default_name(path), taken)
        taken.add(name)
        db.execute("UPDATE sources SET name = ? WHERE id = ?", (name, source_id))
