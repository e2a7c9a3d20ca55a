"""Knowledge-graph benches (extraction, deduplication, large memories) end to end on tiny inputs.

They keep the benchmarks runnable between `make bench` runs. One file per subject, so the test workers
(`--dist loadfile`) share them.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.runs import run_bench, write_beir, write_small_locomo


def test_entity_dedup_bench_sweeps_scorers_and_thresholds_and_times_resolve(tmp_path: Path) -> None:
    done = run_bench("bench.entity_dedup", "--sizes", "300", "--queries", "20", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "entity_dedup.json").read_text())
    assert report["pairs"] >= 150
    assert {"ratio", "token_sort_ratio", "WRatio"} <= set(report["fine"])
    assert set(report["coarse"]["ratio"]) == {str(t) for t in range(70, 101, 5)}
    chosen = report["chosen"]
    assert str(chosen["threshold"]) in report["fine"][chosen["scorer"]]
    assert report["fine"][chosen["scorer"]][str(chosen["threshold"])]["f1"] > report["exact_only"]["f1"]
    assert {row["families"] for row in report["speed"]} == {"mixed", "one"}
    assert all(row["entities"] == 300 and row["new"]["p50_ms"] > 0 for row in report["speed"])
    assert "## Chosen" in (tmp_path / "entity_dedup.md").read_text()


def test_graph_extraction_bench_scores_the_labelled_set_and_times_both_configurations(tmp_path: Path) -> None:
    write_beir(tmp_path / "beir")
    out = tmp_path / "graph.md"
    done = run_bench(
        "bench.graph_extraction",
        *("--data-dir", str(tmp_path / "beir"), "--docs", "4", "--rounds", "1", "--conll04-sentences", "12"),
        *("--output", str(out), "--json", str(tmp_path / "g.json")),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "g.json").read_text())
    assert report["sentences"] >= 110 and set(report["splits"]) == {"dev", "test"}
    assert report["chunks"] == 4 and report["throughput_source"].startswith("SciFact")
    rows = report["extractors"]
    assert set(rows) == {"spacy (with parser)", "spacy (NER only, no parser)"}
    for row in rows.values():
        assert row["chunks_per_s"] > 0 and row["load_s"] > 0
        quality = row["quality"]["all"]
        assert 0 < quality["entities"]["precision"] <= 1 and 0 < quality["entities"]["recall"] <= 1
        assert quality["typed_relations"]["predicted"] > 0
    strengths = rows["spacy (with parser)"]["quality"]["strength_range"]
    assert strengths["cooccurrence"][1] < min(strengths["pattern"][0], strengths["dependency"][0])
    assert "entity P (test)" in out.read_text()
    # The product's path (store, build_graph, export) on CoNLL04's first sentences and the everyday cases.
    if "conll04_dev" in report:  # CoNLL04 is in ../shared/data
        conll04 = report["conll04_dev"]
        assert conll04["sentences"] == 12 and conll04["strict"]["entities (Peop/Org/Loc)"]["tp"] > 0, conll04
    everyday = report["everyday"]
    assert everyday["cases"] == 15 and everyday["typed_relations"]["tp"] > 0 and everyday["reaches"], everyday


def test_graph_extraction_bench_measures_the_ollama_stand_in_and_the_cost_per_1000_memories(tmp_path: Path) -> None:
    write_beir(tmp_path / "beir")
    write_small_locomo(tmp_path / "locomo.json")
    done = run_bench(
        "bench.graph_extraction",
        *("--data-dir", str(tmp_path / "beir"), "--docs", "3", "--rounds", "1"),
        *("--locomo", str(tmp_path / "locomo.json"), "--cost-turns", "5", "--conll04-sentences", "0"),
        *("--output", str(tmp_path / "g.md"), "--json", str(tmp_path / "g.json")),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "g.json").read_text())
    (label,) = report["llm_stand_in"]
    assert "stand-in" in label and report["llm_stand_in"][label]["chunks_per_s"] > 0
    assert report["llm_stand_in"][label]["quality"]["all"]["entities"]["predicted"] > 0, "the answers were read"
    costs = report["cost_per_1000"]
    assert set(costs) == {"spacy (with parser)", label}
    for by_kind in costs.values():
        assert by_kind["SciFact abstract"]["memories"] == 3 and by_kind["LoCoMo turn"]["memories"] == 5
        assert all(figures["seconds_per_1000"] > 0 for figures in by_kind.values())
    assert "our side only" in (tmp_path / "g.md").read_text()
    assert "conll04_dev" not in report and report["everyday_llm_stand_in"]["typed_relations"]["predicted"] > 0


def test_graph_large_memory_bench_resumes_a_stopped_build(tmp_path: Path) -> None:
    done = run_bench(
        "bench.graph_large_memory", "--kilobytes", "40",
        "--output", str(tmp_path / "g.md"), "--json", str(tmp_path / "g.json"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "g.json").read_text())
    assert report["chunks"] > 32 and report["build_s"] > 0
    assert report["chunks"] // 2 <= report["resumed_from_chunk"] < report["chunks"]
