"""Note frontmatter: tolerant on read (report and coerce), strict on write (JSON Schema), stable order.

Dates stay strings when YAML is read (the loader drops PyYAML's timestamp resolver), so an
impossible date such as 2024-02-30 is a reported problem, never a ValueError from inside the
parser. Fields the schema does not know are kept as they are; an existing note keeps its field
order, and a new note gets the core fields in CORE_ORDER, then extensions, then the rest.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from functools import lru_cache

import yaml

from vault_index.services.vault.fields import CORE_FIELDS

CORE_ORDER = CORE_FIELDS
FENCE = "---"
MAX_FRONTMATTER_CHARS = 64_000
LIST_FIELDS = ("sources", "tags", "questions_answered", "questions_raised")
# Promotion refuses a draft that lacks any of these (plus the vault's required extensions).
COMPLETE_FOR_PROMOTE = ("title", "collection", "confidence", "sources", "ttl_days")


# Trigger: lint reads every note of a vault; the pure-Python YAML scanner took ~4 ms a note
# (bench --links, 10k notes). Why: libyaml's scanner, when PyYAML is built with it, is many times
# faster and feeds the same Python constructor. Outcome: CSafeLoader where available.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SAFE_LOADER):
    """SafeLoader without implicit timestamps: a date is text we check, not a parser crash."""


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes date-like strings plain (2024-05-01, not '2024-05-01')."""


for _cls in (_Loader, _Dumper):
    _cls.yaml_implicit_resolvers = {
        key: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


class _NoteLoader(_Loader):
    """Note frontmatter: no aliases. A few hundred bytes of nested aliases expand to millions of
    values when the fields are walked or written back (the index's reader refuses them too)."""

    # Trigger: with libyaml (CSafeLoader) the composer runs in C, so a compose-time check never ran
    # and the alias bomb was accepted again. Why: an alias is the one way a node is reached twice.
    # Outcome: refused where the Python constructor meets a node it has already seen.
    def construct_object(self, node, deep=False):
        if node in self.constructed_objects or node in self.recursive_objects:
            raise yaml.constructor.ConstructorError(None, None, "YAML aliases (*name) are not allowed in "
                                                    "frontmatter", node.start_mark)
        return super().construct_object(node, deep)


def load_yaml(text: str, *, aliases: bool = True):
    """Parse YAML with dates kept as strings; raises ValueError with the line on bad YAML."""
    try:
        return yaml.load(text, Loader=_Loader if aliases else _NoteLoader)  # noqa: S506 - SafeLoader subclasses
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError(f"not valid YAML{where} ({problem})") from None
    except RecursionError:
        raise ValueError("YAML nested too deeply") from None


def split(text: str) -> tuple[str | None, str]:
    """(frontmatter YAML or None, body). A note without a leading '---' line has no frontmatter."""
    if not text.startswith(FENCE):
        return None, text
    first, _, rest = text.partition("\n")
    if first.rstrip("\r").strip() != FENCE:
        return None, text
    lines = rest.split("\n")
    for index, line in enumerate(lines):
        if line.rstrip("\r") in (FENCE, "..."):
            return "\n".join(lines[:index]), "\n".join(lines[index + 1:])
    return None, text


def problem(field: str, rule: str, message: str) -> dict:
    return {"field": field, "rule": rule, "message": message}


def parse(text: str) -> tuple[dict, str, list[dict]]:
    """(frontmatter, body, problems), never raising: the tolerant read."""
    raw, body = split(text)
    if raw is None:
        return {}, body, []
    if len(raw) > MAX_FRONTMATTER_CHARS:
        return {}, body, [problem("frontmatter", "size", f"frontmatter over {MAX_FRONTMATTER_CHARS:,} characters")]
    try:
        data = load_yaml(raw, aliases=False)
    except ValueError as exc:
        return {}, body, [problem("frontmatter", "yaml", f"frontmatter is {exc}")]
    if data is None:
        return {}, body, []
    if not isinstance(data, dict):
        return {}, body, [problem("frontmatter", "type", "frontmatter must be a mapping of fields")]
    return {str(k): v for k, v in data.items()}, body, []


def coerce(fields: dict) -> tuple[dict, list[dict]]:
    """Read-side repairs that lose nothing: a comma string becomes a list, a real date an ISO string."""
    fixed, notes = dict(fields), []
    for name in LIST_FIELDS:
        value = fixed.get(name)
        if isinstance(value, str):
            fixed[name] = [part.strip() for part in value.split(",") if part.strip()]
            notes.append(problem(name, "coerced", f"{name} was a string; read as a list"))
    for name, value in fixed.items():
        if isinstance(value, (dt.date, dt.datetime)):
            fixed[name] = value.isoformat()[:10]
    return fixed, notes


def validate(fields: dict, schema: dict) -> list[dict]:
    """Every schema problem at once, each {field, rule, message}; [] when valid."""
    validator = _validator(json.dumps(schema, sort_keys=True)) if id(schema) not in _BY_ID else _BY_ID[id(schema)][1]
    if len(_BY_ID) < MAX_CACHED_SCHEMAS:
        _BY_ID[id(schema)] = (schema, validator)  # the schema is kept alive, so its id stays its own
    from vault_index.services.vault.schema_safety import UnresolvableRef, iter_errors

    try:
        errors = iter_errors(validator, _jsonable(fields))
    except UnresolvableRef as exc:  # a $ref outside the vault's own types: reported, never fetched
        return [problem("frontmatter", "$ref", f"the schema names a reference outside the vault's own type files "
                        f"({exc}); fix the type file")]
    except ValueError as exc:  # a pattern RE2 cannot run (refused at load; this is the last guard)
        return [problem("frontmatter", "pattern", f"a schema pattern was refused: {exc}")]
    found = []
    for error in sorted(errors, key=lambda e: [str(p) for p in e.path]):
        path = ".".join(str(p) for p in error.absolute_path)
        if error.validator == "required":
            missing = error.message.split("'")[1] if "'" in error.message else path
            found.append(problem(missing, "required", f"{missing} is required"))
            continue
        field = path or "frontmatter"
        message = error.message
        if error.validator == "format":
            message = f"{error.instance!r} is not a real date (YYYY-MM-DD)"
        found.append(problem(field, str(error.validator), f"{field}: {message}"))
    return found


MAX_CACHED_SCHEMAS = 256
_BY_ID: dict[int, tuple[dict, object]] = {}


@lru_cache(maxsize=64)
def _validator(schema_json: str):
    """One compiled validator per distinct schema (lint checks thousands of notes against a few)."""
    from vault_index.services.vault.schema_safety import validator_for

    return validator_for(json.loads(schema_json))


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return value


def ordered(fields: dict, existing: Iterable[str] = (), extensions: Iterable[str] = ()) -> dict:
    """`fields` in a stable order: existing keys where they were, new core fields in CORE_ORDER, then
    extensions, then any other new key in the order given."""
    existing = [k for k in existing if k in fields]
    rank = {k: i for i, k in enumerate([*CORE_ORDER, *extensions])}
    new = sorted((k for k in fields if k not in existing), key=lambda k: (rank.get(k, len(rank)), ))
    if not existing:
        return {k: fields[k] for k in new}
    return {k: fields[k] for k in [*existing, *new]}


def render(fields: dict, body: str) -> str:
    """The note's text: '---', the fields as YAML, '---', the body."""
    if not fields:
        return body
    head = yaml.dump(_jsonable(fields), Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=1000)
    return f"{FENCE}\n{head}{FENCE}\n{body}"


def promote_problems(fields: dict, required_extensions: Iterable[str] = ()) -> list[dict]:
    """What a draft lacks before it may become canonical."""
    found = []
    for name in (*COMPLETE_FOR_PROMOTE, *required_extensions):
        value = fields.get(name)
        if value in (None, "", [], {}):
            found.append(problem(name, "complete", f"{name} must be filled in before promotion"))
    return found


def decay(fields: dict, today: dt.date, aging_fraction: float) -> dict | None:
    """{state: fresh|aging|stale, age_days, ttl_days} from updated (else created) and ttl_days; None
    when the note has no ttl_days or no readable date."""
    ttl = fields.get("ttl_days")
    stamp = fields.get("updated") or fields.get("created")
    if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0 or not isinstance(stamp, str):
        return None
    try:
        since = dt.date.fromisoformat(stamp[:10])
    except ValueError:
        return None
    age = (today - since).days
    state = "stale" if age > ttl else "aging" if age >= ttl * aging_fraction else "fresh"
    return {"state": state, "age_days": age, "ttl_days": ttl}
