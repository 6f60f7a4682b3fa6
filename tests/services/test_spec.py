"""The vault spec: shipped note types, a vault's own types, and the write path validating both."""

from __future__ import annotations

import json

import pytest
from vault_index.errors import ConfigError
from vault_index.services.curation.scaffold import scaffold
from vault_index.services.vault import spec
from vault_index.services.vault.vault import Vault
from vault_index.services.writes.write import Caller, WriteRequest, WriteService

SHIPPED = {"reference", "project", "decision", "lesson", "handoff", "log", "concept", "entity", "moc", "raw-source"}


@pytest.fixture
def vault_root(tmp_path, monkeypatch):
    monkeypatch.setenv("VAULT_GIT_COMMIT", "0")
    root = tmp_path / "v"
    scaffold(root)
    return root


def write(root, fields, path="research/n.md"):
    vault = Vault.open(root)
    return WriteService(vault).write(Caller.local(vault), WriteRequest("create", path, body="# N\n",
                                                                       frontmatter={"title": "N", **fields}))


def test_every_shipped_type_is_a_valid_2020_12_schema():
    import jsonschema

    types = spec.shipped_types()
    assert set(types) == SHIPPED
    for schema in types.values():
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$schema"].endswith("2020-12/schema")


def test_the_write_path_validates_the_type_and_names_field_and_rule(vault_root):
    missing = write(vault_root, {"type": "log"})
    assert missing.status == "invalid"
    assert [(p["field"], p["rule"]) for p in missing.problems] == [("date", "required")]
    wrong = write(vault_root, {"type": "log", "date": "yesterday"})
    assert {(p["field"], p["rule"]) for p in wrong.problems} >= {("date", "pattern")}
    unknown = write(vault_root, {"type": "recipe"})
    assert [(p["field"], p["rule"]) for p in unknown.problems] == [("type", "enum")]
    assert write(vault_root, {"type": "log", "date": "2026-01-02"}).status == "written"
    assert write(vault_root, {}, "research/untyped.md").status == "written"  # type is optional


def test_a_vault_adds_and_replaces_types(vault_root):
    folder = vault_root / ".vault-index" / "types"
    folder.mkdir()
    (folder / "recipe.json").write_text(json.dumps({"type": "object", "required": ["serves"],
                                                    "properties": {"serves": {"type": "integer"}}}))
    (folder / "log.json").write_text(json.dumps({"type": "object"}))  # the vault's logs need no date
    assert set(Vault.open(vault_root).note_types) == SHIPPED | {"recipe"}
    assert [(p["field"], p["rule"]) for p in write(vault_root, {"type": "recipe"}).problems] == \
        [("serves", "required")]
    assert write(vault_root, {"type": "recipe", "serves": 4}, "research/r.md").status == "written"
    assert write(vault_root, {"type": "log"}, "research/l.md").status == "written"


def test_a_broken_type_file_is_a_config_error_naming_it(vault_root):
    folder = vault_root / ".vault-index" / "types"
    folder.mkdir()
    (folder / "bad.json").write_text('{"type": "no-such-json-type"}')
    with pytest.raises(ConfigError, match="bad.json"):
        _ = Vault.open(vault_root).note_types
    (folder / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError, match="bad.json"):
        _ = Vault.open(vault_root).note_types
