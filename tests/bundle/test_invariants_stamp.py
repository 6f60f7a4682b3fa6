"""The SessionStart check skips what did not change since it last passed (scripts/_invariant_stamp.py).

In-process, with the checks replaced by counting stand-ins that carry the real checks' names (the
stamp keys inputs by name), on a project whose .mcp.json and CLAUDE.md are real files.
"""

from __future__ import annotations

import json
import sys

import pytest
from helpers import REPO, write

sys.path.insert(0, str(REPO / "scripts"))
import _invariant_stamp as stamp  # noqa: E402
import invariants  # noqa: E402
from _invariant_wiring import Context, Result  # noqa: E402


def counting(name: str, outcome: list[str]):
    calls: list[int] = []

    def check(ctx: Context) -> Result:
        calls.append(1)
        return Result(name.removeprefix("check_").replace("_", "-"), outcome[0], "ran")

    check.__name__ = name
    check.calls = calls  # type: ignore[attr-defined]
    return check


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("VAULT_INDEX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VAULT_INDEX_DB", str(tmp_path / "index.db"))
    root = tmp_path / "project"
    write(root, ".mcp.json", json.dumps({"mcpServers": {"vault-index": {"command": sys.executable, "args": []}}}))
    write(root, "CLAUDE.md", "# Rules\n\nSearch first.\n")
    return root


def test_a_passed_check_is_not_run_again_until_an_input_changes(project):
    outcome = ["ok"]
    launch, budget = counting("check_mcp_launch", outcome), counting("check_context_budget", outcome)
    always = counting("check_sources", outcome)  # no declared inputs: runs every time
    checks = [launch, budget, always]
    ctx = lambda: Context(project=project)  # noqa: E731 - a fresh context per session, as the hook has

    first = invariants.run_checks(ctx(), checks, use_stamp=True)
    assert [r.detail for r in first] == ["ran", "ran", "ran"]
    assert stamp.stamp_path(ctx()).is_file()

    second = invariants.run_checks(ctx(), checks, use_stamp=True)
    assert (len(launch.calls), len(budget.calls), len(always.calls)) == (1, 1, 2)
    assert all(r.status == "ok" for r in second) and "not run again" in second[0].detail

    (project / "CLAUDE.md").write_text("# Rules\n\nSearch first, then answer.\n")  # the budget's input
    invariants.run_checks(ctx(), checks, use_stamp=True)
    assert (len(launch.calls), len(budget.calls)) == (1, 2)

    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"vault-index": {"command": "/bin/true"}}}))
    invariants.run_checks(ctx(), checks, use_stamp=True)
    assert len(launch.calls) == 2

    # by hand (no stamp) everything runs
    invariants.run_checks(ctx(), checks)
    assert (len(launch.calls), len(budget.calls)) == (3, 3)


def test_a_check_that_warned_or_failed_runs_again_next_session(project):
    outcome = ["warn"]
    launch = counting("check_mcp_launch", outcome)
    invariants.run_checks(Context(project=project), [launch], use_stamp=True)
    invariants.run_checks(Context(project=project), [launch], use_stamp=True)
    assert len(launch.calls) == 2
    outcome[0] = "ok"
    invariants.run_checks(Context(project=project), [launch], use_stamp=True)
    invariants.run_checks(Context(project=project), [launch], use_stamp=True)
    assert len(launch.calls) == 3


def test_another_environment_is_another_fingerprint(project, monkeypatch):
    before = stamp.fingerprint("check_mcp_launch", Context(project=project))
    monkeypatch.setenv("VAULT_EMBED_MODEL", "none")
    assert stamp.fingerprint("check_mcp_launch", Context(project=project)) != before
    assert stamp.fingerprint("check_sources", Context(project=project)) is None
