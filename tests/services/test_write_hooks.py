"""Vault hooks on real child processes: order, all problems at once, time limit, broken hooks, paths."""

from __future__ import annotations

import os
import time

import pytest
from vault_index.services.vault.vault import Vault
from vault_index.services.writes import hook_trust
from vault_index.services.writes.write import Caller, WriteRequest, WriteService

ME = Caller("Me <me@example.org>", "owner", "test")
HOOKS = {
    "derive.py": "def run(fm, ctx):\n    return {'tags': ['derived'], 'owner': fm.get('owner') or 'team'}\n",
    "later.py": "def run(fm, ctx):\n    return {'owner': 'later wins', 'seen': ','.join(fm['tags'])}\n",
    "need_ticket.py": ("def run(fm, ctx):\n    return [] if fm.get('ticket') else "
                       "[{'field': 'ticket', 'message': 'name a ticket'}]\n"),
    "no_todo.py": ("def run(fm, ctx):\n    return [{'field': 'body', 'message': 'no TODO'}] if 'TODO' in ctx['body'] "
                   "else []\n"),
    "raises.py": "def run(fm, ctx):\n    raise RuntimeError('boom')\n",
    "malformed.py": "def run(fm, ctx):\n    return 'not a list'\n",
    "forever.py": "def run(fm, ctx):\n    while True:\n        pass\n",
    "forge.py": "def run(fm, ctx):\n    return {'updated_by': 'someone else', 'status': 'canonical'}\n",
}


def make_vault(tmp_path, transforms=(), validators=(), timeout=3.0, limits=None) -> WriteService:
    """`limits`: per-hook time limits ({name: seconds}); the others get `timeout`."""
    root = tmp_path / "vault"
    hooks = root / ".vault-index" / "hooks"
    hooks.mkdir(parents=True)
    (root / "notes").mkdir()
    for name, code in HOOKS.items():
        (hooks / name).write_text(code)

    def block(names):
        return "".join(f"\n    - {{path: .vault-index/hooks/{n}, timeout_s: {(limits or {}).get(n, timeout)}}}"
                       for n in names) or " []"

    (root / ".vault-index" / "config.yaml").write_text(
        "roles: {owner: {read: ['*'], write: ['*'], promote: true}}\ngit: {commit: false}\n"
        f"hooks:\n  pre_write_transform:{block(transforms)}\n  pre_write:{block(validators)}\n")
    vault = Vault.open(root)
    # The person on this machine trusts these hooks (services/writes/hook_trust.py): they run.
    hook_trust.record(vault.root, {f".vault-index/hooks/{n}": hook_trust.digest(c.encode()) for n, c in HOOKS.items()})
    return WriteService(vault)


def write(service, body="text\n", **fields):
    return service.write(ME, WriteRequest("create", "notes/a.md", body=body, frontmatter={"title": "A", **fields}))


def test_transforms_run_in_order_and_later_ones_win(tmp_path):
    service = make_vault(tmp_path, transforms=["derive.py", "later.py"])
    assert write(service).status == "written"
    fields = service.read(ME, "notes/a.md").frontmatter
    assert (fields["tags"], fields["owner"], fields["seen"]) == (["derived"], "later wins", "derived")


def test_every_validator_runs_and_all_problems_come_back_together(tmp_path):
    service = make_vault(tmp_path, validators=["need_ticket.py", "raises.py", "malformed.py", "no_todo.py"])
    outcome = write(service, body="TODO later\n", status="published")
    assert outcome.status == "invalid"
    fields = [p["field"] for p in outcome.problems]
    assert fields.count("ticket") == 1 and "body" in fields and "status" in fields  # schema problem too
    messages = " | ".join(p["message"] for p in outcome.problems)
    assert "raises.py: raised RuntimeError: boom" in messages and "malformed.py: a validator must return" in messages
    assert not (service.vault.root / "notes" / "a.md").exists()
    passing = make_vault(tmp_path / "second", validators=["need_ticket.py", "no_todo.py"])
    assert write(passing, ticket="T-1").status == "written"


def test_a_hook_that_loops_forever_is_stopped_at_its_limit(tmp_path):
    # Only the looping hook gets the short limit: a hook's limit includes its interpreter's start,
    # which took over 0.5 s at load 20 and stopped need_ticket.py too.
    service = make_vault(tmp_path, validators=["forever.py", "need_ticket.py"], limits={"forever.py": 0.5})
    started = time.monotonic()
    outcome = write(service)
    assert time.monotonic() - started < 10
    messages = [p["message"] for p in outcome.problems]
    assert any("forever.py: took longer than its 0.5 s limit" in m for m in messages)
    assert any("name a ticket" in m for m in messages)  # the next hook still ran


def test_a_transform_cannot_forge_stamps_or_promote(tmp_path):
    service = make_vault(tmp_path, transforms=["forge.py"])
    outcome = write(service)
    assert outcome.status == "invalid" and outcome.problems[0]["rule"] == "promote_only"


def test_a_hook_reached_through_a_symlink_is_a_blocking_problem(tmp_path):
    outside = tmp_path / "evil.py"
    outside.write_text("def run(fm, ctx):\n    return []\n")
    service = make_vault(tmp_path, validators=["link.py"])
    os.symlink(outside, service.vault.root / ".vault-index" / "hooks" / "link.py")
    outcome = write(service)
    assert outcome.status == "invalid" and "symlink" in outcome.problems[0]["message"]
    os.unlink(service.vault.root / ".vault-index" / "hooks" / "link.py")
    assert "does not exist" in write(service).problems[0]["message"]


@pytest.mark.parametrize("path", ["/tmp/x.py", "hooks/x.py", ".vault-index/hooks/../x.py", ".vault-index/hooks/x.sh"])
def test_hook_paths_outside_the_hooks_folder_are_a_config_error(tmp_path, path):
    from vault_index.errors import ConfigError

    root = tmp_path / "v"
    (root / ".vault-index").mkdir(parents=True)
    (root / ".vault-index" / "config.yaml").write_text(f"hooks:\n  pre_write: [{{path: '{path}'}}]\n")
    with pytest.raises(ConfigError, match=r"hooks\.pre_write\[0\]\.path"):
        Vault.open(root)


def test_promote_and_deprecate_bypass_hooks(tmp_path):
    service = make_vault(tmp_path, validators=["need_ticket.py"])
    made = write(service, ticket="T-1", confidence="low", sources=["s"], ttl_days=5)
    service.vault.config["hooks"]["pre_write"].append({"path": ".vault-index/hooks/raises.py", "timeout_s": 1})
    promoted = service.write(ME, WriteRequest("promote", "notes/a.md", base_version=made.version))
    assert promoted.status == "written"
