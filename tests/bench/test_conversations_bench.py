"""The conversational-recall bench runs end to end on a slice of the LoCoMo development half, through MCP."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench.conversations import main
from bench.locomo import LOCOMO

needs_locomo = pytest.mark.skipif(
    not LOCOMO.is_file(), reason=f"LoCoMo development half not found at {LOCOMO} (see ../shared/data/README.md)"
)


@needs_locomo
def test_conversations_bench_scores_each_variant_and_mode_on_a_slice(tmp_path: Path) -> None:
    out, raw = tmp_path / "conversations.md", tmp_path / "conversations.json"
    code = main(
        [
            *("--conversations", "1", "--turns", "60", "--questions", "5", "--variants", "before,full"),
            *("--no-scifact", "--scale", "0", "--output", str(out), "--json", str(raw)),
        ]
    )
    assert code == 0
    report = json.loads(raw.read_text())
    assert report["scale"] is None
    assert set(report["locomo"]) == {"before", "full"}
    assert 0 < report["bm25s"]["all"]["questions"] <= 5
    for figures in [report["bm25s"], *(f for by_mode in report["locomo"].values() for f in by_mode.values())]:
        assert figures["all"]["questions"] == report["bm25s"]["all"]["questions"]
        assert all(0 <= row["recall5"] <= row["recall10"] <= 1 for row in figures.values())
    assert set(report["locomo"]["full"]) == {"hybrid", "vector", "keyword"}
    assert report["full_hybrid_ms"]["p95"] >= report["full_hybrid_ms"]["p50"] > 0
    assert report["stores"]["full"][0]["memories"] == 60
    assert report["scifact"] is None

    text = out.read_text()
    assert "## Summary: hybrid evidence recall@10" in text
    assert "## `before`" in text and "## `full`" in text and "| Zapomni `keyword` |" in text
    figures = [float(x) for x in re.findall(r"\| (\d\.\d{3})(?= \|)", text)]
    assert figures and all(0 <= x <= 1 for x in figures)


@needs_locomo
def test_conversations_bench_measures_search_latency_at_scale(tmp_path: Path) -> None:
    out, raw = tmp_path / "conversations.md", tmp_path / "conversations.json"
    code = main(
        [
            *("--scale", "100", "--scale-searches", "10", "--conversations", "1", "--variants", "before"),
            *("--turns", "20", "--questions", "3", "--no-scifact", "--output", str(out), "--json", str(raw)),
        ]
    )
    assert code == 0
    scale = json.loads(raw.read_text())["scale"]
    assert scale["memories"] == 100 and scale["searches_per_mode"] == 10
    assert set(scale["stores"]) == {"threaded", "unthreaded"}
    for store in scale["stores"].values():
        assert store["memories"] == store["stats_memories"] == 100
        assert store["cache_hit_rate"] == 0
        for mode in ("hybrid", "vector", "keyword"):
            assert store["search_ms"][mode]["p95"] >= store["search_ms"][mode]["p50"] > 0
    assert scale["stores"]["threaded"]["threads"] == 2 * 5  # the 2 sessions of the first 20 turns, 5 copies

    text = out.read_text()
    assert "## Search latency at 100 memories" in text
    assert "| `threaded` | 100 |" in text and "| `unthreaded` | 100 |" in text
    assert text.count("| `keyword` |") == 2


def test_conversations_bench_says_clearly_when_the_data_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--locomo", str(tmp_path / "nothing.json"), "--no-scifact"]) == 2
    assert "LoCoMo development half not found" in capsys.readouterr().err
