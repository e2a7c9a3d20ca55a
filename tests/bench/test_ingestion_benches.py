"""Ingestion benches (adds, documents, code, install size) end to end on tiny inputs.

They keep the benchmarks runnable between `make bench` runs. One file per subject, so the test workers
(`--dist loadfile`) share them.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.runs import ROOT, run_bench, write_beir


def test_large_adds_bench_answers_at_once_and_measures_searches_during_indexing(tmp_path: Path) -> None:
    write_beir(tmp_path / "beir")
    done = run_bench(
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
    done = run_bench(
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
    done = run_bench(
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
    done = run_bench(
        "bench.document_ingestion",
        *("--pdfs", "2", "--markdown", "2", "--rich", "1", "--output", str(out), "--json", str(tmp_path / "d.json")),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "d.json").read_text())
    pdf = report["formats"]["pdf"]
    assert pdf["files"] == 2 and pdf["pages"] >= 2 and pdf["pages_per_s"] > 0
    assert report["formats"]["markdown"]["files"] == 2
    # Which format and which figure, when one is not: seen once on a loaded machine, not reproduced.
    formats = report["formats"]  # shown whole (a string): pytest cuts a dict in a message to 240 characters
    assert all(row["chunks"] > 0 and row["extraction_alone_s"] > 0 for row in formats.values()), json.dumps(formats)
    assert 0 < report["total"]["extraction_share"] < 1
    assert report["reingest"]["all_unchanged"]
    assert "pages/s" in out.read_text()


def test_install_size_bench_measures_the_runtime_closure(tmp_path: Path) -> None:
    done = run_bench("bench.install_size", "--output", str(tmp_path / "size.md"), "--json", str(tmp_path / "s.json"))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "s.json").read_text())
    assert 0 < report["graph_extraction_mb"] < report["runtime_mb"] < report["runtime_with_bytecode_mb"]
    assert "onnxruntime" in report["largest"] and "pytest" not in report["largest"]
