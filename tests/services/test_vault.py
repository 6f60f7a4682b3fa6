"""services/vault/vault.py: config validation with key paths, grants, collections, pattern checks."""

from __future__ import annotations

import os
import time

import pytest
from vault_index.errors import ConfigError, NotFoundError
from vault_index.services.vault.vault import GUEST, Grants, Vault, load_config_text, pattern_problem

GOOD = """
version: 1
vault_name: team
collections: [pricing, research]
roles:
  analyst: {read: [pricing], write: [pricing]}
  admin: {read: ["*"], write: ["*"], promote: true}
local_role: admin
schema_extensions:
  domain: {type: string, enum: [accumulation, generative], default: accumulation}
  ticket: {type: string, pattern: "^T-[0-9]+$"}
hooks:
  pre_write: [{path: .vault-index/hooks/check.py, timeout_s: 2}]
git: {commit: true}
"""


def _vault(tmp_path, text: str | None) -> Vault:
    root = tmp_path / "vault"
    (root / ".vault-index").mkdir(parents=True, exist_ok=True)
    if text is not None:
        (root / ".vault-index" / "config.yaml").write_text(text)
    return Vault.open(root)


def test_a_good_config_loads_with_defaults(tmp_path):
    vault = _vault(tmp_path, GOOD)
    assert vault.config_path is not None and vault.local_role == "admin" and vault.commit_wanted
    assert vault.config["decay"]["aging_after_fraction"] == 0.75
    assert vault.config["hooks"]["pre_write_transform"] == []
    assert vault.note_schema["properties"]["ticket"]["pattern"] == "^T-[0-9]+$"


@pytest.mark.parametrize("text, where", [
    ("roles:\n  analyst: {read: [a], wirte: [a]}\n", "roles.analyst.wirte: unknown key"),
    ("version: 1\nrole: {}\n", "role: unknown key"),
    ("git: {comit: true}\n", "git.comit: unknown key"),
    ("hooks: {post_write: []}\n", "hooks.post_write: unknown key"),
    ("schema_extensions:\n  owner: {type: string, requried: true}\n", "schema_extensions.owner.requried: unknown key"),
    ("hooks:\n  pre_write: [{path: .vault-index/hooks/a.py, timeot_s: 1}]\n", "hooks.pre_write[0].timeot_s"),
    ("decay: {aging_after_fraction: 2}\n", "decay.aging_after_fraction"),
    ("roles:\n  a: {read: pricing}\n", "roles.a.read"),
])
def test_a_typo_anywhere_is_a_loud_error_naming_its_key_path(tmp_path, text, where):
    with pytest.raises(ConfigError) as caught:
        _vault(tmp_path, text)
    assert where in str(caught.value) and "config.yaml" in str(caught.value)


def test_every_problem_is_reported_at_once(tmp_path):
    with pytest.raises(ConfigError) as caught:
        _vault(tmp_path, "git: {comit: true}\ndecay: {agin: 1}\nversion: 2\n")
    message = str(caught.value)
    assert "git.comit" in message and "decay.agin" in message and "version" in message


@pytest.mark.parametrize("text, words", [
    ("a: [unclosed\n", "not valid YAML at line"),
    ("- a list\n", "top level must be a mapping"),
    ("local_role: ghost\nroles: {a: {}}\n", "local_role: 'ghost' is not one of the roles"),
    ("schema_extensions:\n  title: {type: string}\n", "core field"),
    ("hooks:\n  pre_write: [{path: /etc/hook.py}]\n", "must be a file inside .vault-index/hooks/"),
    ("hooks:\n  pre_write: [{path: .vault-index/hooks/../../x.py}]\n", "must be a file inside"),
    ("schema_extensions:\n  n: {type: integer, default: nope}\n", "schema_extensions.n.default"),
])
def test_bad_configs_get_clear_messages(tmp_path, text, words):
    with pytest.raises(ConfigError, match=words.replace(".", r"\.").replace("(", r"\(").replace("[", r"\[")):
        _vault(tmp_path, text)


@pytest.mark.parametrize("pattern", [r"(a)\1", r"^(?=x)x$", r"(?<!a)b"])
def test_patterns_the_linear_time_engine_cannot_run_are_refused_at_load(tmp_path, pattern):
    assert "RE2" in pattern_problem(pattern)
    text = f"schema_extensions:\n  code: {{type: string, pattern: '{pattern}'}}\n"
    with pytest.raises(ConfigError, match=r"schema_extensions\.code\.pattern: RE2"):
        _vault(tmp_path, text)


@pytest.mark.parametrize("pattern", [r"^T-[0-9]+$", r"^[a-z]+(-[a-z]+)?$", r"(ab){2}c*", r"^\d{4}-\d{2}$"])
def test_ordinary_patterns_pass_and_run_fast(pattern):
    import re

    assert pattern_problem(pattern) is None
    started = time.monotonic()
    re.search(pattern, "a" * 5000 + "!")
    assert time.monotonic() - started < 1


def test_invalid_and_overlong_patterns_are_refused():
    assert "cannot run it" in pattern_problem("(unclosed")
    assert "longer than" in pattern_problem("a" * 600)


def test_without_a_config_the_local_person_is_the_owner(tmp_path, monkeypatch):
    monkeypatch.delenv("VAULT_GIT_COMMIT", raising=False)
    root = tmp_path / "project"
    root.mkdir()
    vault = Vault.open(root)
    assert vault.config_path is None and vault.local_role == "owner" and not vault.commit_wanted
    assert vault.grants(None).can("promote", "anything") and vault.grants("owner").can("write", "")
    assert vault.grants("stranger") == GUEST
    monkeypatch.setenv("VAULT_GIT_COMMIT", "1")
    assert Vault.open(root).commit_wanted


def test_grants_with_a_config(tmp_path):
    vault = _vault(tmp_path, GOOD)
    analyst = vault.grants("analyst")
    assert analyst.can("read", "pricing") and analyst.can("write", "pricing")
    assert not analyst.can("read", "research") and not analyst.can("promote", "pricing")
    admin = vault.grants("admin")
    assert admin.can("promote", "research") and admin.can("read", "")
    for role in (None, "", "ghost", "ADMIN"):
        assert vault.grants(role) == GUEST
    assert not Grants(frozenset(), frozenset(), True).can("promote", "pricing")  # promote needs write too


def test_collection_comes_from_the_path(tmp_path):
    vault = _vault(tmp_path, GOOD)
    (vault.root / "pricing").mkdir()
    assert vault.collection_of("pricing/a.md") == "pricing"
    assert vault.collection_of(str(vault.root / "pricing" / "sub" / "a.md")) == "pricing"
    assert vault.collection_of("./pricing/../research/b.md") == "research"
    assert vault.collection_of("top.md") == ""


def test_resolve_gives_one_answer_for_outside_and_missing(tmp_path):
    vault = _vault(tmp_path, GOOD)
    (vault.root / "pricing").mkdir()
    (vault.root / "pricing" / "out").symlink_to(tmp_path, target_is_directory=True)
    assert vault.resolve("pricing/a.md") == vault.root / "pricing" / "a.md"
    messages = set()
    for path in ("../x.md", "pricing/out/x.md"):
        with pytest.raises(NotFoundError) as caught:
            vault.resolve(path)
        messages.add(str(caught.value).replace(path, "P"))
    assert len(messages) == 1


def test_a_symlinked_config_is_refused(tmp_path):
    elsewhere = tmp_path / "evil.yaml"
    elsewhere.write_text("roles: {guest: {read: ['*']}}\n")
    root = tmp_path / "vault"
    (root / ".vault-index").mkdir(parents=True)
    os.symlink(elsewhere, root / ".vault-index" / "config.yaml")
    with pytest.raises(ConfigError, match="symlink"):
        Vault.open(root)


def test_load_config_text_fills_defaults():
    config = load_config_text("version: 1\n")
    assert config["git"] == {"commit": True} and config["roles"] == {} and config["schema_extensions"] == {}
