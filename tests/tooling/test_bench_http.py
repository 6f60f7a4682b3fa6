"""`bench --http` in small counts: concurrent clients of both eras, no error, no lost write.

The full run (32 clients, 20,000 searches, 500 writes) is `vault-index bench --http`; its numbers
are reported in the README, never asserted here.
"""

from __future__ import annotations

from vault_index.tooling.bench_http import bench_http, table_text


def test_small_load_has_no_error_and_loses_no_write(tmp_path):
    result = bench_http(clients=4, searches=40, writes=8, notes=20, solo=10, workdir=tmp_path)
    assert result["error_count"] == 0, result["errors"]
    assert result["written"] == 8 and result["lost_writes"] == []
    assert len(list((tmp_path / "vault" / "bench").glob("*.md"))) == 8
    latency = result["latency"]
    assert latency["http_load"]["n"] == 40
    assert latency["http_load_legacy"]["n"] == 20 and latency["http_load_modern"]["n"] == 20
    assert latency["stdio_one_client"]["n"] == 10 and latency["http_one_client"]["n"] == 10
    text = table_text(result)
    assert "stdio, one client | 10 |" in text and "2026-07-28" in text
