"""scripts/plugin_run.py: the plugin's launcher (environment, lock, stamp, dispatch).

The real install (venv + pip from PyPI, about 45 s here) is not run by the suite; the install
step is a parameter of ensure_environment, so the lock and the stamp are tested with a stand-in
that only creates the interpreter file. Dispatch is tested through a real subprocess with
VAULT_INDEX_PYTHON, as Claude Code would start it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import REPO, write

sys.path.insert(0, str(REPO / "scripts"))
import plugin_run  # noqa: E402

PLUGIN_RUN = REPO / "scripts" / "plugin_run.py"
ECHO = """import json, os, sys
names = ("VAULT_INDEX_DB", "VAULT_INDEX_HOME", "VAULT_PROJECT", "VAULT_MEMORY_FILE", "CLAUDE_PLUGIN_ROOT")
print(json.dumps({"argv": sys.argv[1:], "stdin": sys.stdin.read(), "env": {k: os.environ.get(k) for k in names}}))
"""


@pytest.fixture
def root(tmp_path) -> Path:
    """A plugin root with a pyproject and one script that reports what it was given."""
    plugin = tmp_path / "plugin"
    write(plugin, "pyproject.toml", '[project]\nname = "x"\nversion = "1"\n')
    write(plugin, "scripts/echo_env.py", ECHO)
    write(plugin, "scripts/reindex_hook.py", "raise SystemExit('must not run')\n")
    return plugin


def launch(root: Path, data: Path, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items()
            if k not in {"VAULT_INDEX_DB", "VAULT_INDEX_HOME", "VAULT_PROJECT", "VAULT_MEMORY_FILE",
                         "VAULT_INDEX_PYTHON", "CLAUDE_PLUGIN_ROOT", "CLAUDE_PROJECT_DIR"}}
    full.update(CLAUDE_PLUGIN_ROOT=str(root), CLAUDE_PLUGIN_DATA=str(data), **env)
    return subprocess.run([sys.executable, str(PLUGIN_RUN), *args], input=stdin, capture_output=True,
                          text=True, env=full, timeout=60)


def test_override_python_runs_the_script_with_args_stdin_and_data_defaults(root, tmp_path):
    data = tmp_path / "data"
    project = tmp_path / "project"
    run = launch(root, data, "echo_env", "--flag", "x y", stdin="payload", VAULT_INDEX_PYTHON=sys.executable,
                 CLAUDE_PROJECT_DIR=str(project))
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["argv"] == ["--flag", "x y"] and seen["stdin"] == "payload"
    # the index and graph are the person's own, shared with the terminal (ADR 0020): not set here
    assert seen["env"] == {"VAULT_INDEX_DB": None, "VAULT_INDEX_HOME": None, "VAULT_PROJECT": str(project),
                           "VAULT_MEMORY_FILE": None, "CLAUDE_PLUGIN_ROOT": str(root)}
    assert not (data / "venv").exists()  # the override installs nothing


def test_settings_already_in_the_environment_win(root, tmp_path):
    run = launch(root, tmp_path / "data", "echo_env", VAULT_INDEX_PYTHON=sys.executable,
                 VAULT_INDEX_DB=str(tmp_path / "mine.db"))
    assert json.loads(run.stdout)["env"]["VAULT_INDEX_DB"] == str(tmp_path / "mine.db")


def test_a_tool_hook_without_an_environment_exits_0_silently_and_installs_nothing(root, tmp_path):
    data = tmp_path / "data"
    started = time.monotonic()
    run = launch(root, data, "reindex_hook", stdin='{"tool_name": "Write"}')
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")
    assert not data.exists() and time.monotonic() - started < 5


def test_an_unknown_name_is_refused_without_blocking(root, tmp_path):
    for name in ("no_such_script", "../escape", "Bad-Name"):
        run = launch(root, tmp_path / "data", name, VAULT_INDEX_PYTHON=sys.executable)
        assert run.returncode == 1 and "unknown command" in run.stderr  # 1, not 2: 2 would block the user


# A project's own module that `python -m` would import from the working folder: it leaves a mark,
# then hands over to the real package so that the server still answers (a hostile audit's probe).
SHADOW_YAML = """import os, sys
open({marker!r}, "a").write("ran\\n")
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
del sys.modules["yaml"]
import yaml as real
sys.modules[__name__] = real
"""


def test_serve_runs_the_package_and_answers_mcp(tmp_path):
    # started as Claude Code starts it: in the project, whose files are whatever its clone brought
    project, marker = tmp_path / "project", tmp_path / "shadow-ran.txt"
    project.mkdir()
    (project / "yaml.py").write_text(SHADOW_YAML.format(marker=str(marker)))
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        # answered by the real server, not the shim's snapshot: the hand-over happened
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_sources", "arguments": {}}},
    ]
    proc = subprocess.Popen(
        [sys.executable, str(PLUGIN_RUN), "serve", "--memory-file", str(tmp_path / "m.jsonl")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=project,
        env={**{k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "CLAUDE_"))},
             "CLAUDE_PLUGIN_ROOT": str(REPO), "CLAUDE_PLUGIN_DATA": str(tmp_path / "data"),
             "HOME": str(tmp_path / "home"), "CLAUDE_PROJECT_DIR": str(project),
             "VAULT_INDEX_PYTHON": sys.executable, "VAULT_EMBED_MODEL": "none", "VAULT_RERANK": "0"})
    try:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        replies = [json.loads(proc.stdout.readline()) for _ in range(3)]
    finally:
        proc.kill()
        proc.communicate()
    names = {t["name"] for t in replies[1]["result"]["tools"]}
    assert {"search_notes", "recall"} <= names
    assert replies[2]["id"] == 3 and "result" in replies[2], replies[2]
    assert not marker.exists(), "the server imported the project's yaml.py (old code: it did)"
    # the person's own index, which the terminal shares (ADR 0020); nothing of it in the data folder
    assert (tmp_path / "home" / ".mcp-memory" / "vault-index.db").exists()
    assert not (tmp_path / "data" / "vault-index.db").exists()


class CountingInstaller:
    """Stands in for pip: makes the venv's interpreter file, slowly, and counts the calls."""

    def __init__(self, delay: float = 0.0, fail: bool = False):
        self.calls, self.delay, self.fail = 0, delay, fail

    def __call__(self, root: Path, venv: Path, log) -> None:
        self.calls += 1
        time.sleep(self.delay)
        if self.fail:
            raise OSError("no network")
        python = plugin_run.venv_python(venv)
        python.parent.mkdir(parents=True, exist_ok=True)
        python.write_text("")


def test_install_once_then_reuse_then_reinstall_when_pyproject_changes(root, tmp_path):
    data, install = tmp_path / "data", CountingInstaller()
    quiet = lambda message: None  # noqa: E731
    python, installed = plugin_run.ensure_environment(root, data, quiet, install)
    assert installed and python == plugin_run.venv_python(data / "venv") and install.calls == 1
    assert plugin_run.is_ready(root, data)
    assert plugin_run.ensure_environment(root, data, quiet, install) == (python, False)
    assert install.calls == 1
    (root / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2"\n')
    assert not plugin_run.is_ready(root, data)
    assert plugin_run.ensure_environment(root, data, quiet, install)[1] is True
    assert install.calls == 2


def test_concurrent_starts_install_once(root, tmp_path):
    data, install = tmp_path / "data", CountingInstaller(delay=0.5)
    results = []
    threads = [threading.Thread(target=lambda: results.append(
        plugin_run.ensure_environment(root, data, lambda m: None, install))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert install.calls == 1
    assert sorted(installed for _, installed in results) == [False, False, True]


def test_a_failed_install_leaves_no_stamp(root, tmp_path):
    data = tmp_path / "data"
    with pytest.raises(OSError):
        plugin_run.ensure_environment(root, data, lambda m: None, CountingInstaller(fail=True))
    assert not plugin_run.is_ready(root, data) and not (data / plugin_run.STAMP_NAME).exists()


def test_session_start_reports_a_failed_install_as_hook_context_and_exits_0(tmp_path):
    # A root whose pyproject cannot be built: the real installer fails fast, after the venv.
    plugin = tmp_path / "plugin"
    write(plugin, "pyproject.toml", "this is not toml [[[\n")
    write(plugin, "scripts/invariants.py", "")
    run = launch(plugin, tmp_path / "data", "invariants", "--hook", stdin="{}", PATH=os.environ["PATH"],
                 PIP_NO_INDEX="1")
    assert run.returncode == 0
    context = json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "could not install" in context
    assert not plugin_run.is_ready(plugin, tmp_path / "data")


def _wait_for_a_blocked_lock(timeout: float = 30.0) -> None:
    """Until some process waits on a flock (Linux lists waiters with '->' in /proc/locks)."""
    locks = Path("/proc/locks")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not locks.exists():
            time.sleep(2.0)
            return
        if "->" in locks.read_text():
            return
        time.sleep(0.05)
    raise AssertionError("the hook never waited for the install lock")


def test_session_start_reports_an_install_another_process_finished_while_it_waited(root, tmp_path):
    # The first session: the server's shim takes the install lock first, the SessionStart hook
    # waits for it, and the session must still hear that an install happened.
    data = tmp_path / "data"
    write(root, "scripts/invariants.py", "import os\nprint(os.environ.get('VAULT_INDEX_SETUP_NOTE', 'no note'))\n")
    runs: list[subprocess.CompletedProcess] = []
    with plugin_run.InstallLock(data / plugin_run.LOCK_NAME):
        hook = threading.Thread(target=lambda: runs.append(launch(root, data, "invariants", "--hook", stdin="{}")))
        hook.start()
        _wait_for_a_blocked_lock()
        python = plugin_run.venv_python(data / "venv")
        python.parent.mkdir(parents=True)
        python.symlink_to(sys.executable)
        (data / plugin_run.STAMP_NAME).write_text(json.dumps(plugin_run.wanted_stamp(root)))
    hook.join(60)
    [run] = runs
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"vault-index installed its environment in {data / 'venv'}"


def test_pip_installs_bring_pip_up_first_and_compile_on_every_core_last(tmp_path, monkeypatch):
    """Without uv: venv, `pip>=26` (best effort: a refusal is no failure), the package (the fp32
    weights are a dependency) with --no-compile, then one compile of the installed packages; a
    second run has nothing to do."""
    venv, steps, compiled = tmp_path / "venv", [], []

    def run(cmd, log, cwd):
        cmd = [str(c) for c in cmd]
        steps.append(cmd)
        assert cwd == tmp_path / "root"  # the plugin's own folder, never the project's
        if cmd[1:4] == ["-I", "-m", "venv"]:
            (venv / "bin").mkdir(parents=True)
            plugin_run.venv_python(venv).write_text("")
        if plugin_run.PIP_FLOOR in cmd:
            raise subprocess.CalledProcessError(1, cmd)  # an index without pip 26

    monkeypatch.setattr(plugin_run, "_run", run)
    monkeypatch.setattr(plugin_run.shutil, "which", lambda name: None)
    monkeypatch.setattr(plugin_run.subprocess, "run", lambda cmd, **kw: compiled.append(cmd) or kw["cwd"])
    said: list[str] = []
    plugin_run.install(tmp_path / "root", venv, said.append)
    pips = [cmd for cmd in steps if "pip" in cmd[1:4]]
    assert [cmd[-1] for cmd in pips] == [plugin_run.PIP_FLOOR, f"{tmp_path / 'root'}[offline]"]
    assert all("--no-compile" in cmd for cmd in pips)
    assert any("going on with the venv's own pip" in line for line in said)
    assert compiled == [[str(plugin_run.venv_python(venv)), "-I", "-c", plugin_run.COMPILE]]
    steps.clear()
    plugin_run.install(tmp_path / "root", venv, said.append)
    assert steps == [] and len(compiled) == 1


def test_setup_and_the_plugin_install_the_same_way():
    from helpers import load_setup

    setup = load_setup()
    assert (setup.PIP_FLOOR, setup.COMPILE) == (plugin_run.PIP_FLOOR, plugin_run.COMPILE)


SHADOWS = {  # what a cloned repository could hold to run its own code at the plugin's first install
    "venv/__init__.py": "", "venv/__main__.py": "MARK('venv')\n",
    "pip/__init__.py": "MARK('pip')\n", "pip/__main__.py": "MARK('pip-main')\n",
    "compileall.py": "MARK('compileall')\n", "sysconfig.py": "MARK('sysconfig')\n",
}
MARK = "import pathlib, os\ndef MARK(name):\n    (pathlib.Path({folder!r}) / ('ran-' + name)).touch()\n"
DRIVER = """import sys
from pathlib import Path
sys.path.insert(0, {scripts!r})
import plugin_run
original = plugin_run._run
def offline(cmd, log, *rest, **how):  # the real commands, with pip asked only for its version
    cmd = [str(c) for c in cmd]
    if "install" in cmd:
        cmd = cmd[:cmd.index("install")] + ["--version"]
    original(cmd, log, *rest, **how)
plugin_run._run = offline
plugin_run.shutil.which = lambda name: None  # the path without uv: venv and pip
plugin_run.install(Path({root!r}), Path({venv!r}), print)
"""


def test_the_first_install_runs_no_module_of_the_project_it_starts_in(tmp_path):
    """Issue 36 item 3 (High): the SessionStart hook installs with the project as its working
    folder, and `python -m venv`, `python -m pip` and `python -c` put that folder first on sys.path:
    a cloned repository's own venv/, pip/ or compileall.py ran (old code: all three markers)."""
    project = tmp_path / "project"
    for rel, text in SHADOWS.items():
        write(project, rel, MARK.format(folder=str(tmp_path)) + text)
    driver = DRIVER.format(scripts=str(REPO / "scripts"), root=str(REPO), venv=str(tmp_path / "venv"))
    done = subprocess.run([sys.executable, "-c", driver], cwd=project, capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_"))})
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.glob("ran-*")) == []
    assert plugin_run.venv_python(tmp_path / "venv").exists()  # the real venv module made it
