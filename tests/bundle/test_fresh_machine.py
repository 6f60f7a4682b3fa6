"""The README's two commands on a machine that has run nothing else (issue 21, must-show 1).

- The suite collects with every extra that setup.py does not install made unimportable, and no
  module skips as a whole: a module-level `import psycopg` (which made `pytest -q` exit 2) or a
  module-level importorskip fails here, inside the README's own test command.
- .ci/fresh_clone.py (the first step of .ci/run) reads the commands from README.md, runs them in a
  fresh clone with a fresh HOME and none of the caller's VAULT_* variables, and fails when one
  fails. Checked here on a small git repository of its own; .ci/run runs it on this one.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

# The extras setup.py leaves out (it installs `.[offline,dev]`): pyproject's postgres, sqlite-vec
# and sentence-transformers extras, by the names they import as.
NOT_INSTALLED = ("psycopg", "psycopg_binary", "pgvector", "pgserver", "sqlite_vec", "pysqlite3",
                 "sentence_transformers", "torch")
BLOCKER = f'''
import importlib.abc
import sys

BLOCKED = {set(NOT_INSTALLED)!r}


class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (an extra, blocked by the test)", name=name)
        return None


sys.meta_path.insert(0, Blocked())
for loaded in [m for m in sys.modules if m.partition(".")[0] in BLOCKED]:
    del sys.modules[loaded]
'''


def _fresh_clone_module():
    spec = importlib.util.spec_from_file_location("fresh_clone", REPO / ".ci" / "fresh_clone.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_test_module_collects_without_the_extras_and_none_skips_whole(tmp_path):
    (tmp_path / "block_extras.py").write_text(BLOCKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    # one collecting process (`-o addopts=`: no xdist workers, each of which would collect it all again)
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "block_extras",
                           "-p", "no:cacheprovider", "-o", "addopts=", "tests"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "error" not in summary and "skipped" not in summary, summary
    collected = {line.split("::", 1)[0] for line in proc.stdout.splitlines() if "::" in line}
    modules = {str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("test_*.py")}
    assert modules - collected == set(), "modules that collect no test without the extras"


def test_the_blocker_really_hides_the_extras(tmp_path):
    # The check above is only worth something if an `import psycopg` fails under the blocker.
    (tmp_path / "block_extras.py").write_text(BLOCKER)
    (tmp_path / "test_imports_an_extra.py").write_text("import psycopg  # noqa\n\n\ndef test_x():\n    pass\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "block_extras", "-p",
                           "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path / "test_imports_an_extra.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "blocked by the test" in proc.stdout, proc.stdout + proc.stderr


def test_the_readme_starts_with_exactly_the_two_commands_ci_runs():
    commands = _fresh_clone_module().readme_commands((REPO / "README.md").read_text(encoding="utf-8"))
    assert [re.sub(r"\s+#.*$", "", c) for c in commands] == ["python3 setup.py", ".venv/bin/python -m pytest -q"]


def test_a_readme_without_its_commands_is_refused():
    fresh_clone = _fresh_clone_module()
    with pytest.raises(SystemExit, match="no ```sh block"):
        fresh_clone.readme_commands("# tool\n\nNo commands here.\n")
    with pytest.raises(SystemExit, match="lacks `python3 setup.py`"):
        fresh_clone.readme_commands("# tool\n\n```sh\nmake\n```\n")


# A project of its own for the runner: its setup.py records what a newcomer's shell would see and
# makes a .venv/bin/python that records how the README's second line called it.
PROJECT_SETUP = '''
import json, os, pathlib, stat, sys
here = pathlib.Path.cwd()
env = {k: v for k, v in os.environ.items()}
home = pathlib.Path(env["HOME"])
(here / "seen.json").write_text(json.dumps({"env": env, "cwd": str(here), "home_was_empty": not any(home.iterdir())}))
python = here / ".venv" / "bin" / "python"
python.parent.mkdir(parents=True, exist_ok=True)
python.write_text("#!/bin/sh\\necho \\"$@\\" > " + str(here / "args.txt") + "\\nexit ${EXIT_CODE:-0}\\n")
python.chmod(python.stat().st_mode | stat.S_IEXEC)
'''


def _project(tmp_path: Path, readme: str, exit_code: int = 0, setup: str = PROJECT_SETUP) -> Path:
    project = tmp_path / "project"
    project.mkdir(parents=True)
    (project / "README.md").write_text(readme)
    (project / "setup.py").write_text(setup.replace("${EXIT_CODE:-0}", str(exit_code)))
    git = ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "project"], check=True)
    return project


README = ("# tool\n\n```sh\npython3 setup.py                  # set up\n"
          ".venv/bin/python -m pytest -q     # run the tests\n```\n")


def _run(project: Path, workdir: Path, *options: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / ".ci" / "fresh_clone.py"), "--source", str(project),
                           "--workdir", str(workdir), "--keep", *options], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120)


def test_the_runner_runs_the_readme_lines_in_a_fresh_clone_with_a_fresh_home(tmp_path):
    project = _project(tmp_path, README)
    proc = _run(project, tmp_path / "work", VAULT_INDEX_HOME=str(tmp_path / "leak"), VAULT_ROLE="owner",
                CLAUDE_PROJECT_DIR=str(tmp_path), PIP_CACHE_DIR=str(tmp_path / "pip-cache"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the README's 2 commands exit 0" in proc.stdout
    clone = tmp_path / "work" / "clone"
    seen = json.loads((clone / "seen.json").read_text())
    assert seen["cwd"] == str(clone) and not (project / ".venv").exists()  # the clone, not the checkout
    assert seen["env"]["HOME"] == str(tmp_path / "work" / "home") and seen["home_was_empty"]
    assert not [k for k in seen["env"] if k.startswith(("VAULT_", "CLAUDE_"))]
    assert seen["env"]["PIP_CACHE_DIR"] == str(tmp_path / "pip-cache")  # the real cache, not the new home's
    assert (clone / "args.txt").read_text().split() == ["-m", "pytest", "-q"]


def test_the_runner_fails_when_a_readme_command_fails(tmp_path):
    project = _project(tmp_path, README, exit_code=5)
    proc = _run(project, tmp_path / "work")
    assert proc.returncode == 5
    assert "FAILED: the README's `.venv/bin/python -m pytest -q" in proc.stdout


# A setup.py that writes the two wiring files and says, as ours does, whether each changed; with
# CHURN it writes something new each run (a setup that is not idempotent).
WIRING_SETUP = PROJECT_SETUP + '''
import time
for name in (".mcp.json", ".claude/settings.json"):
    target = here / name
    target.parent.mkdir(exist_ok=True)
    text = str(time.time_ns()) if CHURN else "{}"
    same = target.exists() and target.read_text() == text
    target.write_text(text)
    print(f"setup: {name} {'unchanged' if same else 'written'}")
'''


def test_setup_again_passes_a_setup_that_changes_nothing_and_fails_one_that_does(tmp_path):
    for churn, expected in ((False, 0), (True, 1)):
        project = _project(tmp_path / str(churn), README, setup=WIRING_SETUP.replace("CHURN", str(churn)))
        proc = _run(project, tmp_path / str(churn) / "work", "--setup-again")
        assert proc.returncode == expected, proc.stdout + proc.stderr
        if churn:
            assert "FAILED: the second `python3 setup.py" in proc.stdout
            assert "changed: ['.mcp.json', '.claude/settings.json']" in proc.stdout
        else:
            assert "the second setup run changed nothing" in proc.stdout
