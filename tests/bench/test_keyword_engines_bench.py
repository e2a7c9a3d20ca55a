"""The side-by-side bench of the keyword engines runs end to end on a small store: every engine answers, a deleted
chunk is never found, a writer killed mid-write leaves an index that opens, and tantivy keeping what a hit shows
holds more on disk than tantivy without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.common import DATA_DIR
from tests.bench.runs import run_bench


@pytest.mark.skipif(not (DATA_DIR / "corpus.jsonl").is_file(), reason=f"SciFact not found at {DATA_DIR}")
def test_keyword_engines_bench_compares_the_engines(tmp_path: Path) -> None:
    out, raw = tmp_path / "engines.md", tmp_path / "engines.json"
    run = run_bench(
        "bench.keyword_engines",
        *("--sizes", "1000", "--crash-runs", "1", "--limit-docs", "300"),
        *("--engines", "handwritten", "tantivy", "tantivy_stored"),
        *("--output", str(out), "--json", str(raw)),
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(raw.read_text())
    engines = {"handwritten", "tantivy", "tantivy_stored"}
    assert set(report["quality"]) == engines
    assert all(0 < q["ndcg@10"] <= 1 for q in report["quality"].values())
    rows = {row["engine"]: row for row in report["sizes"]}
    assert set(rows) == engines and all(row["size"] == 1000 for row in rows.values())
    for row in rows.values():
        assert row["deleted_never_found"] and row["query_ms"]["p95"] >= row["query_ms"]["p50"] > 0
        assert row["disk_mb"] > 0 and row["open_ms"] > 0
    assert rows["tantivy_stored"]["disk_mb"] > rows["tantivy"]["disk_mb"]  # the texts and fields are kept
    assert report["quality"]["tantivy_stored"] == report["quality"]["tantivy"]  # the same index, the same ranking
    assert all(outcome["all_opened"] for outcome in report["crash"].values())
    assert "| 1,000 | tantivy |" in out.read_text()
