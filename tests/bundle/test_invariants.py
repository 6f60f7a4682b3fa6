"""scripts/invariants.py on a correctly wired temp project, then with one thing broken at a time
(the content checks: test_invariants_content.py)."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys

import pytest
from helpers import REPO, write
from invariants_harness import (
    SCRIPTS,
    Context,
    Project,
    hook_command,
    invariants,
    registered_servers,
    run_script,
    settings_hooks,
    wired_project,
)


@pytest.fixture
def project(tmp_path, monkeypatch) -> Project:
    return wired_project(tmp_path, monkeypatch)


# --- everything passes -------------------------------------------------------------------------


def test_all_checks_pass_on_a_wired_project_and_fast(project):
    run = run_script(project, "--json")
    report = json.loads(run.stdout)
    assert run.returncode == 0, run.stdout
    assert [c["id"] for c in report["checks"]] == [
        "mcp-config", "mcp-launch", "hooks", "sources", "index-fresh",
        "graph", "graph-sources", "golden", "lessons-adrs", "context-budget"]
    assert {c["id"]: c["status"] for c in report["checks"]} == {c["id"]: "ok" for c in report["checks"]}
    assert report["ok"] is True and report["mode"] == "project"
    # A bound against hangs, not a speed test: 1.4 s was measured on an idle machine with the
    # hand-written client; with the MCP SDK client (its import runs beside the server's start),
    # 6.5 s with the machine's load average at 18.
    assert report["seconds"] < 20


def test_table_for_a_person(project):
    run = run_script(project)
    assert run.returncode == 0
    assert "10 checks in" in run.stdout and "10 ok, 0 warn, 0 fail" in run.stdout


def test_hook_is_silent_when_everything_passes(project):
    payload = json.dumps({"hook_event_name": "SessionStart", "source": "startup", "cwd": str(project.root)})
    run = run_script(project, "--hook", stdin=payload)
    assert (run.returncode, run.stdout) == (0, "")


def test_the_session_briefing_rides_in_the_same_hook(project):
    today = dt.date.today().isoformat()
    write(project.root, f"docs/handoffs/{today}-sensor.md", f'---\ntitle: "Handoff: sensor"\ndate: {today}\n'
          'session_id: "earlier-session"\ntype: handoff\n---\n# Handoff: sensor\n\n## Next steps\n\n'
          '1. Swap the cells.\n')
    payload = json.dumps({"hook_event_name": "SessionStart", "source": "clear", "session_id": "fresh-session",
                          "cwd": str(project.root)})
    run = run_script(project, "--hook", stdin=payload)
    answer = json.loads(run.stdout)
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "vault-index session briefing" in context and "Swap the cells." in context
    assert "invariants" not in context  # every check passes: only the briefing speaks
    assert answer["systemMessage"] == "vault-index briefing: a handoff card"
    # a second checks-failing start: both in one answer, the checks first
    project.write_json(".claude/settings.json", {})
    write(project.root, f"docs/handoffs/{today}-radio.md", f'---\ntitle: "Handoff: radio"\ndate: {today}\n'
          'session_id: "earlier-session"\ntype: handoff\n---\n# Handoff: radio\n')
    both = json.loads(run_script(project, "--hook", stdin=payload.replace("fresh", "other")).stdout)
    context = both["hookSpecificOutput"]["additionalContext"]
    assert context.index("vault-index invariants") < context.index("session briefing") and "radio" in context


# --- each check fails when its thing is broken ---------------------------------------------------


def test_mcp_config_fails_without_the_server_or_with_a_missing_command(project):
    project.write_json(".mcp.json", {"mcpServers": {}})
    assert project.result(invariants.check_mcp_config).status == "fail"
    config = {"mcpServers": {"vault-index": {"command": str(project.root / "no-such-python"), "args": []}}}
    project.write_json(".mcp.json", config)
    result = project.result(invariants.check_mcp_config)
    assert result.status == "fail" and "no-such-python" in result.detail and result.fix


def test_mcp_config_reports_an_unset_variable_without_default(project, monkeypatch):
    config = project.mcp()
    config["mcpServers"]["vault-index"]["args"][-1] = "${VAULT_TEST_UNSET_VAR}"
    project.write_json(".mcp.json", config)
    monkeypatch.delenv("VAULT_TEST_UNSET_VAR", raising=False)
    assert "VAULT_TEST_UNSET_VAR" in project.result(invariants.check_mcp_config).detail


def test_mcp_launch_fails_when_the_server_does_not_answer(project):
    config = project.mcp()
    config["mcpServers"]["vault-index"]["args"] = ["-c", "import sys; print('boom', file=sys.stderr); sys.exit(3)"]
    project.write_json(".mcp.json", config)
    assert project.result(invariants.check_mcp_config).status == "ok"  # the command exists
    result = project.result(invariants.check_mcp_launch)
    assert result.status == "fail" and "boom" in result.detail


def test_mcp_launch_times_out_on_a_silent_server(project):
    config = project.mcp()
    config["mcpServers"]["vault-index"]["args"] = ["-c", "import time; time.sleep(30)"]
    project.write_json(".mcp.json", config)
    result = invariants.check_mcp_launch(project.context(), timeout=1.0)
    assert result.status == "fail" and "within 1 s" in result.detail
    # only slow, not broken: the advice names the load and says to run the check again
    assert re.search(r"load average \d+\.\d on \d+ cores .*run the check again", result.fix), result.fix


def test_mcp_launch_fails_when_a_tool_is_missing(project):
    fake = project.root / "fake_server.py"
    fake.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if m.get('method') == 'initialize': print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': {"
        "'protocolVersion': m['params']['protocolVersion'], 'capabilities': {'tools': {}},"
        " 'serverInfo': {'name': 'fake', 'version': '1'}}}), flush=True)\n"
        "    elif m.get('method') == 'tools/list': print(json.dumps({'jsonrpc': '2.0', 'id': m['id'],"
        " 'result': {'tools': [{'name': 'search_notes', 'inputSchema': {'type': 'object'}}]}}), flush=True)\n")
    config = project.mcp()
    config["mcpServers"]["vault-index"]["args"] = [str(fake)]
    project.write_json(".mcp.json", config)
    result = project.result(invariants.check_mcp_launch)
    assert result.status == "fail" and "recall" in result.detail


@pytest.mark.parametrize("breakage", ["missing event", "missing script", "matcher misses Edit", "no hooks"])
def test_hooks_fail_when_an_event_or_script_is_missing(project, breakage):
    settings = settings_hooks()
    if breakage == "missing event":
        del settings["hooks"]["PreCompact"]
    elif breakage == "missing script":
        settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] = hook_command("context_guard.py").replace(
            "scripts/context_guard.py", "scripts/gone/context_guard.py")
    elif breakage == "matcher misses Edit":
        settings["hooks"]["PostToolUse"][0]["matcher"] = "Write"
    else:
        settings = {}
    project.write_json(".claude/settings.json", settings)
    result = project.result(invariants.check_hooks)
    assert result.status == "fail", result.detail


# --- output shapes -----------------------------------------------------------------------------


def test_hook_reports_failures_as_session_context(project):
    (project.root / "docs" / "lessons.md").write_text("# Lessons\n\n## L-1 broken\n")
    run = run_script(project, "--hook", stdin="{}")
    assert run.returncode == 0
    output = json.loads(run.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = output["hookSpecificOutput"]["additionalContext"]
    assert "lessons-adrs" in context and "Fix:" in context and "mcp-config" not in context
    assert output["systemMessage"].startswith("vault-index: lessons-adrs needs attention")


def test_table_exit_code_is_1_on_failure_and_json_says_why(project):
    (project.root / ".mcp.json").unlink()
    assert run_script(project).returncode == 1
    report = json.loads(run_script(project, "--json").stdout)
    assert report["ok"] is False
    failed = {c["id"] for c in report["checks"] if c["status"] == "fail"}
    assert failed == {"mcp-config", "mcp-launch"}
    assert all(set(c) == {"id", "status", "detail", "fix", "seconds"} for c in report["checks"])


def test_hook_survives_garbage_stdin(project):
    # one project for the four inputs: after the first run the stamp spares the server launch (5 s)
    for stdin in ("", "{garbage", "[1, 2]", "\x00\xff"):
        run = run_script(project, "--hook", stdin=stdin)
        assert run.returncode == 0 and run.stdout == "", (stdin, run.stdout, run.stderr[-500:])


def test_hook_exits_0_even_when_the_project_is_unreadable(project, tmp_path):
    run = subprocess.run([sys.executable, str(SCRIPTS / "invariants.py"), "--hook"], input="{}",
                         capture_output=True, text=True, timeout=60,
                         env=project.env(CLAUDE_PROJECT_DIR=str(tmp_path / "does-not-exist")))
    assert run.returncode == 0
    assert json.loads(run.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"


def test_a_crashing_check_is_a_failed_check(project):
    def check_explodes(ctx):
        raise RuntimeError("kaboom")

    [result] = invariants.run_checks(project.context(), [check_explodes])
    assert result.status == "fail" and "kaboom" in result.detail


def test_setup_note_makes_the_hook_speak(project):
    run = run_script(project, "--hook", stdin="{}", VAULT_INDEX_SETUP_NOTE="vault-index installed its environment")
    context = json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("vault-index installed its environment")


def test_mcp_config_warns_when_claude_mcp_add_and_the_plugin_both_start_a_server(project, tmp_path):
    """Issue 39: `claude mcp add` plus the plugin gave a project two vault-index servers (36 tools)
    and nothing said so. Each place is named with the command that removes it."""
    assert project.result(invariants.check_mcp_config).status == "ok"  # the clone's own .mcp.json alone
    write(project.claude, ".claude.json", json.dumps({
        "mcpServers": {"vault": {"type": "http", "url": "http://127.0.0.1:8765/mcp"}},  # a remote vault: another
        "projects": {str(project.root): {"mcpServers": {"memory": {
            "command": "/opt/vault-index/.venv/bin/vault-index", "args": ["--watch"]}}}}}))
    result = project.result(invariants.check_mcp_config)
    assert result.status == "warn" and result.detail.startswith("2 vault-index servers in this project")
    assert "'vault-index' in" in result.detail and ".mcp.json" in result.detail
    assert "'memory' added with `claude mcp add` for this project" in result.detail and "vault'" not in result.detail
    assert "`claude mcp remove memory -s local`" in result.fix
    assert "`claude mcp remove vault-index -s project`" in result.fix

    (project.claude / ".claude.json").unlink()
    write(project.claude, "settings.json", json.dumps({"enabledPlugins": {"vault-index@vault-index": True}}))
    result = project.result(invariants.check_mcp_config)
    assert result.status == "warn" and "the plugin vault-index@vault-index" in result.detail
    assert "`claude plugin disable vault-index@vault-index`" in result.fix
    project.write_json(".claude/settings.local.json", {"enabledPlugins": {"vault-index@vault-index": False}})
    assert project.result(invariants.check_mcp_config).status == "ok"  # turned off for this project

    # as the plugin runs it: the plugin is one server, a `claude mcp add` entry the other
    ctx = Context(project=project.root, plugin_root=REPO, plugin_data=tmp_path / "data")
    (project.root / ".claude" / "settings.local.json").unlink()
    (project.claude / "settings.json").unlink()
    assert [what for what, _ in registered_servers(ctx)] == [
        "the plugin vault-index@vault-index", f"'vault-index' in {project.root.resolve() / '.mcp.json'}"]


def test_a_project_wired_with_claude_mcp_add_has_its_server(project):
    """The walkthrough of issue 39: a project wired the README's way (`claude mcp add`, in Claude
    Code's own config) failed mcp-config as "no 'vault-index' server in .mcp.json, run setup.py"."""
    (project.root / ".mcp.json").unlink()
    assert project.result(invariants.check_mcp_config).status == "fail"  # nothing declares one
    write(project.claude, ".claude.json", json.dumps({"projects": {str(project.root): {"mcpServers": {
        "vault-index": {"command": sys.executable, "args": ["-m", "vault_index", "--watch"]}}}}}))
    result = project.result(invariants.check_mcp_config)
    assert result.status == "ok" and "`claude mcp add`, local scope" in result.detail, result


def test_one_name_in_two_places_is_one_server_not_a_duplicate(project):
    """Issue 39 item 15: `claude mcp add vault-index` in a clone whose .mcp.json already names
    vault-index was reported as "every tool listed twice"; Claude Code starts one server per name
    (the local entry wins), so only two differently named servers are two."""
    write(project.claude, ".claude.json", json.dumps({"projects": {str(project.root): {"mcpServers": {
        "vault-index": {"type": "stdio", "command": sys.executable, "args": ["-m", "vault_index"], "env": {}}}}},
        "mcpServers": {"vault-index": {"command": sys.executable, "args": ["-m", "vault_index"]}}}))
    assert len(registered_servers(project.context())) == 1
    result = project.result(invariants.check_mcp_config)
    assert result.status == "ok" and "twice" not in result.detail, result
    payload = json.dumps({"hook_event_name": "SessionStart", "source": "startup", "cwd": str(project.root)})
    run = run_script(project, "--hook", "--no-stamp", stdin=payload)
    assert (run.returncode, run.stdout) == (0, ""), run.stdout


def test_a_project_wired_only_with_claude_mcp_add_passes_the_session_start_hook(project):
    """Issue 39 item 15: a project wired only with `claude mcp add` (no .mcp.json, no project
    hooks; the hooks in the person's own settings, as Claude Code merges them) failed the hooks
    check with "run `python3 setup.py` to add the hooks"; it is a valid wiring."""
    (project.root / ".mcp.json").unlink()
    (project.root / ".claude" / "settings.json").unlink()
    write(project.claude, ".claude.json", json.dumps({"projects": {str(project.root): {"mcpServers": {
        "vault-index": {"type": "stdio", "command": sys.executable, "args": ["-m", "vault_index", "--watch"],
                        "env": {}}}}}}))
    user_hooks = json.dumps(settings_hooks()).replace("$CLAUDE_PROJECT_DIR", str(project.root))
    write(project.claude, "settings.json", user_hooks)  # as the person's ~/.claude/settings.json
    payload = json.dumps({"hook_event_name": "SessionStart", "source": "startup", "cwd": str(project.root)})
    run = run_script(project, "--hook", "--no-stamp", stdin=payload)  # as Claude Code runs it
    assert (run.returncode, run.stdout) == (0, ""), run.stdout
    assert "settings.json" in project.result(invariants.check_hooks).detail
    (project.claude / "settings.json").unlink()  # the server alone, no hooks anywhere: advice, not a failure
    result = project.result(invariants.check_hooks)
    assert result.status == "ok" and "setup.py" not in result.detail + result.fix, result
    assert "no hooks" in result.detail and "claude mcp add" in result.detail


# --- plugin mode -------------------------------------------------------------------------------


def test_plugin_mode_checks_the_plugin_manifests_and_launches_through_plugin_run(project, tmp_path):
    (project.root / ".mcp.json").unlink()  # a project that has the plugin alone (both: two servers, a warning)
    env = project.env(CLAUDE_PLUGIN_ROOT=str(REPO), CLAUDE_PLUGIN_DATA=str(tmp_path / "data"),
                      VAULT_INDEX_PYTHON=sys.executable)
    run = subprocess.run([sys.executable, str(SCRIPTS / "invariants.py"), "--json"], capture_output=True,
                         text=True, env=env, timeout=60)
    report = json.loads(run.stdout)
    status = {c["id"]: c for c in report["checks"]}
    assert report["mode"] == "plugin"
    for check in ("mcp-config", "mcp-launch", "hooks"):
        assert status[check]["status"] == "ok", status[check]
    assert "plugin.json" in status["mcp-config"]["detail"] and "hooks.json" in status["hooks"]["detail"]


def test_plugin_mode_fails_when_a_hook_script_is_missing(project, tmp_path):
    plugin = tmp_path / "plugin"
    (plugin / "scripts").mkdir(parents=True)
    for rel in (".claude-plugin/plugin.json", "hooks/hooks.json"):
        write(plugin, rel, (REPO / rel).read_text())
    for name in ("plugin_run", "invariants", "reindex_hook", "context_guard"):  # no precompact_snapshot
        (plugin / "scripts" / f"{name}.py").write_text("")
    ctx = Context(project=project.root, plugin_root=plugin, plugin_data=tmp_path / "data")
    result = invariants.check_hooks(ctx)
    assert result.status == "fail" and "precompact_snapshot" in result.detail


def test_plugin_mode_expands_plugin_variables(tmp_path):
    ctx = Context(project=tmp_path, plugin_root=tmp_path / "root", plugin_data=tmp_path / "data")
    assert ctx.expand("${CLAUDE_PLUGIN_ROOT}/x ${CLAUDE_PLUGIN_DATA}/m ${NOPE_UNSET_1:-d}") == (
        f"{tmp_path / 'root'}/x {tmp_path / 'data'}/m d")
    assert os.environ.get("NOPE_UNSET_1") is None
