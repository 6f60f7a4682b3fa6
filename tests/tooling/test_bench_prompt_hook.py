"""`vault-index bench`, hooks part: the prompt hook's latency with the session's server and without."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from vault_index.tooling import bench_hooks
from vault_index.tooling.bench import _pct
from vault_index.tooling.bench_corpus import write_vault


@pytest.mark.real_model
def test_the_prompt_hook_is_timed_with_the_server_answering_and_without(tmp_path, monkeypatch, shipped_model_cache):
    monkeypatch.setenv("VAULT_MODEL_CACHE", str(shipped_model_cache))
    args = SimpleNamespace(quick=True, prompt_chunks=300)
    out = bench_hooks.bench_prompt_hook(args, tmp_path, _pct, write_vault)
    runs = bench_hooks.PROMPT_RUNS_QUICK
    assert out["chunks"] >= 250 and out["vectors"].startswith("sentence-transformers/all-MiniLM-L6-v2")
    assert out["with_server"]["answered_by"] == {"server": runs}, out  # the warm server answered every prompt
    assert out["without_server"]["answered_by"] == {"this process by keywords (no server)": runs}
    assert out["with_server"]["n"] == runs and out["with_server"]["p95_ms"] > 0
    text = bench_hooks.render({"reindex": {"unavailable": "-"}, "guard": {"unavailable": "-"}, "prompt": out})
    assert "prompt-time recall, " in text and "with server" in text and "without server" in text
