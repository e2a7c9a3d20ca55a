"""Scale and store benches (sizes, starts, repairs, pages, deletes) end to end on tiny inputs.

They keep the benchmarks runnable between `make bench` runs. One file per subject, so the test workers
(`--dist loadfile`) share them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.runs import run_bench
from tests.helpers import open_core
from zapomni_core import Settings
from zapomni_core.memories.requests import AddMemoryRequest


def test_scale_bench_measures_every_figure_at_each_size(tmp_path: Path) -> None:
    out, store = tmp_path / "scale.md", tmp_path / "store"
    options = ("--queries", "6", "--catch-up", "20", "--samples", "3", "--delete-batch", "5", "--store", str(store))
    # In two parts, as a run to 1M is made: the first size, then the rest on the same store (`--resume`).
    first = run_bench("bench.scale", "--sizes", "30", *options, "--output", str(out))
    assert first.returncode == 0, first.stderr[-2000:]
    done = run_bench("bench.scale", "--sizes", "30", "60", "--resume", *options, "--output", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(out.with_suffix(".json").read_text())
    assert list(results["sizes"]) == ["30", "60"]
    assert len(results["notes"]) == 1 and results["notes"][0].startswith("sizes 60 measured later")
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


async def store_of_twelve(data_dir: Path) -> None:
    """A store of 12 one-chunk memories, its database stopped (the last client gone)."""
    async with open_core(Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING")) as (core, _info):
        for i in range(12):
            await core.memories.add(AddMemoryRequest(text=f"Memory number {i} about tides and the moon, item {i}."))


@pytest.mark.anyio
async def test_scale_bench_measures_the_starts_of_an_existing_store(tmp_path: Path, data_dir: Path) -> None:
    await store_of_twelve(data_dir)
    out = tmp_path / "start.md"
    done = run_bench(
        "bench.scale", "--existing", str(data_dir), "--catch-up", "10", "--more-starts", "1", "--output", str(out)
    )
    assert done.returncode == 0, done.stderr[-2000:]
    start = json.loads(out.with_suffix(".json").read_text())["start"]
    assert start["chunks"] == 12 and start["catch_up"]["chunks"] == 10
    assert start["database_stopped_ms"] > 0 and start["database_running_ms"] > 0
    assert start["server_rss_mb"]["now"] > 0 and start["database_rss_mb"]["now"] > 0
    # A store this small is indexed before its first answer: nothing was searched during a build.
    assert start["while_building"]["indexes_built_ms"] >= start["database_stopped_ms"]
    assert start["while_building"]["search_ms"] is None
    assert "| 12 |" in out.read_text()
    # Each more start found the database stopped and answered a search.
    more = json.loads(out.with_suffix(".json").read_text())["more_starts"]["runs"]
    assert len(more) == 1 and more[0]["first_search_ms"] > 0 and more[0]["log"]["workspace_open_ms"] is not None
    again = run_bench(
        "bench.scale", "--existing", str(data_dir), "--starts-only", "--more-starts", "1", "--output", str(out)
    )
    assert again.returncode == 0, again.stderr[-2000:]
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["start"] == start and len(report["more_starts"]["runs"]) == 1  # the first run's figures kept
    assert report["more_starts"]["runs"][0]["first_search_ms"] > 0
    assert "More cold starts with the database stopped" in out.read_text()


@pytest.mark.anyio
async def test_first_answer_bench_times_a_cold_start_and_says_where_it_went(tmp_path: Path, data_dir: Path) -> None:
    await store_of_twelve(data_dir)
    out = tmp_path / "first.md"
    done = run_bench(
        "bench.first_answer", "--store", str(data_dir), "--starts", "2", "--searches", "2",
        "--prepare", "--latency", "3", "--output", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["prepared_s"] >= 0
    assert set(report["latency"]["search_ms"]) == {"vector", "keyword", "hybrid"}
    assert report["latency"]["search_ms"]["hybrid"]["cached_embedding"]["p95"] > 0
    runs = report["runs"]
    assert len(runs) == 2
    for run in runs:
        # Each start loaded the store itself (FalkorDB's log says how long) and answered from both legs; a search
        # that came while the database was still loading this small store was answered from the keyword index.
        assert run["server_ready_ms"] > 0 and run["database_load_s"] is not None
        if run["before_load"]:
            assert run["legs"] == ["keyword"]
        else:
            assert run["legs"] == ["vector", "keyword"] and run["first_search_ms"] > run["server_ready_ms"]
        assert set(run["more_searches_legs"]) <= {"both", "before the load"} and len(run["more_searches_legs"]) == 2
        assert run["first_search_in_server_ms"] > 0 and run["more_searches_p50_ms"] > 0
    assert "| 2 |" in out.read_text() and "| hybrid |" in out.read_text()


def test_index_repair_bench_sees_the_replay_and_the_repair(tmp_path: Path) -> None:
    out = tmp_path / "index_repair.md"
    done = run_bench("bench.index_repair", "--sizes", "300", "--output", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    row = out.read_text().strip().splitlines()[-1].split("|")
    # chunks | load | distinct top-50 after replay | repair | next start | distinct top-50 next start
    assert row[1].strip() == "300"
    assert int(row[3]) < 50 and int(row[6]) == 50


def test_memory_ops_bench_measures_deletes_pages_and_workspaces(tmp_path: Path) -> None:
    done = run_bench("bench.memory_ops", "--store", "600", "--batch", "100", "--repeats", "8", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "memory_ops.json").read_text())
    assert report["delete_1"]["p50"] > 0 and report["delete_batch"]["memories"] == 100
    assert len(report["delete_batch"]["runs_ms"]) == 3 and report["store_memories"] == 600
    assert set(report["list_page_20"]) >= {"first page, newest", "page in the middle", "tag filter (10% match)"}
    mechanism = report["workspace_mechanism"]
    # A workspace of its own holds 100 memories, so every search fills its limit of 10; the filtered
    # design may find fewer (the HNSW walk runs out before 10 pass the filter).
    assert mechanism["vector: graph per workspace"]["mean_results"] == 10
    assert mechanism["hybrid: graph per workspace"]["mean_results"] == 10
    assert all(0 < figures["mean_results"] <= 10 for figures in mechanism.values())
    assert "Workspace mechanism" in (tmp_path / "memory_ops.md").read_text()


def test_cold_start_bench_times_both_stores_and_reads_the_server_log(tmp_path: Path) -> None:
    done = run_bench(
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


def test_list_pages_bench_measures_pages_and_stats_at_each_size(tmp_path: Path) -> None:
    out = tmp_path / "list_pages.md"
    done = run_bench("bench.list_pages", "--sizes", "300", "600", "--output", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.with_suffix(".json").read_text())
    assert set(report["sizes"]) == {"300", "600"}
    assert all(m["page_newest_ms"]["p50"] > 0 and m["stats_ms"]["p50"] > 0 for m in report["sizes"].values())
    # One grown memory in a hundred has the rare speaker, tag and thread: 3 at 300, 6 at 600; none has the others.
    for size, m in report["sizes"].items():
        found = m["filtered_found"]
        assert [found[f"{name} 1 %"] for name in ("speaker", "tag", "thread")] == [int(size) // 100] * 3, found
        assert [found[f"{name}, none"] for name in ("speaker", "tag", "thread", "source")] == [0] * 4, found
        assert all(figures["p50"] > 0 for figures in m["filtered_ms"].values())
    assert "| 600 |" in out.read_text()
