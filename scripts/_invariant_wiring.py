"""Invariants about the wiring: the declared MCP server and the hooks (checks 1-3).

Shared by scripts/invariants.py: the Result every check returns and the Context that knows where
the wiring lives (a clone's .mcp.json and .claude/settings.json, or a plugin's own manifests).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from vault_index.config import Settings

SERVER_NAME = "vault-index"
EXPECTED_TOOLS = ("search_notes", "recall")
# event -> (script the hook must run, tools its matcher must cover)
EXPECTED_HOOKS = {
    "SessionStart": ("invariants", ()),
    "PostToolUse": ("reindex_hook", ("Write", "Edit")),
    "UserPromptSubmit": ("context_guard", ()),
    "PreCompact": ("precompact_snapshot", ()),
    "Stop": ("capture_hook", ()),
}
LAUNCH_TIMEOUT_S = 10.0  # the server answers in about 1.2 s here; a cold disk can take a few more
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass
class Result:
    id: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""
    seconds: float = 0.0


@dataclass
class Context:
    project: Path
    plugin_root: Path | None = None
    plugin_data: Path | None = None
    settings: Settings = field(default_factory=Settings.from_env)

    @cached_property
    def graph_report(self) -> tuple[int, list[str]]:
        """(facts, problems) of the memory file, read once for the two graph checks."""
        from vault_index.services.graph import graph

        return graph.inspect_graph(self.memory_file, [self.project])

    @property
    def mode(self) -> str:
        return "plugin" if self.plugin_root else "project"

    def expand(self, text: str, strict: bool = True) -> str:
        """${VAR} and ${VAR:-default} as Claude Code expands them in MCP and hook configs."""
        env = dict(os.environ)
        if self.plugin_root:
            env.update(CLAUDE_PLUGIN_ROOT=str(self.plugin_root), CLAUDE_PLUGIN_DATA=str(self.plugin_data))
        env.setdefault("CLAUDE_PROJECT_DIR", str(self.project))

        def one(match: re.Match) -> str:
            name, default = match.group(1), match.group(2)
            if env.get(name):
                return env[name]
            if default is not None:
                return default
            if strict:
                raise KeyError(f"${{{name}}} is not set and has no default")
            return match.group(0)

        text = _VAR.sub(one, text)
        return re.sub(r"\$(CLAUDE_[A-Z_]+)\b", lambda m: env.get(m.group(1), m.group(0)), text)

    @cached_property
    def server(self) -> tuple[dict | None, str]:
        """(the declared vault-index server, or None; where it was looked for / the problem)."""
        if self.plugin_root:
            where = self.plugin_root / ".claude-plugin" / "plugin.json"
            servers = _read_json(where).get("mcpServers")
            if isinstance(servers, str):  # a path to an .mcp.json-shaped file
                where = self.plugin_root / servers
                servers = _read_json(where).get("mcpServers", _read_json(where))
        else:
            # `claude mcp add` (the README's line for another project) writes Claude Code's own
            # config, not .mcp.json: that server is this project's too (issue 39, the walkthrough).
            # Of one name, Claude Code starts the local entry, then the project's, then the user's.
            config_file, _ = _claude_files()
            config = _read_json(config_file)
            where = self.project / ".mcp.json"
            for scope, holder in (("local", _project_entry(config, self.project.resolve())),
                                  ("project", _read_json(where)), ("user", config)):
                found = holder.get("mcpServers") if isinstance(holder, dict) else None
                if isinstance(found, dict) and isinstance(found.get(SERVER_NAME), dict):
                    return found[SERVER_NAME], (str(where) if scope == "project"
                                                else f"{config_file} (`claude mcp add`, {scope} scope)")
            servers = None
        entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
        return (entry if isinstance(entry, dict) else None), str(where)

    @cached_property
    def launch(self) -> tuple[list[str], dict]:
        entry, _ = self.server
        command = [self.expand(str(entry.get("command", "")))] + [self.expand(str(a)) for a in entry.get("args", [])]
        env = dict(os.environ)
        env.update({k: self.expand(str(v)) for k, v in (entry.get("env") or {}).items()})
        if self.plugin_root:
            env.update(CLAUDE_PLUGIN_ROOT=str(self.plugin_root), CLAUDE_PLUGIN_DATA=str(self.plugin_data))
        return command, env

    @cached_property
    def memory_file(self) -> Path:
        """The graph file the declared server is told to use, else the configured default."""
        entry, _ = self.server
        args = list((entry or {}).get("args", []))
        if "--memory-file" in args[:-1]:
            try:
                return Path(self.expand(str(args[args.index("--memory-file") + 1]))).expanduser()
            except KeyError:
                pass
        return self.settings.memory_file


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _exists_command(word: str) -> bool:
    return Path(word).is_file() if ("/" in word or "\\" in word) else shutil.which(word) is not None


# --- 1, 2: the MCP server ---------------------------------------------------------------------


def check_mcp_config(ctx: Context) -> Result:
    entry, where = ctx.server
    if entry is None:
        fix = "run `python3 setup.py`" if ctx.mode == "project" else "reinstall the plugin"
        return Result("mcp-config", "fail", f"no '{SERVER_NAME}' server in {where}", fix)
    try:
        command, _ = ctx.launch
    except KeyError as exc:
        return Result("mcp-config", "fail", f"{where}: {exc.args[0]}", "set the variable or give it a default")
    if not _exists_command(command[0]):
        return Result("mcp-config", "fail", f"{where}: command {command[0]} does not exist",
                      "run `python3 setup.py` to rebuild .venv and rewrite .mcp.json")
    servers = registered_servers(ctx)
    if len(servers) > 1:
        return Result("mcp-config", "warn", f"{len(servers)} vault-index servers in this project, so every tool is "
                      "listed twice: " + "; ".join(what for what, _ in servers),
                      "keep one: " + ", or ".join(how for _, how in servers) + "; then restart Claude Code")
    return Result("mcp-config", "ok", f"{where}: {SERVER_NAME} runs {shlex.join(command[:3])}")


# Trigger: with `claude mcp add` (a vault-index entry in .mcp.json or ~/.claude.json) and the
# plugin both on, a project had two vault-index servers (36 tools) and nothing said so (issue 39).
# Outcome: mcp-config finds every place Claude Code would start one for this project and warns,
# naming each and the command that removes it.
PLUGIN_NAME = "vault-index"


def _claude_files() -> tuple[Path, Path]:
    """(Claude Code's own config file, its user settings folder); CLAUDE_CONFIG_DIR moves both."""
    folder = os.environ.get("CLAUDE_CONFIG_DIR")
    if folder:
        return Path(folder).expanduser() / ".claude.json", Path(folder).expanduser()
    return Path.home() / ".claude.json", Path.home() / ".claude"


def _runs_vault_index(name: str, entry: object) -> bool:
    """A local (stdio) server that is vault-index; a remote one over HTTP is another vault's."""
    if not isinstance(entry, dict) or not entry.get("command"):
        return False
    words = " ".join([str(entry["command"]), *(str(a) for a in entry.get("args") or [])])
    return name == SERVER_NAME or any(mark in words for mark in ("vault-index", "vault_index", "plugin_run.py"))


def _project_entry(config: dict, project: Path) -> dict:
    """This project's entry in Claude Code's config (keyed by the folder `claude` ran in)."""
    projects = config.get("projects")
    if not isinstance(projects, dict):
        return {}
    if str(project) in projects:
        return projects[str(project)]
    return next((v for k, v in projects.items() if os.path.isabs(k) and Path(k).resolve() == project), {})


def settings_files(project: Path) -> list[Path]:
    """Claude Code's settings for this project: the person's own, the project's, the local ones
    (later ones win a setting; hooks of all three run)."""
    _, user_folder = _claude_files()
    return [user_folder / "settings.json", project / ".claude" / "settings.json",
            project / ".claude" / "settings.local.json"]


def registered_servers(ctx: Context) -> list[tuple[str, str]]:
    """(what, how to remove it) for each vault-index server Claude Code starts in this project.

    One name is one server: Claude Code starts the local entry of a name over the project's
    (.mcp.json) over the user's, so only differently named entries (or the plugin's, which has
    its own name) are two servers (issue 39: one name in two places was "every tool listed twice")."""
    global_file, _ = _claude_files()
    project = ctx.project.resolve()
    layers = [_read_json(path) for path in settings_files(project)]  # later ones win, as in Claude Code
    plugins: dict[str, bool] = {}
    disabled: set[str] = set()
    for layer in layers:
        enabled = layer.get("enabledPlugins")
        if isinstance(enabled, dict):
            plugins.update({k: v is True for k, v in enabled.items() if k.split("@")[0] == PLUGIN_NAME})
        off = layer.get("disabledMcpjsonServers")
        disabled |= {str(n) for n in off} if isinstance(off, list) else set()
    found = []
    on = [k for k, v in plugins.items() if v] or ([f"{PLUGIN_NAME}@{PLUGIN_NAME}"] if ctx.plugin_root else [])
    for key in on:
        found.append((f"the plugin {key}", f"`claude plugin disable {key}` (the plugin's server goes)"))
    config = _read_json(global_file)
    # name -> (listing order, what, how) of the entry Claude Code starts; None: not a vault-index one
    named: dict[str, tuple[int, str, str] | None] = {}
    for scope, holder in (("local", _project_entry(config, project)), ("project", None), ("user", config)):
        servers = (_read_json(project / ".mcp.json") if scope == "project" else holder or {}).get("mcpServers")
        for name, entry in (servers.items() if isinstance(servers, dict) else ()):
            if name in named or (scope == "project" and name in disabled):
                continue  # shadowed by the entry of that name Claude Code starts, or turned off
            if not _runs_vault_index(name, entry):
                named[name] = None
            elif scope == "project":
                named[name] = (0, f"'{name}' in {project / '.mcp.json'}", f"`claude mcp remove {name} -s project`")
            else:
                where = "for this project" if scope == "local" else "for every project"
                named[name] = (1 if scope == "local" else 2, f"'{name}' added with `claude mcp add` {where} "
                               f"({global_file})", f"`claude mcp remove {name} -s {scope}`")
    return found + [(what, how) for _, what, how in sorted(e for e in named.values() if e)]


def _listed_tools(command: list[str], env: dict, cwd: Path, timeout: float, errlog) -> list[str]:
    """Tool names the server lists, asked through the MCP SDK's own stdio client.

    Trigger: a hand-written JSON-RPC exchange (initialize, initialized, tools/list) lived here.
    Why: the SDK client, already a dependency, negotiates the protocol version and framing the
    way Claude Code does, so a server that only a hand-written client can talk to fails here too.
    Outcome: imported only when this check runs (importing `mcp` costs 0.3 s idle, several
    seconds on a loaded machine), bounded by `timeout`, the server's stderr kept for the report.
    """
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(cwd))

    async def ask() -> list[str]:
        with anyio.fail_after(timeout):
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return [tool.name for tool in (await session.list_tools()).tools]

    return anyio.run(ask)


def _slow_launch_fix() -> str:
    """What to do after a launch timed out: a server that is only slow shows no error by hand.

    Trigger: at a load of 15 on 2 cores, setup's check timed out on a healthy server and told the
    user to look for an error that was not there. Outcome: the load is named beside both causes.
    """
    try:
        load, cores = os.getloadavg()[0], os.cpu_count() or 1
    except (OSError, AttributeError):  # no load average on this platform
        return "a busy machine can be this slow: run the check again; else run the command by hand to see its error"
    busy = "a busy machine can be this slow" if load > cores else "the machine is not busy"
    return (f"load average {load:.1f} on {cores} cores ({busy}): run the check again; if it times out "
            "again, run the command by hand to see its error")


def check_mcp_launch(ctx: Context, timeout: float = LAUNCH_TIMEOUT_S) -> Result:
    """Start the server exactly as declared and ask it for its tools over stdio (MCP SDK client)."""
    import tempfile

    entry, _ = ctx.server
    if entry is None:
        return Result("mcp-launch", "fail", "not started: no server is declared", "fix mcp-config first")
    try:
        command, env = ctx.launch
    except KeyError as exc:
        return Result("mcp-launch", "fail", f"not started: {exc.args[0]}", "fix mcp-config first")
    if not command or not (shutil.which(command[0]) or Path(command[0]).is_file()):
        return Result("mcp-launch", "fail", f"cannot start {command[0] if command else '(empty command)'}: "
                      "not found", "fix mcp-config first")
    tools: list[str] | None = None
    why, fix = "it exited", "run the command by hand to see its error"
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as errlog:
        try:
            tools = _listed_tools(command, env, ctx.project, timeout, errlog)
        except TimeoutError:
            why = f"no tools/list answer within {timeout:.0f} s"
            fix = _slow_launch_fix()
        except Exception as exc:  # noqa: BLE001 - any failure to talk MCP is this check's finding
            why = f"it exited or broke the protocol ({type(exc).__name__})"
        errlog.seek(0)
        stderr = errlog.read()
    if tools is None:
        tail = " ".join(stderr.strip().splitlines()[-2:])[-240:]
        return Result("mcp-launch", "fail", f"{shlex.join(command[:3])}: {why}" + (f" ({tail})" if tail else ""), fix)
    missing = [t for t in EXPECTED_TOOLS if t not in tools]
    if missing:
        return Result("mcp-launch", "fail", f"server answered without {', '.join(missing)} ({len(tools)} tools)",
                      "the server is an old version: reinstall (python3 setup.py)")
    wanted = ", ".join(EXPECTED_TOOLS)
    return Result("mcp-launch", "ok", f"answered tools/list with {len(tools)} tools, {wanted} among them")


# --- 3: hooks ----------------------------------------------------------------------------------


def _hook_problems(ctx: Context, command: str, script: str) -> tuple[bool, list[str]]:
    """(whether `command` runs `script`, files it references that do not exist)."""
    try:
        words = shlex.split(ctx.expand(command, strict=False))
    except ValueError:
        return False, [f"cannot parse: {command}"]
    runs, missing = False, []
    if words and not _exists_command(words[0]):
        missing.append(words[0])
    for i, word in enumerate(words):
        if word.endswith(".py"):
            if not Path(word).is_file():
                missing.append(word)
            runs = runs or Path(word).stem == script
            if Path(word).name == "plugin_run.py" and i + 1 < len(words):
                target = Path(word).parent / f"{words[i + 1]}.py"
                runs = runs or words[i + 1] == script
                if not target.is_file():
                    missing.append(str(target))
    return runs, missing


def check_hooks(ctx: Context) -> Result:
    if ctx.plugin_root:
        files, fix = [ctx.plugin_root / "hooks" / "hooks.json"], "reinstall the plugin"
    else:
        # Trigger: hooks were read from .claude/settings.json alone, so a project whose hooks are
        # in the person's own settings (Claude Code runs those of every settings file) failed here.
        files, fix = settings_files(ctx.project.resolve()), "run `python3 setup.py` to add the hooks"
    hooks: dict[str, list] = {}
    wired = []
    for path in files:
        found = _read_json(path).get("hooks")
        if isinstance(found, dict) and found:
            wired.append(str(path))
            for event, groups in found.items():
                hooks.setdefault(event, []).extend(groups if isinstance(groups, list) else [])
    entry, declared = ctx.server
    if not hooks and not ctx.plugin_root and entry is not None and "claude mcp add" in declared:
        # the server alone, added with `claude mcp add` (the README's way for another project): valid
        return Result("hooks", "ok", f"no hooks here: the server alone ({declared}) is a valid wiring; the "
                      "plugin adds the hooks (re-index on edit, context guard, these checks at session start)")
    where = ", ".join(wired) or str(files[0] if ctx.plugin_root else files[1])
    if not hooks:
        return Result("hooks", "fail", f"no hooks in {where}", fix)
    problems = []
    for event, (script, tools) in EXPECTED_HOOKS.items():
        found = False
        for group in hooks.get(event) or []:
            if not isinstance(group, dict):
                continue
            matcher = str(group.get("matcher") or "")
            covers = all(re.search(matcher or ".*", tool) for tool in tools) if tools else True
            for handler in group.get("hooks") or []:
                runs, missing = _hook_problems(ctx, str((handler or {}).get("command", "")), script)
                if runs:
                    found = found or covers
                    problems += [f"{event} references missing {m}" for m in missing]
        if not found:
            problems.append(f"{event} does not run {script}" + (f" for {'/'.join(tools)}" if tools else ""))
    if problems:
        return Result("hooks", "fail", f"{where}: " + "; ".join(problems[:3]), fix)
    return Result("hooks", "ok", f"{where}: {', '.join(EXPECTED_HOOKS)} wired, scripts present")
