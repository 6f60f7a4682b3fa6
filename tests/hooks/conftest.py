"""Fixtures for the hook tests (helpers to run the scripts are in hookrun.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path) -> Path:
    """An empty project folder: where docs/handoffs/ and .claude/handoff.json go."""
    root = tmp_path / "project"
    root.mkdir()
    return root
