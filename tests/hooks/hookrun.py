"""Run hook scripts as Claude Code does: a subprocess, JSON on stdin, stdout and exit code read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import REPO

SCRIPTS = REPO / "scripts"
FIXTURES = Path(__file__).parent / "fixtures"
LONG_CONTEXT = 12 + 3_400 + 468_000  # long_session.jsonl: the latest main-chain message's usage
SHORT_CONTEXT = 5 + 1_200 + 38_000  # short_session.jsonl


def hook_env(**extra: str) -> dict[str, str]:
    """The caller's environment without anything that would point a hook at real state."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLAUDE_", "VAULT_"))}
    # An index path that does not exist unless a test passes its own: a hook can never reach
    # the real ~/.mcp-memory index from a test.
    env.update(HF_HUB_OFFLINE="1", VAULT_RERANK="0", VAULT_EMBED_MODEL="none",
               VAULT_INDEX_DB=str(Path(os.devnull).parent / "nonexistent-vault-index-test" / "index.db"))
    # the invariants' stamp and the personal folder stay in the suite's throwaway home (conftest)
    if os.environ.get("VAULT_INDEX_HOME"):
        env["VAULT_INDEX_HOME"] = os.environ["VAULT_INDEX_HOME"]
    env.update(extra)
    return env


def run_script(name: str, stdin: bytes | str | dict, env: dict[str, str] | None = None,
               args: tuple[str, ...] = (), cwd: Path | None = None) -> subprocess.CompletedProcess:
    if isinstance(stdin, dict):
        stdin = json.dumps(stdin)
    if isinstance(stdin, str):
        stdin = stdin.encode("utf-8")
    return subprocess.run([sys.executable, str(SCRIPTS / name), *args], input=stdin, capture_output=True,
                          env=env if env is not None else hook_env(), cwd=cwd, timeout=120)


def answer(done: subprocess.CompletedProcess) -> dict | None:
    """The hook's stdout as one JSON object, None when it printed nothing; checks exit 0, no traceback."""
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr, done.stderr.decode()
    out = done.stdout.decode().strip()
    if not out:
        return None
    assert len(out.splitlines()) == 1, out
    return json.loads(out)


def prompt_payload(project: Path, transcript: Path | str, prompt: str = "carry on", session: str = "sess-1") -> dict:
    return {"session_id": session, "transcript_path": str(transcript), "cwd": str(project),
            "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": prompt}
