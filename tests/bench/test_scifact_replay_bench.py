"""bench/scifact_replay.py end to end on a tiny BEIR corpus: a kept store dumped, then replayed and checked."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.runs import run_bench, write_beir
from zapomni_core.tuning import DEFAULT_VECTOR_SHARE


def test_scifact_replay_reproduces_the_pipeline_it_dumped_and_replays_every_variant(tmp_path: Path) -> None:
    write_beir(tmp_path / "beir")
    kept, cache = tmp_path / "kept", tmp_path / "cache.pkl"
    mcp = ("--json", str(tmp_path / "mcp.json"), "--output", str(tmp_path / "mcp.md"))
    done = run_bench(
        "bench.scifact_mcp", "--data-dir", str(tmp_path / "beir"), "--limits", "10", "--keep", str(kept), *mcp
    )
    assert done.returncode == 0, done.stderr[-2000:]
    done = run_bench(
        "bench.scifact_replay",
        "dump",
        "--store",
        str(kept),
        "--cache",
        str(cache),
        "--data-dir",
        str(tmp_path / "beir"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    raw, out = tmp_path / "replay.json", tmp_path / "replay.md"
    args = ("--cache", str(cache), "--json", str(raw), "--output", str(out), "--mcp", str(tmp_path / "mcp.json"))
    done = run_bench("bench.scifact_replay", "replay", *args)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(raw.read_text())
    checks = report["checks"]
    assert checks["claims"] == {"train": 4, "test": 8}
    # The replay is the product's pipeline over the dumped lists, and the keyword replica is the real leg.
    assert checks["replay_equals_in_process_pipeline"] == checks["claims"]
    assert checks["replica_keyword_lists_equal"] == {"depth": 12, "top_50": 12, "of": 12}
    assert checks["replica_today"] == checks["in_process_pipeline_ndcg10"]
    assert checks["mcp_ndcg10"]["test"] == checks["in_process_pipeline_ndcg10"]["test"]
    # The rows differ from the store's own pipeline (scores fused at the default share), which is one of them.
    own = next(
        row for row in report["rows"] if row["name"].endswith(f"scores fused, vector share {DEFAULT_VECTOR_SHARE}")
    )
    assert (own["train"], own["test"]) == (
        checks["in_process_pipeline_ndcg10"]["train"],
        checks["in_process_pipeline_ndcg10"]["test"],
    )
    assert (own["train_delta"], own["test_delta"]) == (0.0, 0.0)
    assert len(report["rows"]) == 45 and all(0.0 <= row["train"] <= 1.0 for row in report["rows"])
    assert "| (a) whole memory, b 0.75, by memory | 0.7 |" in out.read_text()

    # bench.scifact_paired compares stores claim by claim: a cache against itself differs by nothing, and its figures
    # are the pipeline's.
    paired = tmp_path / "paired.md"
    done = run_bench("bench.scifact_paired", str(cache), str(cache), "--names", "base", "same", "--output", str(paired))
    assert done.returncode == 0, done.stderr[-2000:]
    table = paired.read_text()
    pipeline = checks["in_process_pipeline_ndcg10"]
    same = next(line for line in table.splitlines() if line.startswith("| same |"))
    zero = "+0.0000 ± 0.0000"
    assert same.endswith(f"| {pipeline['train']:.4f} | {zero} | {pipeline['test']:.4f} | {zero} |"), same
