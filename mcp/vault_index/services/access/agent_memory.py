"""Other agents' memory: folders another coding agent keeps for a project, read here, never written.

A project's workspace indexes them like its own docs/ (services/workspace.py decides that and their
scope), and every write path refuses a target inside one (services/writes/write.py asks `refusal`),
so vault-index never edits what Claude Code, Cline or Serena will read back as their own memory:

- `claude-memory`: Claude Code's auto-memory, `~/.claude/projects/<project path encoded>/memory/`
  (the encoding: every character of the absolute path that is not a letter or digit becomes `-`);
  nothing else under ~/.claude is read;
- `memory-bank`: Cline's memory bank, `memory-bank/` at the project's root;
- `serena-memories`: Serena's memories, `.serena/memories/` at the project's root (the walk skips
  hidden folders; this one is registered as a source of its own, so no other hidden folder is).

The write refusal goes by the shape of the path alone (no project needed to know it): inside
`~/.claude/projects/*/memory/`, or inside a folder named `memory-bank` or `.serena/memories`
wherever it lies. A refusal there costs little; a write there corrupts another agent's memory.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from vault_index.engine.files.sources import folded_name

CLAUDE_MEMORY, MEMORY_BANK, SERENA_MEMORIES = "claude-memory", "memory-bank", "serena-memories"
OWNERS = {CLAUDE_MEMORY: "Claude Code's auto-memory", MEMORY_BANK: "Cline's memory bank",
          SERENA_MEMORIES: "Serena's memories"}
IN_PROJECT = ((MEMORY_BANK, ("memory-bank",)), (SERENA_MEMORIES, (".serena", "memories")))
CLAUDE_PROJECTS = (".claude", "projects")  # under HOME: one folder per project, named by its encoded path


def claude_folder_name(project: str | os.PathLike) -> str:
    """The folder Claude Code keeps a project's sessions and memory in: `/work/my.proj` -> `-work-my-proj`."""
    return re.sub(r"[^A-Za-z0-9]", "-", os.fspath(project))


def claude_memory(project: str | os.PathLike) -> Path:
    return Path(os.path.expanduser("~"), *CLAUDE_PROJECTS, claude_folder_name(project), "memory")


def folders(project: Path, spelled: str | None = None) -> list[tuple[str, Path]]:
    """(kind, folder) of each agent memory a project may have, whether it exists or not. `spelled`:
    the project's path as Claude Code was given it, when that differs from `project` (a symlink)."""
    found = [(CLAUDE_MEMORY, claude_memory(name)) for name in dict.fromkeys([str(project), spelled or str(project)])]
    return found + [(kind, project.joinpath(*parts)) for kind, parts in IN_PROJECT]


def kind_of(path: str | os.PathLike) -> str | None:
    """Which agent's memory `path` (absolute) lies in, or is, judged from its shape; None for none."""
    real = Path(os.path.realpath(path))
    claude = Path(os.path.realpath(Path(os.path.expanduser("~"), *CLAUDE_PROJECTS)))
    if real.is_relative_to(claude):
        rel = real.relative_to(claude).parts
        return CLAUDE_MEMORY if len(rel) >= 2 and rel[1] == "memory" else None
    parts = [folded_name(part) for part in real.parts]
    for kind, shape in IN_PROJECT:
        if any(tuple(parts[i:i + len(shape)]) == shape for i in range(len(parts))):
            return kind
    return None


def refusal(path: str | os.PathLike, shown: str | None = None) -> str | None:
    """The message a write to `path` (absolute; `shown` as the caller wrote it) is refused with, or
    None when it is no agent's memory."""
    kind = kind_of(path)
    if kind is None:
        return None
    return (f"{shown or path} is in {OWNERS[kind]} ({kind}): another agent's memory, read-only here; vault-index "
            "searches it but never writes it. Write the note in the project's docs/ or notes/ instead")
