"""bench/search_latency_ab.py end to end on a small store: both settings timed on the same queries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.locomo import LOCOMO
from tests.bench.runs import run_bench


@pytest.mark.skipif(not LOCOMO.is_file(), reason="LoCoMo development half not present")
def test_search_latency_ab_times_main_and_these_settings(tmp_path: Path) -> None:
    raw = tmp_path / "out.json"
    done = run_bench("bench.search_latency_ab", "--memories", "40", "--searches", "5", "--json", str(raw))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(raw.read_text())
    assert report["memories"] == 40 and report["before"]["rrf_k"] == 60
    assert report["searches"] == 5, "searches as asked, not every LoCoMo question"
    assert report["search_ms"]["before"]["p95"] > 0 and report["search_ms"]["after"]["p95"] > 0


@pytest.mark.skipif(not LOCOMO.is_file(), reason="LoCoMo development half not present")
def test_search_latency_ab_takes_the_before_settings(tmp_path: Path) -> None:
    raw = tmp_path / "out.json"
    before = ("--before", "rrf_k=30", "--before", "leg_depth=20")
    done = run_bench("bench.search_latency_ab", "--memories", "20", "--searches", "3", "--json", str(raw), *before)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(raw.read_text())["before"] == {"rrf_k": 30, "leg_depth": 20}
