"""A cloned vault's hooks never run until this machine trusts their exact content (issue 22, Critical).

Real git clone, real child processes, the real CLI's `trust` command and the real trust file.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess

from vault_index.services.vault.vault import Vault
from vault_index.services.writes.write import Caller, WriteRequest, WriteService
from vault_index.surfaces.cli import main

ME = Caller("Me <me@example.org>", "owner", "test")
HOOK = """\
import os, pathlib
def run(fm, ctx):
    marker = pathlib.Path.cwd() / "hook-ran.txt"
    marker.write_text("ran")
    return {"env_keys": sorted(os.environ)}
"""
CONFIG = ("roles: {owner: {read: ['*'], write: ['*'], promote: true}}\ngit: {commit: false}\n"
          "schema_extensions: {env_keys: {type: list}}\n"
          "hooks:\n  pre_write_transform: [{path: .vault-index/hooks/grab.py, timeout_s: 20}]\n")


def _git(*args, cwd=None):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a",
                        "GIT_COMMITTER_EMAIL": "a@x"})


def cloned_vault(tmp_path):
    """Someone else's vault with a hook, cloned here: the way hook code reaches this machine."""
    origin = tmp_path / "origin"
    (origin / ".vault-index" / "hooks").mkdir(parents=True)
    (origin / "notes").mkdir()
    (origin / "notes" / "keep.md").write_text("# keep\n")
    (origin / ".vault-index" / "config.yaml").write_text(CONFIG)
    (origin / ".vault-index" / "hooks" / "grab.py").write_text(HOOK)
    _git("init", "-q", str(origin))
    _git("add", "-A", cwd=origin)
    _git("commit", "-qm", "vault with a hook", cwd=origin)
    clone = tmp_path / "clone"
    _git("clone", "-q", str(origin), str(clone))
    return clone


def write(root, name="a.md"):
    service = WriteService(Vault.open(root))
    return service, service.write(ME, WriteRequest("create", f"notes/{name}", body="text\n",
                                                   frontmatter={"title": "A"}))


def test_a_cloned_vaults_hook_does_not_run_and_the_write_says_so(tmp_path):
    clone = cloned_vault(tmp_path)
    _, outcome = write(clone)
    assert not (clone / "hook-ran.txt").exists()  # old code: the hook ran on this first write
    assert outcome.status == "written"
    assert any("grab.py is not run" in n and "vault-index trust" in n for n in outcome.notices)
    from vault_index.services.curation import curation

    issues = curation.hook_issues(Vault.open(clone))
    assert [i["check"] for i in issues] == ["untrusted_hook"] and issues[0]["path"].endswith("grab.py")


def test_trusted_hooks_run_with_a_minimal_environment_and_a_change_untrusts_them(tmp_path, monkeypatch, capsys):
    from vault_index.services.writes import hook_trust

    clone = cloned_vault(tmp_path)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    assert main(["trust", str(clone)]) == 0
    shown = capsys.readouterr().out
    assert "grab.py" in shown and hook_trust.digest(HOOK.encode()) in shown  # what was trusted is shown
    _, outcome = write(clone)
    assert outcome.status == "written" and not outcome.notices
    assert (clone / "hook-ran.txt").exists()
    env_keys = WriteService(Vault.open(clone)).read(ME, "notes/a.md").frontmatter["env_keys"]
    assert set(env_keys) <= {"PATH", "HOME", "LANG", "LC_CTYPE"}  # old code: the whole environment (44 here)
    assert "AWS_SECRET_ACCESS_KEY" not in env_keys
    record = hook_trust.trust_file()
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert not str(record).startswith(str(clone))  # outside the vault: a clone cannot bring its own trust

    (clone / "hook-ran.txt").unlink()
    (clone / ".vault-index" / "hooks" / "grab.py").write_text(HOOK + "# changed upstream\n")
    _, changed = write(clone, "b.md")
    assert not (clone / "hook-ran.txt").exists() and any("grab.py is not run" in n for n in changed.notices)
    assert main(["trust", "--list", "--json", str(clone)]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["hooks"][0]["trusted"] is False

    assert main(["trust", str(clone)]) == 0 and main(["trust", "--revoke", str(clone)]) == 0
    capsys.readouterr()
    _, revoked = write(clone, "c.md")
    assert not (clone / "hook-ran.txt").exists() and revoked.notices


def test_a_trust_file_others_can_write_grants_nothing(tmp_path):
    from vault_index.services.writes import hook_trust

    clone = cloned_vault(tmp_path)
    hook_trust.grant(Vault.open(clone))
    record = hook_trust.trust_file()
    try:
        os.chmod(record, 0o666)
        _, outcome = write(clone)
        assert not (clone / "hook-ran.txt").exists() and outcome.notices
    finally:
        os.chmod(record, 0o600)
    _, trusted = write(clone, "b.md")
    assert (clone / "hook-ran.txt").exists() and not trusted.notices
