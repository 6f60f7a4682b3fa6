"""bench --write's arithmetic: percentiles, per-stage summary and the target column."""

from __future__ import annotations

from vault_index.tooling.bench_write import percentile, summarize, table_text


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50.0 and percentile(values, 0.95) == 95.0
    assert percentile([7.0], 0.95) == 7.0


def test_summary_keeps_pipeline_order_and_marks_the_target():
    samples = [{"commit": 90.0, "authorize": 0.1, "replace": 30.0 + i, "round_trip": 200.0} for i in range(20)]
    table = summarize(samples)
    assert list(table) == ["authorize", "replace", "commit", "round_trip"]
    assert table["replace"]["n"] == 20 and table["replace"]["p50"] == 39.5
    text = table_text(table)
    assert "| authorize | 0.10 | 0.10 | ok (< 20 ms) |" in text
    assert "| replace |" in text and "OVER 20 ms" in text
    assert "| commit | 90.00 | 90.00 | reported |" in text


def test_disk_floor_times_each_replace_and_leaves_nothing(tmp_path):
    from vault_index.tooling.bench_write import disk_floor

    found = disk_floor(tmp_path, 3)
    assert len(found) == 3 and all(ms > 0 for ms in found)
    assert list(tmp_path.iterdir()) == []
