"""A vault: its root, its validated config (.vault-index/config.yaml), roles and the collection of a path.

The config is checked against `schemas/config.schema.json` (additionalProperties false at every
level), so a typo such as `wirte:` is a loud ConfigError naming `roles.analyst.wirte`, never a
silently ignored key. Without a config file the built-in default applies: one role, `owner`, that
may read, write and promote everything, and the local person is that owner.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Literal

from vault_index.engine.files.fileio import STATE_DIR, open_folder, read_current, real_parts
from vault_index.errors import ConfigError, NotFoundError, UnsafePathError
from vault_index.services.vault.fields import CORE_FIELDS

CONFIG_NAME = "config.yaml"
HOOKS_DIR = (STATE_DIR, "hooks")
WILDCARD = "*"
OWNER = "owner"
DEFAULT_AGING_FRACTION = 0.75  # aging from 3/4 of ttl_days: time to review before the note turns stale
DEFAULT_HOOK_TIMEOUT_S = 5.0
MAX_CONFIG_BYTES = 256_000
GIT_COMMIT_ENV = "VAULT_GIT_COMMIT"  # without a config file, commits happen only when this asks for them


@dataclass(frozen=True)
class Grants:
    read: frozenset[str]  # collection names, or {"*"}
    write: frozenset[str]
    promote: bool

    def can(self, action: Literal["read", "write", "promote"], collection: str) -> bool:
        """Whether this role may `action` in `collection` ("*" matches every collection, the root's "" too).

        Promote needs the promote flag and a write grant on the collection: promoting changes the note.
        """
        if action == "promote":
            return self.promote and self.can("write", collection)
        names = self.read if action == "read" else self.write
        return WILDCARD in names or collection in names


GUEST = Grants(frozenset(), frozenset(), False)
OWNER_GRANTS = Grants(frozenset({WILDCARD}), frozenset({WILDCARD}), True)


@dataclass(frozen=True)
class Vault:
    root: Path  # real path of the vault (or project) folder
    config: dict  # validated config, defaults filled
    config_path: Path | None  # None: no config file, the built-in default applies
    _env_commit: bool = field(default=False, compare=False, repr=False)

    @classmethod
    def open(cls, root: str | Path) -> Vault:
        """The vault at `root`; raises ConfigError (with the key path) when its config is malformed."""
        real = Path(os.path.realpath(Path(root).expanduser()))
        if not real.is_dir():
            raise NotFoundError(f"{root} is not a folder; give the vault's folder")
        raw = _read_config(real)
        env_commit = os.environ.get(GIT_COMMIT_ENV, "").strip().lower() in {"1", "true", "yes", "on"}
        if raw is None:
            return cls(real, _defaults({}), None, env_commit)
        config = load_config_text(raw, f"{STATE_DIR}/{CONFIG_NAME}")
        return cls(real, config, real / STATE_DIR / CONFIG_NAME, env_commit)

    @property
    def served_as(self) -> str:
        """How messages name the root: a config file makes a curated vault, else it is a project."""
        return "the vault" if self.config_path is not None else "the project"

    # --- roles ---------------------------------------------------------------------------------

    @property
    def local_role(self) -> str | None:
        """The role of the person at this machine (stdio, CLI) unless --role or VAULT_ROLE says otherwise."""
        if self.config_path is None:
            return OWNER
        return self.config.get("local_role")

    def grants(self, role: str | None) -> Grants:
        """The role's grants; an unknown or missing role is the deny-all guest (with a config file)."""
        if self.config_path is None:
            return OWNER_GRANTS if role in (None, OWNER) else GUEST
        spec = self.config["roles"].get(role) if role else None
        if spec is None:
            return GUEST
        return Grants(frozenset(spec.get("read", [])), frozenset(spec.get("write", [])), bool(spec.get("promote")))

    @property
    def role_names(self) -> tuple[str, ...]:
        """The roles a caller may name here: the config's, or the built-in `owner` without a config file."""
        return tuple(self.config["roles"]) if self.config_path is not None else (OWNER,)

    def role_problem(self, role: str) -> str | None:
        """Why `role` names no role of this vault (a typo such as `editr`), else None."""
        if role in self.role_names:
            return None
        where = f"{STATE_DIR}/{CONFIG_NAME}" if self.config_path is not None else "a vault without a config file"
        return (f"no role {role!r} in {where}; the roles are: {', '.join(self.role_names) or 'none'}"
                if self.role_names else f"no role {role!r}: {where} defines no roles")

    def suggested_role(self) -> str | None:
        """A role to show in a hint: the local person's, else one that reads and writes everything, else the first."""
        names = self.role_names
        if self.local_role in names:
            return self.local_role
        for name in names:
            spec = self.config["roles"].get(name) or {}
            if WILDCARD in spec.get("read", []) and WILDCARD in spec.get("write", []):
                return name
        return names[0] if names else None

    # --- paths ---------------------------------------------------------------------------------

    def collection_of(self, path: str | Path) -> str:
        """The first folder below the root ("" for a file at the root): from the path, never the frontmatter."""
        parts = self.relative_parts(path)
        return parts[0] if len(parts) > 1 else ""

    def relative_parts(self, path: str | Path) -> tuple[str, ...]:
        """The parts of `path` below the root: its real path where it stays inside, else as written."""
        try:
            return real_parts(self.root, path)
        except UnsafePathError:
            return Path(os.path.normpath(path)).parts[1 if Path(path).is_absolute() else 0:]

    def resolve(self, path: str) -> Path:
        """Vault-relative or absolute -> the real path inside the root.

        Raises NotFoundError with one text whether the path is outside, unsafe or missing: the
        write service reports the precise reason only to callers allowed to read there.
        """
        try:
            return self.root.joinpath(*real_parts(self.root, path))
        except UnsafePathError:
            raise NotFoundError(not_visible(str(path))) from None

    # --- settings ------------------------------------------------------------------------------

    @property
    def commit_wanted(self) -> bool:
        """git.commit from the config; without a config file only when VAULT_GIT_COMMIT asks."""
        if self.config_path is None:
            return self._env_commit
        return bool(self.config["git"]["commit"])

    @property
    def collections(self) -> tuple[str, ...]:
        return tuple(self.config["collections"])

    @cached_property
    def note_types(self) -> dict[str, dict]:
        """The note types of this vault's spec: the shipped ones, extended or replaced (services/vault/spec.py)."""
        from vault_index.services.vault import spec

        return spec.vault_types(self.root / STATE_DIR)

    def schema_for(self, fields: dict) -> dict:
        """The frontmatter schema a note with these fields must meet: core, link fields, its type.

        One schema object per type, built once: lint validates thousands of notes against a few."""
        from vault_index.services.vault import spec

        kind = fields.get("type")
        key = kind if isinstance(kind, str) and kind in self.note_types else ""
        if key not in self._schemas:
            self._schemas[key] = spec.schema_for(self.note_schema, self.note_types, {"type": key})
        return self._schemas[key]

    @cached_property
    def _schemas(self) -> dict[str, dict]:
        return {}

    @cached_property
    def note_schema(self) -> dict:
        """The frontmatter JSON Schema: the core fields plus this vault's schema_extensions."""
        schema = json.loads(resources.files("vault_index.schemas").joinpath("note.schema.json").read_text())
        for name, spec in self.config["schema_extensions"].items():
            schema["properties"][name] = extension_schema(spec)
            if spec.get("required"):
                schema["required"].append(name)
        return schema


def not_visible(path: str) -> str:
    """The one answer for a note that is missing or that the caller may not see (no existence oracle)."""
    return f"{path}: no such note, or not one your role may see"


def _read_config(root: Path) -> str | None:
    try:
        folder = open_folder(root, (STATE_DIR,))
    except FileNotFoundError:
        return None
    except UnsafePathError as exc:
        raise ConfigError(f"{STATE_DIR}: {exc}") from exc
    try:
        data, _ = read_current(folder, CONFIG_NAME, f"{STATE_DIR}/{CONFIG_NAME}")
    except UnsafePathError as exc:
        raise ConfigError(str(exc)) from exc
    finally:
        os.close(folder)
    if data is None:
        return None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{STATE_DIR}/{CONFIG_NAME} is over {MAX_CONFIG_BYTES:,} bytes; a config is a short file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{STATE_DIR}/{CONFIG_NAME} is not UTF-8 (byte {exc.start}); save it as UTF-8") from exc


def load_config_text(text: str, shown: str = CONFIG_NAME) -> dict:
    """Parse and validate a config; every problem is reported at once, each with its key path."""
    from vault_index.services.vault.frontmatter import load_yaml

    try:
        data = load_yaml(text)
    except ValueError as exc:
        raise ConfigError(f"{shown}: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{shown}: the top level must be a mapping of keys (version, roles, ...)")
    problems = config_problems(data)
    if problems:
        raise ConfigError(f"{shown}: " + "; ".join(problems))
    return _defaults(data)


def config_problems(data: dict) -> list[str]:
    """Every problem in a parsed config as 'key.path: what is wrong'."""
    import jsonschema

    schema = json.loads(resources.files("vault_index.schemas").joinpath("config.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    problems = [_describe(error) for error in sorted(validator.iter_errors(data), key=lambda e: list(e.path))]
    if problems:
        return problems
    for name, spec in data.get("schema_extensions", {}).items():
        where = f"schema_extensions.{name}"
        if name in CORE_FIELDS:
            problems.append(f"{where}: {name} is a core field; pick another name")
        if "pattern" in spec:
            problem = pattern_problem(spec["pattern"])
            if problem:
                problems.append(f"{where}.pattern: {problem}")
            elif spec["type"] not in ("string", "date", "list"):
                problems.append(f"{where}.pattern: a pattern applies to string, date or list fields only")
        if "default" in spec:
            import jsonschema as js

            errors = list(js.Draft202012Validator(extension_schema(spec)).iter_errors(spec["default"]))
            problems += [f"{where}.default: {e.message}" for e in errors]
    problems += _collection_problems(data)
    local = data.get("local_role")
    if local and local not in data.get("roles", {}):
        problems.append(f"local_role: {local!r} is not one of the roles ({', '.join(data.get('roles', {})) or 'none'})")
    for phase in ("pre_write_transform", "pre_write"):
        for index, hook in enumerate(data.get("hooks", {}).get(phase, [])):
            if problem := hook_path_problem(hook["path"]):
                problems.append(f"hooks.{phase}[{index}].path: {problem}")
    return problems


def _collection_problems(data: dict) -> list[str]:
    """A role granting a collection the `collections` list lacks: a typo on one side or the other.

    Trigger: `read: [reserch]` (or `collections: [decisons]`) granted nothing, silently. Why: the
    grant looked right and the reader saw nothing. Outcome: with a `collections` list, each name
    a role grants must be in it ("*" aside), reported with the key path and the closest name.
    """
    import difflib

    declared = list(data.get("collections") or [])
    if not declared:
        return []
    problems = []
    for role, spec in (data.get("roles") or {}).items():
        for action in ("read", "write"):
            for index, name in enumerate((spec or {}).get(action, [])):
                if name == WILDCARD or name in declared:
                    continue
                close = difflib.get_close_matches(name, declared, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                problems.append(f"roles.{role}.{action}[{index}]: {name!r} is not one of the collections "
                                f"({', '.join(declared)}){hint}")
    return problems


def _describe(error) -> str:
    path = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in error.absolute_path).replace(".[", "[")
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in allowed)
        where = [f"{path}.{k}" if path else str(k) for k in extra]
        return "; ".join(f"{w}: unknown key (allowed here: {', '.join(sorted(allowed))})" for w in where)
    return f"{path or '(top level)'}: {error.message}"


def _defaults(data: dict) -> dict:
    config = dict(data)
    config.setdefault("version", 1)
    config.setdefault("collections", [])
    config.setdefault("roles", {})
    config.setdefault("schema_extensions", {})
    hooks = dict(config.get("hooks") or {})
    for phase in ("pre_write_transform", "pre_write"):
        hooks[phase] = [{"path": h["path"], "timeout_s": h.get("timeout_s", DEFAULT_HOOK_TIMEOUT_S)}
                        for h in hooks.get(phase, [])]
    config["hooks"] = hooks
    config["git"] = {"commit": True, **(config.get("git") or {})}
    config["decay"] = {"aging_after_fraction": DEFAULT_AGING_FRACTION, **(config.get("decay") or {})}
    return config


def extension_schema(spec: dict) -> dict:
    """JSON Schema of one schema_extensions field."""
    kind = spec["type"]
    if kind == "date":
        schema = {"type": "string", "format": "date", "pattern": r"^\d{4}-\d{2}-\d{2}$"}
    elif kind == "list":
        item: dict = {"type": "string"}
        if "pattern" in spec:
            item["pattern"] = spec["pattern"]
        if "enum" in spec:
            item["enum"] = spec["enum"]
        return {"type": "array", "items": item}
    else:
        schema = {"type": kind}
    if "enum" in spec:
        schema["enum"] = spec["enum"]
    if "pattern" in spec and kind == "string":
        schema["pattern"] = spec["pattern"]
    return schema


def hook_path_problem(raw: str) -> str | None:
    """A hook must be a .py file inside .vault-index/hooks/ (no '..', no absolute path)."""
    parts = Path(raw).parts
    if Path(raw).is_absolute() or ".." in parts or len(parts) < 3 or tuple(parts[:2]) != HOOKS_DIR:
        return f"{raw!r} must be a file inside {'/'.join(HOOKS_DIR)}/ given relative to the vault root"
    if not raw.endswith(".py"):
        return f"{raw!r} must be a Python module (.py)"
    return None


# --- patterns ------------------------------------------------------------------------------------


def pattern_problem(pattern: str) -> str | None:
    """Why a schema pattern is refused: RE2 (linear time) cannot run it, or it is too long.

    Trigger: a structural check for nested quantifiers missed `^(a|a)*$`, and one note value then
    hung read and write for over 20 s while the write held the lock (issue 22).
    Outcome: every vault pattern runs on RE2 (services/vault/schema_safety.py); what RE2 cannot express
    (backreferences, lookaround) is refused at config load.
    """
    from vault_index.services.vault.schema_safety import pattern_problem as re2_problem

    return re2_problem(pattern)
