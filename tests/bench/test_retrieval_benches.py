"""Retrieval quality benches (SciFact- and LoCoMo-shaped data) end to end on tiny inputs.

They keep the benchmarks runnable between `make bench` runs. One file per subject, so the test workers
(`--dist loadfile`) share them.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.runs import run_bench, write_beir, write_locomo, write_small_locomo


def test_quality_bench_reports_every_mode_and_baseline(tmp_path: Path) -> None:
    write_beir(tmp_path / "beir")
    out = tmp_path / "quality.md"
    done = run_bench(
        "bench.quality", "--data-dir", str(tmp_path / "beir"), "--output", str(out), "--json", str(tmp_path / "q.json")
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "q.json").read_text())
    ndcg = report["quality"]["ndcg10"]
    assert set(ndcg) == {"vector", "keyword", "hybrid"}
    assert all(0.0 <= value <= 1.0 for value in ndcg.values())
    assert ndcg["keyword"] > 0.5, "each query shares rare words with its document"
    assert report["quality"]["ingestion"]["chunks"] >= 40
    assert "baseline: bm25s" in out.read_text()
    assert out.with_suffix(".png").stat().st_size > 1000


def test_relevance_bench_calibrates_the_floor_and_reports_test_with_and_without(tmp_path: Path) -> None:
    write_beir(tmp_path / "beir")
    write_locomo(tmp_path / "locomo.json")
    out = tmp_path / "relevance.md"
    done = run_bench(
        "bench.relevance",
        *("--data-dir", str(tmp_path / "beir"), "--locomo", str(tmp_path / "locomo.json")),
        *("--output", str(out), "--json", str(tmp_path / "r.json")),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["sweep_matches_pipeline"] is True
    assert str(report["chosen_floor"]) in report["sweep"]
    without, with_rule = report["test"]["without"], report["test"]["with"]
    assert set(without) == set(with_rule) == {"vector", "keyword", "hybrid"}
    assert without["vector"]["mean_results_limit100"] == 40, "without the rule the vector leg pads the limit"
    assert with_rule["vector"]["mean_results_limit100"] < 40
    assert with_rule["keyword"] == {**without["keyword"], "relevant_dropped": 0.0}, "keyword hits always stay"
    assert report["locomo_questions"] == 4
    assert report["locomo"]["0.0"]["hybrid"]["recall10"] == 1.0
    assert len(report["unrelated"]) == 2, "questions asked of a store that cannot answer them, both ways"
    for by_floor in report["unrelated"].values():
        assert by_floor["0.0"]["vector"]["mean_results"] > by_floor["0.4"]["vector"]["mean_results"]
    assert "## Test (reported)" in out.read_text()


def test_quality_bench_says_clearly_when_the_data_is_missing(tmp_path: Path) -> None:
    done = run_bench("bench.quality", "--data-dir", str(tmp_path / "nothing"))
    assert done.returncode == 2
    assert "not found" in done.stderr


def test_semantic_cache_bench_reports_hits_false_hits_and_changed_results(tmp_path: Path) -> None:
    write_beir(tmp_path / "beir")
    out = tmp_path / "semantic_cache.md"
    done = run_bench("bench.semantic_cache", "--data-dir", str(tmp_path / "beir"), "--output", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["claims"] == 8
    assert report["near_repeats"]["lower case, no stop"]["caught"]["0.8"] == 1.0
    assert 0.0 <= report["distinct_claims_nearest_other"]["false_hit_rate"]["0.8"] <= 1.0


def test_graph_retrieval_bench_compares_expansion_variants_and_costs_the_build(tmp_path: Path) -> None:
    write_small_locomo(tmp_path / "locomo.json")
    write_beir(tmp_path / "beir")
    out = tmp_path / "graph_retrieval.md"
    done = run_bench(
        "bench.graph_retrieval",
        *("--locomo", str(tmp_path / "locomo.json"), "--data-dir", str(tmp_path / "beir")),
        *("--output", str(out), "--json", str(tmp_path / "gr.json")),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "gr.json").read_text())
    variants = set(report["variants"])
    assert "baseline (no expansion)" in variants and len(variants) >= 5
    assert set(report["locomo"]) == variants
    baseline = report["locomo"]["baseline (no expansion)"]
    assert baseline["all"]["questions"] == 4 and set(baseline) == {"1", "2", "3", "4", "all"}
    assert baseline["all"]["graph_in_top10"] == 0
    for by_category in report["locomo"].values():
        assert all(0 <= row["recall5"] <= row["recall10"] <= 1 for row in by_category.values())
    (build,) = report["locomo_builds"]
    assert build["memories"] == build["turns"] == 7 and build["state"] in ("completed", "completed_with_errors")
    assert build["entities"] > 0 and report["locomo_cost_per_1000"]["seconds"] > 0
    assert set(report["scifact"]["variants"]) == variants and report["scifact"]["build"]["memories"] == 40
    assert all(0 <= row["ndcg10"] <= 1 for row in report["scifact"]["variants"].values())
    assert set(report["verdicts"]) == variants - {"baseline (no expansion)"}
    text = out.read_text()
    assert "1 multi-hop" in text and "## Verdict per variant" in text and "per 1,000 memories" in text


def test_graph_retrieval_bench_says_clearly_when_the_data_is_missing(tmp_path: Path) -> None:
    done = run_bench("bench.graph_retrieval", "--locomo", str(tmp_path / "nothing.json"))
    assert done.returncode == 2
    assert "LoCoMo development half not found" in done.stderr
