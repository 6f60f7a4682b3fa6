"""The bench's floor: timed in the same run as the searches, and judged against its target."""

from __future__ import annotations

from types import SimpleNamespace

from vault_index.tooling import bench, bench_server


def test_a_small_bench_reports_a_floor_below_hybrid_and_their_ratio(tmp_path):
    out = bench.bench_size(SimpleNamespace(silent=True), 200, 20, tmp_path, None)
    floor, hybrid = out["floor"], out["search"]["hybrid"]
    assert floor["n"] == 20 and floor["p95_ms"] > 0
    # the floor is a part of what a hybrid search does, so it cannot cost more (allow timer noise)
    assert floor["p50_ms"] <= hybrid["p50_ms"] * 1.5
    assert out["hybrid_floor_ratio"] == round(hybrid["p95_ms"] / floor["p95_ms"], 2)
    # issue 26: keyword indexing against the raw FTS5 insert of the same chunks, measured in this run
    keyword = out["keyword_floor"]
    assert keyword["chunks"] == out["chunks"] and keyword["floor_us_per_chunk"] > 0
    assert keyword["ratio"] > 1  # the index inserts those very rows, and more
    assert set(keyword["where_s"]) == {"read_and_hash", "parse", "chunk", "store_writes_and_rest", "fts_floor"}


def test_the_floor_ratio_verdict_uses_the_target():
    def result(ratio):
        size = {"size": 100000, "search": {"hybrid": {"p95_ms": 30.0}}, "hybrid_floor_ratio": ratio}
        return {"sizes": [size]}

    targets = bench.TARGETS
    assert any("2.0x (met)" in line for line in bench_server._verdicts(result(2.0), targets))
    assert any("3.1x (missed)" in line for line in bench_server._verdicts(result(3.1), targets))
    assert any("not measured" in line for line in bench_server._verdicts({"sizes": []}, targets))


def test_parts_names_what_runs_and_refuses_an_unknown_part():
    import pytest
    from vault_index.errors import UsageError

    assert bench._parts(SimpleNamespace(parts=None)) == set(bench.BENCH_PARTS)
    assert bench._parts(SimpleNamespace(parts="edits, footprint")) == {"edits", "footprint"}
    with pytest.raises(UsageError, match="unknown edit"):
        bench._parts(SimpleNamespace(parts="footprint,edit"))


def test_the_footprint_says_the_first_index_in_a_fresh_home_beside_a_later_one():
    """Issue 39 item 17: the bench's footprint part measures the run that builds the fp32 model."""
    from vault_index.tooling import bench_footprint

    fp = {"first_index": {"notes": 20, "first": {"peak_rss_mb": 279.2, "seconds": 12.4, "chunks": 27},
                          "later": {"peak_rss_mb": 279.3, "seconds": 7.5, "chunks": 27}}}
    text = bench_footprint.render(fp, None)
    assert ("first index in a fresh home (20 notes, builds the fp32 model): peak 279.2 MB in 12.4 s; later, "
            "the model built: peak 279.3 MB in 7.5 s") in text
    failed = bench_footprint.render({"first_index": {"notes": 20, "first": {"error": "boom"}, "later": {}}}, None)
    assert "first index in a fresh home: " in failed and "boom" in failed
