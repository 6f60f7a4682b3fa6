"""The vault spec: note types, each a JSON Schema 2020-12 for its frontmatter.

The package ships the types in `schemas/types/<type>.json`; a vault adds a type, or replaces a
shipped one of the same name, with `.vault-index/types/<type>.json`. A note's frontmatter is
checked against all of: the core schema (`schemas/note.schema.json` plus the vault's
schema_extensions), the link fields every type may carry (`schemas/links.schema.json`) and, when
it names one, the schema of its `type`. One validator for the write path and for lint
(frontmatter.validate, on `jsonschema`'s Draft202012Validator).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

from vault_index.errors import ConfigError

TYPES_DIR = "types"  # inside the package's schemas/ and inside the vault's .vault-index/
MAX_TYPE_SCHEMA_BYTES = 100_000
TYPE_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_")


def shipped_types() -> dict[str, dict]:
    """The note types the package ships, by name."""
    return dict(_shipped())


@lru_cache(maxsize=1)
def _shipped() -> tuple[tuple[str, dict], ...]:
    folder = resources.files("vault_index.schemas").joinpath(TYPES_DIR)
    found = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            found.append((entry.name[:-5], json.loads(entry.read_text(encoding="utf-8"))))
    return tuple(found)


def links_schema() -> dict:
    return json.loads(resources.files("vault_index.schemas").joinpath("links.schema.json").read_text())


def vault_types(state_dir: Path) -> dict[str, dict]:
    """The shipped types with the vault's own (`<state_dir>/types/*.json`) added or put in their place.

    A vault type file that is not a readable, valid JSON Schema is a ConfigError naming the file:
    a spec that cannot be read must not silently let every note through.
    """
    import jsonschema

    from vault_index.services.vault.schema_safety import schema_pattern_problems

    types = shipped_types()
    folder = state_dir / TYPES_DIR
    if not folder.is_dir() or folder.is_symlink():
        return types
    for path in sorted(folder.glob("*.json")):
        name = path.name[:-5]
        shown = f"{state_dir.name}/{TYPES_DIR}/{path.name}"
        if not name or set(name) - TYPE_NAME_CHARS:
            raise ConfigError(f"{shown}: a type name uses a-z, 0-9, '-' and '_' only")
        try:
            if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_TYPE_SCHEMA_BYTES:
                raise ConfigError(f"{shown}: not a regular file under {MAX_TYPE_SCHEMA_BYTES:,} bytes")
            schema = json.loads(path.read_text(encoding="utf-8"))
            jsonschema.Draft202012Validator.check_schema(schema)
            if patterns := schema_pattern_problems(schema):
                raise ConfigError(f"{shown}: pattern {patterns[0]}")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{shown}: cannot read it as JSON ({exc}); fix or remove the file") from None
        except jsonschema.SchemaError as exc:
            raise ConfigError(f"{shown}: not a valid JSON Schema 2020-12 ({exc.message})") from None
        types[name] = schema
    return types


def schema_for(core: dict, types: dict[str, dict], fields: dict) -> dict:
    """The schema a note with these `fields` must meet: core, link fields and its type's own."""
    from vault_index.services.vault.schema_safety import TYPES_BASE, embedded_types

    links = links_schema()
    links["properties"]["type"] = {"enum": sorted(types)}
    parts = [core, links]
    kind = fields.get("type")
    if isinstance(kind, str) and kind in types:
        parts.append({"$ref": f"{kind}.json"})  # its own resource: its "#/..." references stay its own
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"{TYPES_BASE}note.json",
            "allOf": parts, "$defs": embedded_types(types)}
