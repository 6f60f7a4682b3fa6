"""A keyword-only pass (a project's first, the server's or status's) sizes chunks as the embedding will."""

from __future__ import annotations

from helpers import write
from vault_index.engine import indexer
from vault_index.engine.embedding.models import SHIPPED_MINILM, SHIPPED_MINILM_MAX_TOKENS, SHIPPED_TOKENIZER, Models
from vault_index.engine.embedding.onnx_session import TokenCounter
from vault_index.engine.parsing.chunk import embed_text_for
from vault_index.engine.stores.store import Store


def test_a_keyword_only_pass_sizes_chunks_for_the_shipped_models_window_and_loads_nothing(tmp_path):
    """Walkthrough B: chunks indexed before the model loaded were sized by approximate tokens for a
    512 window, then embedded as they were: 35 of 126 over MiniLM's 256 tokens (up to 545), their
    tails never seen by the vector side, and one file chunked two ways in two indexes."""
    prose = " ".join(f"p{i}={i}.{i}%," for i in range(300))  # about 0.7 tokens a character: 1,200 = 850
    write(tmp_path / "docs", "long.md", f"# Long\n\n## Section\n\n{prose}\n")
    store = Store(tmp_path / "index.db")
    models = Models(SHIPPED_MINILM, "none", tmp_path / "cache")
    try:
        indexer.sync(store, models, [str(tmp_path / "docs")], embed=False)
        texts = [embed_text_for(title, heading, text)  # what the embedding will read
                 for _, title, heading, text in store.chunks_missing_vectors("any-model")]
    finally:
        store.close()
    count = TokenCounter(SHIPPED_TOKENIZER).count_tokens
    assert len(texts) > 1 and max(count(t) for t in texts) <= SHIPPED_MINILM_MAX_TOKENS
    assert models._embedder is None and models._loader is None  # no session, no loading thread
    assert not (tmp_path / "cache").exists()  # no weights prepared
