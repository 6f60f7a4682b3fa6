"""`bench --links` in small counts: the synthetic vault's links land in the index as built (four of
five resolve), every query is timed, and lint runs over the whole vault. The 10k-note figures are
`vault-index bench --links` (docs/bench.md), never asserted."""

from __future__ import annotations

from vault_index.tooling.bench import _pct
from vault_index.tooling.bench_links import LINKS_PER_NOTE, bench_links, render


def test_small_link_bench_indexes_every_link_and_times_each_query(tmp_path):
    result = bench_links(tmp_path, notes=120, pct=_pct)
    assert result["links"] == result["edges"] == 120 * LINKS_PER_NOTE
    assert result["resolved"] == 120 * 4  # the fifth link of each note names no note, on purpose
    assert result["backlinks"]["n"] == result["neighbors_depth2"]["n"] == 120
    assert result["backlinks_cpu"]["n"] == result["neighbors_depth2_cpu"]["n"] == 120
    assert result["neighbors_depth2_mean_results"] > 1
    assert result["lint_findings"] >= 120  # at least the unresolved link of every note
    assert "neighbors depth 2" in render(result)
