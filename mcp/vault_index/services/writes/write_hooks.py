"""The vault's own pre-write hooks: Python modules in `.vault-index/hooks/`, each run in a child process.

    # .vault-index/hooks/require_owner.py
    def run(frontmatter: dict, context: dict):   # context: path, operation, collection, body
        return [] if frontmatter.get("owner") else [{"field": "owner", "message": "name an owner"}]

`pre_write_transform` hooks return a dict patch (merged shallowly, later hooks win); `pre_write`
hooks return a list of {field, message} problems. Every hook runs, in declared order; a hook that
raises, times out or returns a malformed value is itself a blocking problem naming the hook.

Trigger: a hook is code the vault owner wrote, run while the writer holds a document lock.
Why: a thread cannot be stopped, so a hook that loops forever would hold the lock for good; a
child process can be killed at its deadline (and a crash in it cannot take the server down).
Outcome: each hook runs in `python -I` with its time limit; the cost (~30 ms a hook) is paid only
by vaults that declare hooks.

Trust: a hook runs only when this machine's trust record names its exact content
(services/writes/hook_trust.py), and then with PATH, HOME and LANG as its whole environment.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from vault_index.services.vault.frontmatter import problem
from vault_index.services.vault.vault import Vault, hook_path_problem
from vault_index.services.writes import hook_trust

RESULT_MARK = "\x1evault-hook-result "
MAX_HOOK_OUTPUT = 1_000_000
SKIPPED = object()  # an untrusted hook's "outcome": not run (services/writes/hook_trust.py)
_RUNNER = r"""
import json, sys
payload = json.loads(sys.stdin.read())
space = {"__name__": "vault_hook", "__file__": payload["path"]}
try:
    exec(compile(payload["source"], payload["path"], "exec"), space)
    run = space.get("run")
    if not callable(run):
        raise TypeError("defines no run(frontmatter, context) function")
    out = {"ok": True, "result": run(payload["frontmatter"], payload["context"])}
    text = json.dumps(out)
except BaseException as exc:
    text = json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
sys.stdout.write("\n" + MARK + text + "\n")
""".replace("MARK", repr(RESULT_MARK))


def run_phase(vault: Vault, phase: str, fields: dict, context: dict,
              alive: Callable[[], None] = lambda: None) -> tuple[dict, list[dict]]:
    """Run every hook of `phase` in order; returns (fields after transforms, problems)."""
    problems: list[dict] = []
    for hook in vault.config["hooks"].get(phase, []):
        alive()  # refresh the document lock's lease between hooks
        where = f"hook:{hook['path']}"
        outcome, error = _run_one(vault.root, hook["path"], hook["timeout_s"], fields, context)
        if outcome is SKIPPED:
            continue
        if error:
            problems.append(problem(where, "hook", f"{hook['path']}: {error}"))
        elif phase == "pre_write_transform":
            if not isinstance(outcome, dict):
                problems.append(problem(where, "hook", f"{hook['path']}: a transform must return a dict of fields, "
                                                       f"got {type(outcome).__name__}"))
            else:
                fields = {**fields, **outcome}
        else:
            problems += _issues(hook["path"], outcome)
    return fields, problems


def _issues(path: str, outcome) -> list[dict]:
    malformed = problem(f"hook:{path}", "hook", f"{path}: a validator must return a list of "
                                               "{'field': ..., 'message': ...}")
    if not isinstance(outcome, list):
        return [malformed]
    found = []
    for item in outcome:
        if not (isinstance(item, dict) and isinstance(item.get("field"), str) and isinstance(item.get("message"), str)):
            return [malformed]
        found.append(problem(item["field"], f"hook:{path}", item["message"]))
    return found


def _run_one(root: Path, raw: str, timeout: float, fields: dict, context: dict):
    """(value the hook returned, None), (None, what went wrong) or (SKIPPED, None) for an untrusted hook.

    The bytes hashed for the trust check are the bytes sent to the child (never a second read).
    """
    if problem_text := hook_path_problem(raw):
        return None, problem_text
    source, error = hook_trust.read_hook(root, raw)
    if source is None:
        return None, error
    if not hook_trust.is_trusted(root, raw, hook_trust.digest(source)):
        return SKIPPED, None  # reported as a notice on the outcome (WriteService.write), never run
    payload = json.dumps({"path": raw, "source": source.decode("utf-8", "replace"), "frontmatter": fields,
                          "context": context}, default=str)
    try:
        done = subprocess.run([sys.executable, "-I", "-c", _RUNNER], input=payload, capture_output=True, text=True,
                              cwd=root, timeout=timeout, check=False, env=hook_trust.hook_environment())
    except subprocess.TimeoutExpired:
        return None, f"took longer than its {timeout:g} s limit and was stopped"
    out = done.stdout[-MAX_HOOK_OUTPUT:]
    marked = [line for line in out.split("\n") if line.startswith(RESULT_MARK)]
    if not marked:
        detail = " ".join(done.stderr.split())[-300:]
        return None, f"ended without a result (exit {done.returncode}) {detail}".strip()
    result = json.loads(marked[-1][len(RESULT_MARK):])
    if not result.get("ok"):
        return None, f"raised {result.get('error')}"
    return result.get("result"), None
