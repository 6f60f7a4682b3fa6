"""The index progress line says about how long the phase has left (a first index takes minutes)."""

from __future__ import annotations

import time

from vault_index.surfaces.cli import Progress


def test_time_left_follows_the_pace_so_far(monkeypatch):
    clock = iter([100.0, 100.0, 130.0, 130.0, 130.0, 130.0])  # two readings a call
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    progress = Progress(False)
    assert progress._eta("embed", 0, 400).strip() == ""  # starts the phase's clock
    assert progress._eta("embed", 100, 400).strip() == "~1m30s left"  # 30 s for 100: 90 s for 300
    assert progress._eta("embed", 400, 400).strip() == ""  # done: nothing left to say
