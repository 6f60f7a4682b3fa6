"""A model's fingerprint (the name its vectors are stored under) follows its files' content."""

from __future__ import annotations

import os
import shutil

from vault_index.engine.embedding.models import ModelSpec, _fingerprint


def _model(folder, weights: bytes):
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(weights)
    (folder / "tokenizer.json").write_text('{"truncation": {"max_length": 256}}')
    return ModelSpec("some/model", folder, ":fp32")


def test_the_same_weights_reinstalled_keep_their_fingerprint_and_changed_weights_do_not(tmp_path):
    """A reinstall (a new venv, pip --force-reinstall) gives the same files new mtimes: keyed on the
    mtime, every vector of every index was thrown away and re-embedded, searches keyword-only meanwhile."""
    first = _model(tmp_path / "a", b"\x01" * 4096)
    copy = tmp_path / "b"
    shutil.copytree(first.folder, copy)
    os.utime(copy / "model.onnx", ns=(1_000_000_000, 1_000_000_000))
    assert _fingerprint(ModelSpec("some/model", copy, ":fp32")) == _fingerprint(first)
    changed = _model(tmp_path / "c", b"\x01" * 4095 + b"\x02")
    assert _fingerprint(changed) != _fingerprint(first)
    assert _fingerprint(ModelSpec("some/model", copy, ":int8")) != _fingerprint(first)
