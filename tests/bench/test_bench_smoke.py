"""The benchmarks run end to end on tiny inputs, so they cannot rot between `make bench` runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import open_core
from zapomni_core import Settings
from zapomni_core.memories.requests import AddMemoryRequest

ROOT = Path(__file__).resolve().parents[2]


def run_module(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=900, check=False
    )


def write_beir(folder: Path) -> None:
    """A tiny corpus in BEIR layout: each query has one relevant document sharing its key words."""
    topics = ["volcano lava eruption", "insulin glucose diabetes", "tidal ocean moon", "neuron synapse brain"]
    docs = [
        {"_id": f"d{i}", "title": f"Study {i}", "text": f"A report on {topics[i % 4]} number {i}. More detail follows."}
        for i in range(40)
    ]
    queries = [{"_id": f"q{i}", "text": f"what about {topics[i % 4]} number {i}"} for i in range(12)]
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs))
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries))
    for split, ids in (("test", range(0, 8)), ("train", range(8, 12))):
        rows = ["query-id\tcorpus-id\tscore", *(f"q{i}\td{i}\t1" for i in ids)]
        (folder / "qrels" / f"{split}.tsv").write_text("\n".join(rows) + "\n")


def test_quality_bench_reports_every_mode_and_baseline(tmp_path: Path) -> None:
    write_beir(tmp_path / "beir")
    out = tmp_path / "quality.md"
    done = run_module(
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


def write_locomo(path: Path) -> None:
    """Two tiny conversations in LoCoMo's format; the last question is of a category left out."""
    lines = [
        "I adopted a cat named Milo.",
        "My sister marries in June.",
        "We hiked in the Alps.",
        "I'm allergic to peanuts.",
    ]
    turns = [{"speaker": "A", "dia_id": f"D1:{i + 1}", "text": t} for i, t in enumerate(lines)]
    qa = [
        {"question": "What is the cat called?", "answer": "Milo", "evidence": ["D1:1"], "category": 1},
        {"question": "Where did they go hiking?", "answer": "Alps", "evidence": ["D1:3"], "category": 4},
        {"question": "Any allergies?", "answer": "peanuts", "evidence": ["D1:4"], "category": 5},
    ]
    conversation = {"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "1 May 2023", "session_1": turns}
    path.write_text(json.dumps([{"sample_id": f"c{i}", "conversation": conversation, "qa": qa} for i in range(2)]))


def test_relevance_bench_calibrates_the_floor_and_reports_test_with_and_without(tmp_path: Path) -> None:
    write_beir(tmp_path / "beir")
    write_locomo(tmp_path / "locomo.json")
    out = tmp_path / "relevance.md"
    done = run_module(
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
    done = run_module("bench.quality", "--data-dir", str(tmp_path / "nothing"))
    assert done.returncode == 2
    assert "not found" in done.stderr


def test_scale_bench_measures_every_figure_at_each_size(tmp_path: Path) -> None:
    out = tmp_path / "scale.md"
    done = run_module(
        "bench.scale",
        *("--sizes", "30", "60", "--queries", "6", "--catch-up", "20", "--samples", "3", "--delete-batch", "5"),
        *("--output", str(out)),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(out.with_suffix(".json").read_text())
    assert list(results["sizes"]) == ["30", "60"]
    small, large = results["sizes"]["30"], results["sizes"]["60"]
    assert small["chunks"] == 30
    assert set(small["search_ms"]) == {"vector", "keyword", "hybrid"}
    assert small["search_ms"]["hybrid"]["with_embedding"]["p95"] > 0
    assert small["mcp"]["search_mcp_p50"] > 0
    assert small["rss_mb"]["database"]["peak"] > 0 and small["disk_mb_stopped"]["rdb"] > 0
    ops = large["ops"]
    assert ops["list_page_newest_ms"]["p50"] > 0 and ops["delete_1_ms"]["p50"] > 0 and ops["add_ms"]["p50"] > 0
    assert len(ops["delete_1000_runs_ms"]) == 2 and len(ops["load"]) == 3
    start = large["start"]
    assert start["database_stopped_ms"] > 0 and start["database_running_ms"] > 0
    # A fresh `zapomni serve` reads the keyword index the last one saved instead of rebuilding it (decision 0028).
    assert start["database_running_log"]["keyword_load_ms"] is not None
    assert start["server_rss_mb"]["now"] > 0 and start["catch_up"]["chunks"] == 20
    assert out.with_suffix(".png").stat().st_size > 1000
    assert results["duration_s"] > 0 and f"the run took {results['duration_s']:,} s" in out.read_text()


@pytest.mark.anyio
async def test_scale_bench_measures_the_starts_of_an_existing_store(tmp_path: Path, data_dir: Path) -> None:
    async with open_core(Settings(ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING")) as (core, _info):
        for i in range(12):
            await core.memories.add(AddMemoryRequest(text=f"Memory number {i} about tides and the moon, item {i}."))
    out = tmp_path / "start.md"
    done = run_module("bench.scale", "--existing", str(data_dir), "--catch-up", "10", "--output", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    start = json.loads(out.with_suffix(".json").read_text())["start"]
    assert start["chunks"] == 12 and start["catch_up"]["chunks"] == 10
    assert start["database_stopped_ms"] > 0 and start["database_running_ms"] > 0
    assert start["server_rss_mb"]["now"] > 0 and start["database_rss_mb"]["now"] > 0
    assert "| 12 |" in out.read_text()


def test_semantic_cache_bench_reports_hits_false_hits_and_changed_results(tmp_path: Path) -> None:
    write_beir(tmp_path / "beir")
    out = tmp_path / "semantic_cache.md"
    done = run_module("bench.semantic_cache", "--data-dir", str(tmp_path / "beir"), "--output", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["claims"] == 8
    assert report["near_repeats"]["lower case, no stop"]["caught"]["0.8"] == 1.0
    assert 0.0 <= report["distinct_claims_nearest_other"]["false_hit_rate"]["0.8"] <= 1.0


def test_index_repair_bench_sees_the_replay_and_the_repair(tmp_path: Path) -> None:
    out = tmp_path / "index_repair.md"
    done = run_module("bench.index_repair", "--sizes", "300", "--output", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    row = out.read_text().strip().splitlines()[-1].split("|")
    # chunks | load | distinct top-50 after replay | repair | next start | distinct top-50 next start
    assert row[1].strip() == "300"
    assert int(row[3]) < 50 and int(row[6]) == 50


def test_memory_ops_bench_measures_deletes_pages_and_workspaces(tmp_path: Path) -> None:
    done = run_module("bench.memory_ops", "--store", "1200", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "memory_ops.json").read_text())
    assert report["delete_1"]["p50"] > 0 and len(report["delete_1000"]["runs_ms"]) == 3
    assert set(report["list_page_20"]) >= {"first page, newest", "page in the middle", "tag filter (10% match)"}
    mechanism = report["workspace_mechanism"]
    # A workspace of its own holds 100 memories, so every search fills its limit of 10; the filtered
    # design may find fewer (the HNSW walk runs out before 10 pass the filter).
    assert mechanism["vector: graph per workspace"]["mean_results"] == 10
    assert mechanism["hybrid: graph per workspace"]["mean_results"] == 10
    assert all(0 < figures["mean_results"] <= 10 for figures in mechanism.values())
    assert "Workspace mechanism" in (tmp_path / "memory_ops.md").read_text()


def test_large_adds_bench_answers_at_once_and_measures_searches_during_indexing(tmp_path: Path) -> None:
    write_beir(tmp_path / "beir")
    done = run_module(
        "bench.large_adds", "--data-dir", str(tmp_path / "beir"), "--sizes-kb", "40", "--searches", "4",
        "--out", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "large_adds.json").read_text())
    (add,) = report["adds"]
    # Just under the size asked for, and past ZAPOMNI_BACKGROUND_ADD_BYTES (32 KB): answered before indexing.
    assert 32 * 1024 < add["bytes"] <= 40 * 1024 and add["chunks"] > 1 and add["answer_ms"] > 0
    assert add["share_of_bare"] > 0 and add["bare_embedder_chunks_per_s"] > 0
    assert report["search_idle_ms"]["p50"] > 0 and report["searches_idle"] == 4
    assert "Large adds through MCP" in (tmp_path / "large_adds.md").read_text()


def test_ingestion_bench_compares_adds_with_the_bare_embedder(tmp_path: Path) -> None:
    write_beir(tmp_path / "beir")
    out = tmp_path / "ingestion.md"
    done = run_module(
        "bench.ingestion",
        *("--data-dir", str(tmp_path / "beir"), "--docs", "8", "--rounds", "2"),
        *("--output", str(out), "--json", str(tmp_path / "i.json")),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "i.json").read_text())
    assert report["documents"] == 8 and report["chunks"] == 8, "every sampled document became one chunk"
    assert report["bare_chunks_per_s"] > 0
    for row in (*report["concurrent"].values(), report["mcp_sequential"]):
        assert row["share_of_bare"] > 0, row
    assert set(report["concurrent"]) == {"everysec", "always"}
    assert report["mcp_sequential"]["appendfsync"] == "always"
    assert report["mcp_sequential"]["latency_ms"]["p95"] >= report["mcp_sequential"]["latency_ms"]["p50"] > 0
    assert len(report["chunks_per_s_by_round"]) == 2
    assert "through MCP" in out.read_text()


def test_entity_dedup_bench_sweeps_scorers_and_thresholds_and_times_resolve(tmp_path: Path) -> None:
    done = run_module("bench.entity_dedup", "--sizes", "300", "--queries", "20", "--out", str(tmp_path))
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
    done = run_module(
        "bench.graph_extraction",
        *("--data-dir", str(tmp_path / "beir"), "--docs", "4", "--rounds", "1"),
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


def write_small_locomo(path: Path) -> None:
    """One small conversation in LoCoMo's format whose turns name shared people and places; questions of
    categories 1-4 and one of category 5 (left out)."""
    sessions = {
        "1:56 pm on 8 May, 2023": [
            ("John", "I visited Rome with my sister Anna last summer."),
            ("Maria", "Rome is lovely! Did you see the Colosseum?"),
            ("John", "Yes, and Anna loved the Vatican Museums."),
        ],
        "10:00 am on 20 June, 2023": [
            ("Maria", "I started a new job at Siemens in Munich."),
            ("John", "Congratulations! Munich has great beer gardens."),
            ("Maria", "My colleague Oliver takes me to one every Friday."),
            ("John", "I adopted a cat named Milo."),
        ],
    }
    conversation: dict[str, object] = {"speaker_a": "John", "speaker_b": "Maria"}
    for number, (date, turns) in enumerate(sessions.items(), start=1):
        conversation[f"session_{number}_date_time"] = date
        conversation[f"session_{number}"] = [
            {"speaker": speaker, "dia_id": f"D{number}:{i + 1}", "text": text}
            for i, (speaker, text) in enumerate(turns)
        ]
    qa = [
        {"question": "Which city did John visit with Anna?", "evidence": ["D1:1"], "category": 4},
        {"question": "Where does Maria work, and who takes her out?", "evidence": ["D2:1", "D2:3"], "category": 1},
        {"question": "When did Maria start her new job?", "evidence": ["D2:1"], "category": 2},
        {"question": "Would Anna enjoy a museum trip?", "evidence": ["D1:3"], "category": 3},
        {"question": "What is the dog called?", "evidence": [], "category": 5},
    ]
    path.write_text(json.dumps([{"sample_id": "tiny", "conversation": conversation, "qa": qa}]))


def test_graph_retrieval_bench_compares_expansion_variants_and_costs_the_build(tmp_path: Path) -> None:
    write_small_locomo(tmp_path / "locomo.json")
    write_beir(tmp_path / "beir")
    out = tmp_path / "graph_retrieval.md"
    done = run_module(
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
    done = run_module("bench.graph_retrieval", "--locomo", str(tmp_path / "nothing.json"))
    assert done.returncode == 2
    assert "LoCoMo development half not found" in done.stderr


def test_graph_extraction_bench_measures_the_ollama_stand_in_and_the_cost_per_1000_memories(tmp_path: Path) -> None:
    write_beir(tmp_path / "beir")
    write_small_locomo(tmp_path / "locomo.json")
    done = run_module(
        "bench.graph_extraction",
        *("--data-dir", str(tmp_path / "beir"), "--docs", "3", "--rounds", "1"),
        *("--locomo", str(tmp_path / "locomo.json"), "--cost-turns", "5"),
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


def test_code_index_bench_times_indexing_and_scores_the_call_graph(tmp_path: Path) -> None:
    truth = {
        "how": "read from tests/fixtures/code/python by hand",
        "callers": [
            {
                "caller": "shop.service.OrderService.place",
                "callees": [
                    {"name": "shop.service.OrderService.build", "calls": ["self.build"], "form": "self method"},
                    {"name": "shop.service.OrderService.place.log", "calls": ["log"], "form": "nested function"},
                    {"name": "shop.service.render", "calls": ["render"], "form": "same-module name"},
                ],
            },
            {"caller": "shop.models.Order.total", "callees": [{"name": "shop.base.validate", "calls": ["check"]}]},
            {"caller": "shop.models.Order.label", "callees": [{"name": "shop.base.Entity.describe"}]},
        ],
    }
    (tmp_path / "truth.json").write_text(json.dumps(truth))
    out = tmp_path / "code_index.md"
    done = run_module(
        "bench.code_index",
        *("--project", str(ROOT / "tests" / "fixtures" / "code" / "python"), "--skip-repo"),
        *("--truth", str(tmp_path / "truth.json"), "--output", str(out), "--json", str(tmp_path / "c.json")),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "c.json").read_text())
    (project,) = report["projects"]
    assert project["first"]["counts"]["files"] == 4 and project["first"]["counts"]["symbols"] > 0
    assert project["first"]["files_per_s"] > 0 and project["first"]["chunks"] > 0
    assert project["reindex"]["all_unchanged"] and project["reindex"]["counts"]["unchanged"] == 4
    graph = project["callgraph"]
    assert graph["callers"] == 3 and graph["truth_edges"] == 5 and not graph["callers_not_indexed"]
    assert 0 < graph["precision"] <= 1 and 0 < graph["recall"] <= 1
    text = out.read_text()
    assert "precision **" in text and "recall **" in text and "Re-index: a second `index_codebase`" in text


def test_document_ingestion_bench_reports_pages_per_second_and_the_extraction_share(tmp_path: Path) -> None:
    out = tmp_path / "document_ingestion.md"
    done = run_module(
        "bench.document_ingestion",
        *("--pdfs", "2", "--markdown", "2", "--rich", "1", "--output", str(out), "--json", str(tmp_path / "d.json")),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "d.json").read_text())
    pdf = report["formats"]["pdf"]
    assert pdf["files"] == 2 and pdf["pages"] >= 2 and pdf["pages_per_s"] > 0
    assert report["formats"]["markdown"]["files"] == 2
    assert all(row["chunks"] > 0 and row["extraction_alone_s"] > 0 for row in report["formats"].values())
    assert 0 < report["total"]["extraction_share"] < 1
    assert report["reingest"]["all_unchanged"]
    assert "pages/s" in out.read_text()


def test_cold_start_bench_times_both_stores_and_reads_the_server_log(tmp_path: Path) -> None:
    done = run_module(
        "bench.cold_start", "--starts", "1", "--chunks", "60",
        "--output", str(tmp_path / "cold.md"), "--json", str(tmp_path / "cold.json"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "cold.json").read_text())
    assert report["store"]["chunks"] == 60
    for store in (report["fresh"], report["store"]):
        assert store["tools_list_ms"]["median"] > store["startup_ms"]["median"] > 0
        assert store["workspace_open_ms"]["median"] > 0
    assert "tools/list answered" in (tmp_path / "cold.md").read_text()


def test_install_size_bench_measures_the_runtime_closure(tmp_path: Path) -> None:
    done = run_module("bench.install_size", "--output", str(tmp_path / "size.md"), "--json", str(tmp_path / "s.json"))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "s.json").read_text())
    assert 0 < report["graph_extraction_mb"] < report["runtime_mb"] < report["runtime_with_bytecode_mb"]
    assert "onnxruntime" in report["largest"] and "pytest" not in report["largest"]


def test_graph_large_memory_bench_resumes_a_stopped_build(tmp_path: Path) -> None:
    done = run_module(
        "bench.graph_large_memory", "--kilobytes", "64",
        "--output", str(tmp_path / "g.md"), "--json", str(tmp_path / "g.json"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "g.json").read_text())
    assert report["chunks"] > 32 and report["build_s"] > 0
    assert report["chunks"] // 2 <= report["resumed_from_chunk"] < report["chunks"]


def test_token_verify_bench_reports_every_call(tmp_path: Path) -> None:
    out, figures = tmp_path / "token_verify.md", tmp_path / "token_verify.json"
    sizes = ["--tokens", "5", "--count", "40"]
    done = run_module("bench.token_verify", *sizes, "--output", str(out), "--json", str(figures))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(figures.read_text())
    for key in ("verify", "verify_unknown", "ping", "write_per_request", "verify_under_writes", "write_under_writes"):
        assert 0 < report[key]["p50"] <= report[key]["p95"], key
    assert report["verify_malformed_us"] < report["verify"]["p50"] * 1000  # no read at all
    assert report["concurrent"]["verifies"] == 32 and report["tokens"] == 5
    assert "| verify, a working token (one indexed read) |" in out.read_text()


def test_http_load_bench_drives_one_replica_and_two_and_compares_with_stdio(tmp_path: Path) -> None:
    out = tmp_path / "http_load.md"
    sizes = ["--clients", "4", "--seconds", "3", "--memories", "20", "--searches", "5"]
    done = run_module("bench.http_load", *sizes, "--output", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.with_suffix(".json").read_text())
    assert [run["replicas"] for run in report["runs"]] == [1, 2]
    for run in report["runs"]:
        assert run["errors"] == 0, run["error_samples"]
        assert run["per_tool_ms"]["search_memory"]["count"] > 0 and run["requests_per_s"] > 0
        assert len(run["peak_rss_mb"]) == run["replicas"] and all(mb > 50 for mb in run["peak_rss_mb"].values())
        assert all(side["search_mean_ms"] > 0 and side["query_embedding_mean_ms"] > 0 for side in run["server_side"])
    assert report["overhead"]["stdio_ms"]["p50"] > 0 and report["overhead"]["http_ms"]["p50"] > 0
    assert "| 2 | 4 |" in out.read_text()


@pytest.mark.skipif(
    not Path("/usr/bin/chromium").exists(), reason="Debian's chromium is missing: run ops/setup-chromium"
)
def test_console_bench_times_the_list_and_the_graph_in_the_browser(tmp_path: Path) -> None:
    out, figures = tmp_path / "console.md", tmp_path / "console.json"
    done = run_module(
        "bench.console", "--memories", "200", "--repeats", "1", "--output", str(out), "--json", str(figures)
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(figures.read_text())
    assert report["list"]["fcp_ms"] > 0 and report["list"]["interactive_ms"] > 0
    assert report["graph"]["first_nodes"] == 101 and report["graph"]["nodes"] == 200
    assert report["graph"]["drawn_ms"] > 0 and report["graph"]["expand_ms"] > 0
    # Cytoscape.js alone is ~440 KB minified: the graph page carries it, the list does not.
    assert report["list"]["payload"]["uncompressed_kb"] < 200 < report["graph"]["payload"]["uncompressed_kb"]
    assert report["graph"]["payload"]["compressed_kb"] < report["graph"]["payload"]["uncompressed_kb"]
    assert "| memory list (25 newest) |" in out.read_text()


def test_primary_writes_bench_reports_every_writer_count_for_both_fsync_policies(tmp_path: Path) -> None:
    out = tmp_path / "primary_writes.md"
    done = run_module("bench.primary_writes", "--seconds", "1", "--output", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    rates = json.loads(out.with_suffix(".json").read_text())["rates"]
    assert set(rates) == {f"{fsync}/{w}" for fsync in ("always", "everysec") for w in (1, 4, 16)}
    assert all(rate > 0 for rate in rates.values()), rates


def test_list_pages_bench_measures_pages_and_stats_at_each_size(tmp_path: Path) -> None:
    out = tmp_path / "list_pages.md"
    done = run_module("bench.list_pages", "--sizes", "300", "600", "--output", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.with_suffix(".json").read_text())
    assert set(report["sizes"]) == {"300", "600"}
    assert all(m["page_newest_ms"]["p50"] > 0 and m["stats_ms"]["p50"] > 0 for m in report["sizes"].values())
    assert "| 600 |" in out.read_text()
