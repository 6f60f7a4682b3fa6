#!/usr/bin/env python3
"""The README's two commands as a newcomer runs them: in a fresh `git clone` of this checkout,
with a fresh home folder, no VAULT_* or client variables, and nothing installed but what the
commands install (issue 21, must-show 1). .ci/run runs this first, before it installs any extra.

    python3 .ci/fresh_clone.py [--source REPO] [--workdir DIR] [--keep] [--setup-again]

The commands are read from the first ```sh block of README.md, so they cannot drift from what a
person copies; a README without `python3 setup.py` and a pytest line there fails. Each line runs
exactly as written (`sh -c LINE`, its comment included) in the clone. Only the package caches are
carried over (PIP_CACHE_DIR, UV_CACHE_DIR: the machine's, not the person's state), so CI does not
download 500 MB again. Standard library only: this runs before any .venv exists.
`--setup-again` then runs the setup line a second time, in the same clone and home: it must exit 0,
say both wiring files are unchanged and leave their bytes as they were (setup is idempotent).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What a fresh machine still has: the tools' location and the package registry's settings
# (PIP_*/UV_*: where to download from, certificates), never the person's or CI's state
# (VAULT_*, CLAUDE_*, MCP_*, XDG_* folders of the old home, UV=<binary>).
KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "USER", "LOGNAME", "SHELL", "PYENV_ROOT",
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "http_proxy", "https_proxy", "no_proxy",
        "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
KEEP_PREFIXES = ("PIP_", "UV_")
FENCE = re.compile(r"^```(?:sh|bash|shell)[ \t]*\n(.*?)^```", re.M | re.S)


def readme_commands(readme: str) -> list[str]:
    """The command lines of README.md's first shell block; SystemExit naming what is missing."""
    # Trigger: a regex instead of markdown-it-py. Why: this runs with the system python3 before
    # setup.py has installed anything. Outcome: only the first ```sh block counts.
    match = FENCE.search(readme)
    if not match:
        raise SystemExit("fresh-clone: README.md has no ```sh block with its commands")
    lines = [line.strip() for line in match.group(1).splitlines()]
    commands = [line for line in lines if line and not line.startswith("#")]
    if not any(line.startswith("python3 setup.py") for line in commands) or not any(
            " -m pytest" in line for line in commands):
        raise SystemExit(f"fresh-clone: README.md's first ```sh block lacks `python3 setup.py` or a pytest "
                         f"line: {commands}")
    return commands


def _cache_dir(command: list[str]) -> str | None:
    """A package cache as the tool reports it under the real home (None when it has none)."""
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    folder = proc.stdout.strip().splitlines()[-1] if proc.returncode == 0 and proc.stdout.strip() else ""
    return folder or None


def fresh_env(home: Path, real: dict[str, str]) -> dict[str, str]:
    """The environment of a fresh machine with `home` as its home folder."""
    env = {k: v for k, v in real.items() if k in KEEP or k.startswith(KEEP_PREFIXES)}
    env["HOME"] = str(home)
    # The caches move with HOME; point them back at the real ones (issue 24: CI time).
    pip_cache = real.get("PIP_CACHE_DIR") or _cache_dir([sys.executable, "-m", "pip", "cache", "dir"])
    if pip_cache:
        env["PIP_CACHE_DIR"] = pip_cache
    uv = shutil.which("uv", path=real.get("PATH"))
    uv_cache = real.get("UV_CACHE_DIR") or (_cache_dir([uv, "cache", "dir"]) if uv else None)
    if uv_cache:
        env["UV_CACHE_DIR"] = uv_cache
    return env


WIRING = (".mcp.json", ".claude/settings.json")  # what setup writes and a second run must leave alone


def _wiring(clone: Path) -> dict[str, bytes | None]:
    return {name: (clone / name).read_bytes() if (clone / name).is_file() else None for name in WIRING}


def setup_again(clone: Path, env: dict[str, str], line: str) -> int:
    """The setup line once more: 0 when it exits 0, says each wiring file is unchanged and leaves it so."""
    before = _wiring(clone)
    print(f"fresh-clone: again, for idempotence: $ {line}", flush=True)
    proc = subprocess.run(["sh", "-c", line], cwd=clone, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True)
    unsaid = [name for name in WIRING if f"setup: {name} unchanged" not in proc.stdout]
    changed = [name for name, data in _wiring(clone).items() if data != before[name]]
    if proc.returncode != 0 or unsaid or changed:
        print(proc.stdout[-4000:] + proc.stderr[-2000:])
        print(f"fresh-clone: FAILED: the second `{line}` exits {proc.returncode}; not said unchanged: {unsaid}; "
              f"changed: {changed}")
        return proc.returncode or 1
    print("fresh-clone: the second setup run changed nothing", flush=True)
    return 0


def run(source: Path, workdir: Path, offline_tests: bool = False, again: bool = False) -> int:
    commands = readme_commands((source / "README.md").read_text(encoding="utf-8"))
    clone, home = workdir / "clone", workdir / "home"
    home.mkdir(parents=True)
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(source), str(clone)], check=True)
    head = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    if subprocess.run(["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
                      capture_output=True, text=True).stdout.strip():
        print(f"fresh-clone: WARNING: {source} has uncommitted changes; the clone tests commit {head} only")
    env = fresh_env(home, dict(os.environ))
    print(f"fresh-clone: commit {head} in {clone}, HOME={home}", flush=True)
    started = time.monotonic()
    for line in commands:
        print(f"fresh-clone: $ {line}", flush=True)
        t0 = time.monotonic()
        argv = ["sh", "-c", line]
        if offline_tests and "pytest" in line:  # the line as written, in a namespace with no network (issue 22)
            argv = ["bash", str(clone / "scripts" / "no_network.sh"), "--", *argv]
        code = subprocess.run(argv, cwd=clone, env=env, stdin=subprocess.DEVNULL).returncode
        print(f"fresh-clone: exit {code} after {time.monotonic() - t0:.0f} s: {line}", flush=True)
        if code != 0:
            print(f"fresh-clone: FAILED: the README's `{line}` exits {code} in a fresh clone with a fresh HOME")
            return code
    print(f"fresh-clone: the README's {len(commands)} commands exit 0 in a fresh clone with a fresh HOME "
          f"({time.monotonic() - started:.0f} s)")
    if again:
        return setup_again(clone, env, next(line for line in commands if line.startswith("python3 setup.py")))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT, help="the git checkout to clone (default: this one)")
    parser.add_argument("--workdir", type=Path, help="an empty folder for the clone and the home (default: a temp one)")
    parser.add_argument("--keep", action="store_true", help="keep the clone and the home afterwards")
    parser.add_argument("--offline-tests", action="store_true",
                        help="run the test command with no network but loopback (scripts/no_network.sh)")
    parser.add_argument("--setup-again", action="store_true",
                        help="then run the setup line again: it must change nothing (.mcp.json, .claude/settings.json)")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="vault-index-fresh-"))
    try:
        return run(args.source.resolve(), workdir, args.offline_tests, args.setup_again)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
