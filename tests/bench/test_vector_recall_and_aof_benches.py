"""bench/vector_recall.py and bench/aof_rewrite.py end to end at a tiny size, so they cannot rot before a 1M run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.runs import run_bench, write_beir
from tests.helpers import open_core
from zapomni_core import Settings
from zapomni_core.memories.requests import AddMemoryRequest


def test_vector_recall_grows_a_store_measures_each_size_and_an_index_variant(tmp_path: Path) -> None:
    write_beir(tmp_path / "beir")
    out = tmp_path / "recall.md"
    done = run_bench(
        "bench.vector_recall",
        *("--sizes", "40", "80", "--embed-upto", "30", "--queries", "5", "--k", "50", "60"),
        *("--rebuild", "32,100,50", "--data-dir", str(tmp_path / "beir"), "--output", str(out)),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(out.with_suffix(".json").read_text())
    assert list(results["sizes"]) == ["40", "80"]
    small = results["sizes"]["40"]
    assert small["chunks"] == 40 and set(small["by_k"]) == {"50", "60"}
    # At 40 chunks the index holds everything it is asked for: the exact answer.
    assert small["by_k"]["50"]["recall_at_10"]["mean"] == 1.0
    assert small["by_k"]["50"]["similarity_ratio_at_10"]["mean"] == pytest.approx(1.0, abs=1e-6)
    assert small["by_k"]["50"]["short_answers"] == 0
    assert small["by_k"]["50"]["latency_ms"]["p50"] > 0
    variant = results["sizes"]["80"]["variants"]["M 32, efConstruction 100, efRuntime 50"]
    assert variant["build_s"] >= 0 and variant["by_k"]["50"]["recall_at_10"]["mean"] == 1.0
    assert "| 80 | product (k 50) |" in out.read_text()


@pytest.mark.anyio
async def test_vector_recall_reads_an_existing_store_without_changing_it(tmp_path: Path, data_dir: Path) -> None:
    write_beir(tmp_path / "beir")
    settings = Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING")
    async with open_core(settings) as (core, _info):
        for i in range(12):
            await core.memories.add(AddMemoryRequest(text=f"Memory number {i} about volcanoes and lava, item {i}."))
    out = tmp_path / "recall.md"
    done = run_bench(
        "bench.vector_recall",
        *("--store", str(data_dir), "--queries", "4", "--k", "50"),
        *("--data-dir", str(tmp_path / "beir"), "--output", str(out)),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    entry = json.loads(out.with_suffix(".json").read_text())["sizes"]["12"]
    assert entry["by_k"]["50"]["recall_at_10"]["mean"] == 1.0 and entry["index"] is not None
    async with open_core(settings) as (core, _info):
        assert (await core.workspaces.stats()).total_chunks == 12
    refused = run_bench("bench.vector_recall", "--store", str(data_dir), "--rebuild", "32,100,50")
    assert refused.returncode == 2 and "only on a store this bench grows" in refused.stderr


def test_aof_rewrite_bench_reports_growth_config_and_a_rewrite_under_writes(tmp_path: Path) -> None:
    write_beir(tmp_path / "beir")
    out = tmp_path / "aof.md"
    done = run_bench(
        "bench.aof_rewrite",
        *("--size", "300", "--embed-upto", "20", "--phase-s", "0.5"),
        *("--data-dir", str(tmp_path / "beir"), "--output", str(out)),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(out.with_suffix(".json").read_text())
    assert results["config"]["appendfsync"] == "always"
    assert results["growth"]["chunks_written"] == 280
    rewrite = results["rewrite_under_writes"]
    assert rewrite["base_mb_after"] > 0 and rewrite["write_1_ms"]["before"]["n"] > 0
    # The rewrite compacts: its new base is smaller than the AOF it replaced. (Not the directory after it: the
    # single writes of the phase after the rewrite are logged on top, more of them the quieter the machine.)
    assert rewrite["base_mb_after"] < rewrite["aof_mb_before"]
