"""The update-links bench runs end to end on a few hand-written cases, and measures what detection costs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.locomo import LOCOMO
from tests.bench.runs import run_bench


@pytest.mark.skipif(not LOCOMO.is_file(), reason=f"LoCoMo development half not found at {LOCOMO}")
def test_updates_bench_scores_the_cases_and_measures_the_cost(tmp_path: Path) -> None:
    out, raw = tmp_path / "updates.md", tmp_path / "updates.json"
    run = run_bench(
        "bench.updates",
        *("--sets", "cases", "--cases", "8", "--cost", "--cost-adds", "12", "--cost-passes", "2", "--cost-block", "5"),
        *("--store", "300", "--searches", "6"),
        *("--output", str(out), "--json", str(raw)),
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(raw.read_text())
    figures = report["quality"]["cases"]["figures"]
    assert figures["cases"] == 8 and figures["updates"] + figures["near_misses"] == 8
    assert 0 <= figures["recall"] <= 1 and 0 <= figures["near_misses_unlinked"] <= 1
    assert figures["questions"] == figures["updates"]
    adds = report["cost"]["adds"]
    assert adds["on"]["adds"] == adds["off"]["adds"] == 24 and adds["on"]["adds_per_s"] > 0
    assert adds["block"] == 5 and len(adds["changes"]) == 2  # one a pass
    assert adds["change"] == round(adds["on"]["adds_per_s"] / adds["off"]["adds_per_s"] - 1, 4)
    search = report["cost"]["search"]
    assert search["store"] == 300 and search["with links"]["p95"] >= search["with links"]["p50"] > 0
    assert "| cases | 8 |" in out.read_text()
