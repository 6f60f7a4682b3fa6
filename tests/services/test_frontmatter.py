"""services/vault/frontmatter.py: tolerant read, strict validation with every problem, stable order, decay."""

from __future__ import annotations

import datetime as dt

import pytest
from vault_index.services.vault import frontmatter as fm
from vault_index.services.vault.vault import Vault

NOTE = """---
title: Pricing
zeta_custom: keep me
status: draft
created: 2024-02-30
tags: a, b
---
# Pricing

Body.
"""


@pytest.fixture
def schema(tmp_path) -> dict:
    root = tmp_path / "v"
    (root / ".vault-index").mkdir(parents=True)
    (root / ".vault-index" / "config.yaml").write_text(
        "schema_extensions:\n  domain: {type: string, enum: [a, b], required: true}\n"
        "  due: {type: date}\n")
    return Vault.open(root).note_schema


def test_a_bad_date_is_a_problem_never_a_crash(schema):
    fields, body, problems = fm.parse(NOTE)
    assert problems == [] and fields["created"] == "2024-02-30" and body.startswith("# Pricing")
    fields, coerced = fm.coerce(fields)
    assert fields["tags"] == ["a", "b"] and coerced[0]["rule"] == "coerced"
    found = fm.validate(fields, schema)
    by_field = {p["field"]: p for p in found}
    assert "not a real date" in by_field["created"]["message"]
    assert {"updated", "domain"} <= {p["field"] for p in found if p["rule"] == "required"}


def test_every_problem_comes_back_at_once(schema):
    fields = {"title": "", "status": "published", "created": "2024-01-01", "updated": "yesterday",
              "confidence": "certain", "ttl_days": 0, "tags": "x", "domain": "c", "due": "2024-13-01"}
    found = fm.validate(fields, schema)
    assert {p["field"] for p in found} == {"title", "status", "updated", "confidence", "ttl_days", "tags", "domain",
                                           "due"}
    assert all(set(p) == {"field", "rule", "message"} for p in found)


@pytest.mark.parametrize("text, rule", [
    ("---\ntitle: [unclosed\n---\nbody", "yaml"),
    ("---\n- a\n- b\n---\nbody", "type"),
    ("---\n" + "a: " + "[" * 2000 + "\n---\n", "yaml"),
])
def test_malformed_frontmatter_is_reported(text, rule):
    fields, _, problems = fm.parse(text)
    assert fields == {} and problems[0]["rule"] == rule


def test_no_frontmatter_and_an_unclosed_fence():
    assert fm.parse("# Just a body\n") == ({}, "# Just a body\n", [])
    assert fm.parse("---\ntitle: x\nno closing fence\n")[0] == {}


def test_order_is_stable_and_unknown_fields_are_kept():
    existing = ["zeta_custom", "title", "status"]
    fields = {"status": "draft", "title": "T", "zeta_custom": 1, "updated": "2024-01-02", "collection": "c", "z2": 2}
    assert list(fm.ordered(fields, existing)) == ["zeta_custom", "title", "status", "collection", "updated", "z2"]
    new = fm.ordered({"tags": [], "z": 1, "title": "T", "domain": "a", "status": "draft"}, (), ["domain"])
    assert list(new) == ["title", "status", "tags", "domain", "z"]


def test_render_round_trips_and_writes_dates_plain():
    fields = {"title": "Ünïcode: yes", "created": "2024-05-01", "tags": ["a"], "n": None}
    text = fm.render(fields, "# Body\n")
    assert "created: 2024-05-01\n" in text and "title: 'Ünïcode: yes'\n" in text
    assert fm.parse(text)[:2] == (fields, "# Body\n")


def test_promote_needs_complete_frontmatter():
    missing = {p["field"] for p in fm.promote_problems({"title": "T", "collection": "c", "sources": []}, ["domain"])}
    assert missing == {"confidence", "sources", "ttl_days", "domain"}


def test_decay_states():
    today = dt.date(2024, 12, 31)
    assert fm.decay({"ttl_days": 100, "updated": "2024-12-01"}, today, 0.75)["state"] == "fresh"
    assert fm.decay({"ttl_days": 100, "updated": "2024-10-01"}, today, 0.75)["state"] == "aging"
    assert fm.decay({"ttl_days": 10, "created": "2024-01-01"}, today, 0.75) == {"state": "stale", "age_days": 365,
                                                                                 "ttl_days": 10}
    assert fm.decay({"updated": "2024-12-01"}, today, 0.75) is None
    assert fm.decay({"ttl_days": 10, "updated": "2024-02-30"}, today, 0.75) is None


def test_set_fields_keeps_every_line_it_is_not_told_to_change():
    from vault_index.services.vault.frontmatter_text import newline_of, set_fields

    head = "---\r\ntitle: T   # mine\r\ntags:\r\n- a\r\n- b\r\nextra: 1\r\n---\r\n"
    assert set_fields(head, {"tags": ["c"], "new": "v", "extra": None}) == (
        "---\r\ntitle: T   # mine\r\ntags:\r\n- c\r\nnew: v\r\n---\r\n")
    assert set_fields("", {"status": "draft"}) == "---\nstatus: draft\n---\n"
    assert set_fields(head, {}) == head
    flow = "---\n{title: T, status: draft}\n---\n"  # not line-editable: rendered whole, still right
    assert fm.parse(set_fields(flow, {"status": "canonical"}))[0] == {"title": "T", "status": "canonical"}
    assert (newline_of("a\r\nb"), newline_of("a\rb"), newline_of("a\nb"), newline_of("a")) == ("\r\n", "\r", "\n", "\n")
