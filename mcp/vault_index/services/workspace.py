"""Which notes a process sees and may write: its workspace (docs/adr/0020-workspaces.md).

The rule, in two sentences: a process works in one workspace, found from CLAUDE_PROJECT_DIR (or
VAULT_PROJECT), else the working folder: the init vault it is in, else the project it is in,
else none. A project sees your personal notes (every folder you indexed from a terminal) plus its
own docs/, notes/, README.md, decision records (doc/adr/, adr/) and the memory other agents keep
for it (read-only: services/access/agent_memory.py), which it indexes by itself; a vault sees only
itself.

Every source in the one index names its workspace (`sources.scope`): '' for personal, else the
project's or vault's folder. This module only decides; the App applies it on every surface.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from vault_index import locations
from vault_index.services.access import agent_memory
from vault_index.services.curation.adr_series import LAYOUTS

VAULT_MARKER = (".vault-index", "config.yaml")  # what `vault-index init` makes
PROJECT_MARKERS = (".git", ".claude", ".mcp.json", "CLAUDE.md")  # a folder Claude Code would call a project
PROJECT_FOLDERS = ("docs", "notes")  # a project's own notes, indexed without being asked
# and its decision records where they lie outside those (adr-tools' doc/adr, adr/): walkthrough H's
# doc/adr series was never searched, so /adr could not find the record a new one repeats
RECORD_FOLDERS = tuple(layout for layout in LAYOUTS if layout.split("/")[0] not in PROJECT_FOLDERS)
README = "readme.md"  # the project's root README (any letter case): the one root file it indexes
PERSONAL, PROJECT, VAULT = "personal", "project", "vault"


@dataclass(frozen=True)
class Workspace:
    kind: str  # PERSONAL, PROJECT or VAULT
    root: Path | None = None  # the project's or vault's folder; None for personal
    tool_checkout: Path | None = field(default=None, compare=False)  # personal because it is vault-index's clone

    @property
    def key(self) -> str:
        """The `scope` its own sources carry ('' for personal)."""
        return str(self.root) if self.root is not None else ""

    def sees(self, scope: str) -> bool:
        """Whether a source of workspace `scope` is visible here."""
        if self.kind == VAULT:
            return scope == self.key
        return scope in ("", self.key)

    def scope_for(self, path: Path, *, by_agent: bool) -> str:
        """The workspace a new source at `path` joins: inside a vault, the vault's; an agent's
        additions, and a project's own folders, the project's; a person's `index`, personal."""
        vault = vault_root(path)
        if vault is not None:
            return str(vault)
        if self.kind == PROJECT and (by_agent or path in self.own_folders() or path == self.readme()
                                     or path in dict(self.agent_memory()).values()):
            return self.key
        return ""

    def own_folders(self) -> list[Path]:
        """The project's folders indexed without being asked (a vault is indexed by `init`)."""
        if self.kind != PROJECT or self.root is None:
            return []
        found = []
        for name in PROJECT_FOLDERS + RECORD_FOLDERS:
            folder = self.root
            for part in name.split("/"):  # each part a real folder: a link could lead out of the project
                folder = folder / part
                if folder.is_symlink() or not folder.is_dir():
                    break
            else:
                found.append(folder)
        return found

    def readme(self) -> Path | None:
        """The project's root README.md, a source of one file: the root's other files stay out."""
        if self.kind != PROJECT or self.root is None:
            return None
        try:
            names = sorted(e.name for e in os.scandir(self.root) if e.name.casefold() == README
                           and e.is_file(follow_symlinks=False))
        except OSError:
            return None
        return self.root / names[0] if names else None

    def agent_memory(self) -> list[tuple[str, Path]]:
        """(kind, folder) of each memory another agent keeps for this project, indexed read-only and
        seen in this project only (Claude Code's auto-memory, Cline's memory bank, Serena's)."""
        if self.kind != PROJECT or self.root is None:
            return []
        spelled = os.environ.get("VAULT_PROJECT") or os.environ.get("CLAUDE_PROJECT_DIR")
        spelled = spelled and os.path.abspath(os.path.expanduser(spelled))  # as Claude Code names its folder
        if spelled and os.path.realpath(spelled) != str(self.root):
            spelled = None  # named another folder than the one found (a subfolder of the project, say)
        found = {folder.resolve(): kind for kind, folder in agent_memory.folders(self.root, spelled)
                 if folder.is_dir() and not folder.is_symlink()}
        return [(kind, folder) for folder, kind in found.items()]

    def describe(self) -> str:
        if self.kind == VAULT:
            return f"the vault {self.root} (its notes only)"
        if self.kind == PROJECT:
            return (f"the project {self.root} (its docs/, notes/, README.md, decision records and other agents' "
                    "memory of it, plus your personal notes)")
        if self.tool_checkout is not None:
            return (f"your personal notes ({self.tool_checkout} is vault-index's own checkout, never a project: "
                    "its example vault stays out)")
        return "your personal notes (no project here)"


def served_root(workspace: Workspace, vault_root: str | Path | None = None) -> Path:
    """The folder a server serves (its vault config, where its notes are written, the vault its
    tokens are for): `vault_root` when given (--vault), else the workspace's vault, else the content
    folder (the project). `serve` and `token new` both ask here, so a token names the very folder."""
    from vault_index.config import content_dir

    if vault_root:
        return Path(vault_root).expanduser().resolve()
    return workspace.root if workspace.kind == VAULT and workspace.root is not None else content_dir()


def vault_root(path: Path) -> Path | None:
    """The init vault `path` lies in (the nearest folder with .vault-index/config.yaml), if any."""
    for folder in (path, *path.parents):
        if os.path.isfile(os.path.join(folder, *VAULT_MARKER)):
            return folder
    return None


def find(known: set[str] | frozenset[str] = frozenset(), start: str | Path | None = None) -> Workspace:
    """The workspace of this process. `known`: the project folders the index already holds sources
    for (so a terminal in a project Claude Code has opened finds it without a marker)."""
    explicit = locations.known_project()
    begin = Path(os.path.realpath(os.path.expanduser(str(start or explicit or os.getcwd()))))
    home = Path(os.path.realpath(os.path.expanduser("~")))
    for folder in (begin, *begin.parents):
        if folder == home or folder == Path(folder.anchor):
            break  # the home folder and / are never a project (a dotfiles repo is not one)
        if os.path.isfile(os.path.join(folder, *VAULT_MARKER)):
            return Workspace(VAULT, folder)
        if locations.is_tool_checkout(str(folder)):
            return Workspace(PERSONAL, tool_checkout=folder)  # a clone of vault-index: its content is the tool's
        if str(folder) in known or any(os.path.lexists(folder / m) for m in PROJECT_MARKERS):
            return Workspace(PROJECT, folder)
    if explicit and begin != home and begin != Path(begin.anchor):
        return Workspace(PROJECT, begin)  # Claude Code named it: a project even without a marker
    return Workspace(PERSONAL)


def path_rule(workspace: Workspace, scopes: dict[str, str]):
    """Whether `workspace` sees a path, given every source's path -> scope: the deepest source
    holding the path decides (a project's or vault's source nested in a personal folder stays its
    own); a path under no source goes by the deepest workspace folder holding it, and under none
    it is seen everywhere but in a vault. None when every source is seen (nothing to filter)."""
    if all(workspace.sees(scope) for scope in scopes.values()):
        return None
    sources = sorted(scopes, key=len, reverse=True)  # deepest first
    folders = sorted({s for s in scopes.values() if s} | ({workspace.key} - {""}), key=len, reverse=True)

    def sees(path: str | Path) -> bool:
        text = os.fspath(path)
        owner = next((s for s in sources if _holds(s, text)), None)
        if owner is not None:
            return workspace.sees(scopes[owner])
        folder = next((f for f in folders if _holds(f, text)), None)
        return workspace.sees(folder) if folder is not None else workspace.kind != VAULT

    return sees


def _holds(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def other_vault(root: str | Path, path: str) -> Path | None:
    """The init vault a note path (absolute, or relative to `root`) lies in when that is not
    `root`'s own: written through `root`'s write service it would skip that vault's roles."""
    raw = Path(os.path.expanduser(path))
    target = Path(os.path.normpath(raw if raw.is_absolute() else Path(root) / raw))
    if not target.is_relative_to(root):
        return None  # the write service refuses it as outside (no oracle for vaults elsewhere)
    found = vault_root(target)
    if found is None or Path(os.path.realpath(found)) == Path(os.path.realpath(root)):
        return None
    return found


def fact_rule(workspace: Workspace, scopes: dict[str, str]):
    """Whether `workspace` sees a graph fact from `path`: as path_rule for a path a source holds;
    under no source, seen in this workspace's own folder, hidden in another project or vault (its
    markers, as `find` reads them: a project with no docs/ still owns its facts), else seen
    everywhere but in a vault (a fact about nobody's files)."""
    notes = path_rule(workspace, scopes)
    sources = tuple(scopes)
    known = {s for s in scopes.values() if s}
    home = Path(os.path.realpath(os.path.expanduser("~")))

    @lru_cache(maxsize=4096)
    def elsewhere(folder: str) -> bool:
        for here in (Path(folder), *Path(folder).parents):
            if here == home or here == Path(here.anchor) or locations.is_tool_checkout(str(here)):
                return False
            if (str(here) in known or os.path.isfile(os.path.join(here, *VAULT_MARKER))
                    or any(os.path.lexists(here / m) for m in PROJECT_MARKERS)):
                return True
        return False

    def sees(path: str | Path) -> bool:
        text = os.fspath(path)
        if any(_holds(s, text) for s in sources):
            return notes is None or notes(text)
        if workspace.root is not None and _holds(str(workspace.root), text):
            return True
        return workspace.kind != VAULT and not elsewhere(os.path.dirname(text))

    return sees
