"""Validating frontmatter against a vault's own schemas without a network call or a regex that hangs.

Two things a vault's type files and schema_extensions could do to every read, lint and write:

- `$ref` to a URL: jsonschema fetched it (no timeout), so a server that never answers hung every
  read. Here references resolve through a `referencing` registry holding only the vault's types
  (embedded at TYPES_BASE + "<name>.json", so `"$ref": "concept.json"` works); anything else is refused,
  and the validation reports it as a problem (`UnresolvableRef`), never a traceback.
- `pattern`/`patternProperties`: jsonschema matched them with Python's backtracking `re`, so
  `^(a|a)*$` against one long value held the write lock for 20 s. Here they run on RE2 (linear
  time); a pattern RE2 cannot express (backreferences, lookaround) is refused at load.

Trigger and why: issue 22, High. Outcome: `validator_for(schema)`; ADR 0021.
"""

from __future__ import annotations

from functools import lru_cache

TYPES_BASE = "https://vault-index.local/schemas/types/"  # the shipped types' own $id base; nothing is fetched
MAX_PATTERN_CHARS = 500
RE2_MAX_MEM = 8 << 20  # bytes a compiled pattern may use


class UnresolvableRef(Exception):
    """A $ref named something outside the vault's own type files."""


def _re2():
    try:
        import re2
    except ImportError:  # no wheel for this platform (see pyproject.toml): vault patterns are refused
        return None
    return re2


@lru_cache(maxsize=512)
def compiled(pattern: str):
    """The RE2 program of `pattern`; raises ValueError (with RE2's reason) when RE2 cannot run it."""
    re2 = _re2()
    if re2 is None:
        raise ValueError("this platform has no RE2 (google-re2), so patterns from a vault cannot be run safely")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"longer than {MAX_PATTERN_CHARS} characters")
    options = re2.Options()
    options.log_errors = False
    options.max_mem = RE2_MAX_MEM
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(f"RE2, the linear-time engine vault patterns run on, cannot run it ({reason}); "
                         "backreferences and lookaround are not supported") from None


def pattern_problem(pattern) -> str | None:
    """Why a vault pattern is refused, or None."""
    if not isinstance(pattern, str):
        return "a pattern must be a string"
    try:
        compiled(pattern)
    except ValueError as exc:
        return str(exc)
    return None


def schema_pattern_problems(schema, where: str = "") -> list[str]:
    """Every pattern in a schema (pattern, patternProperties keys) that RE2 cannot run, with its place.

    unevaluatedProperties beside patternProperties is refused too: jsonschema evaluates it with
    Python's `re` internally, out of this module's reach.
    """
    found: list[str] = []
    has_pattern_properties = False
    has_unevaluated = False

    def walk(node, path: str) -> None:
        nonlocal has_pattern_properties, has_unevaluated
        if isinstance(node, dict):
            for key, value in node.items():
                here = f"{path}/{key}"
                if key == "pattern" and isinstance(value, str) and (problem := pattern_problem(value)):
                    found.append(f"{here}: {problem}")
                if key == "patternProperties" and isinstance(value, dict):
                    has_pattern_properties = True
                    found.extend(f"{here}/{p}: {problem}" for p in value if (problem := pattern_problem(p)))
                if key == "unevaluatedProperties":
                    has_unevaluated = True
                walk(value, here)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, f"{path}/{index}")

    walk(schema, where)
    if has_pattern_properties and has_unevaluated:
        found.append(f"{where or '/'}: unevaluatedProperties together with patternProperties is not supported "
                     "(its patterns would run on a backtracking engine)")
    return found


def _search(pattern: str, text: str) -> bool:
    return compiled(pattern).search(text) is not None


def _pattern(validator, pattern, instance, schema):
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator, patterns, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator, allowed, instance, schema):
    """jsonschema's own, with the patternProperties match on RE2."""
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    named = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = sorted((k for k in instance if k not in named and not any(_search(p, k) for p in patterns)), key=str)
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        yield ValidationError(f"Additional properties are not allowed ({', '.join(map(repr, extras))} "
                              f"{'was' if len(extras) == 1 else 'were'} unexpected)")


def _refuse(uri: str):
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(ref=uri)


@lru_cache(maxsize=1)
def _validator_class():
    import jsonschema

    return jsonschema.validators.extend(jsonschema.Draft202012Validator, {
        "pattern": _pattern, "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties})


def embedded_types(types: dict[str, dict]) -> dict[str, dict]:
    """The types as `$defs` entries, each its own resource at TYPES_BASE + name + '.json'.

    Embedded, the combined schema carries every resource a `$ref` may reach, so the registry
    needs nothing else and retrieves nothing.
    """
    return {name: {**{k: v for k, v in schema.items() if k not in ("$id", "$schema")},
                   "$id": f"{TYPES_BASE}{name}.json"} for name, schema in types.items()}


def validator_for(schema: dict):
    """A validator of `schema` whose references and patterns stay on this machine and in linear time."""
    import jsonschema
    from referencing import Registry

    cls = _validator_class()
    return cls(_one_dialect(schema), registry=Registry(retrieve=_refuse),
               format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def _one_dialect(node):
    """`node` without `$schema` keys. Trigger: a subschema naming its dialect made jsonschema switch
    to the stock validator class there, whose `pattern` runs on Python's `re` again."""
    if isinstance(node, dict):
        return {k: _one_dialect(v) for k, v in node.items() if not (k == "$schema" and isinstance(v, str))}
    if isinstance(node, list):
        return [_one_dialect(v) for v in node]
    return node


def iter_errors(validator, instance):
    """The validation errors; an unresolvable $ref or a refused pattern is raised as UnresolvableRef/ValueError."""
    from referencing.exceptions import Unresolvable

    try:
        return list(validator.iter_errors(instance))
    except Unresolvable as exc:
        raise UnresolvableRef(str(exc)) from None
