"""Server benches (tokens, HTTP load, the console in a browser, writers) end to end on tiny inputs.

They keep the benchmarks runnable between `make bench` runs. One file per subject, so the test workers
(`--dist loadfile`) share them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.runs import run_bench


def test_token_verify_bench_reports_every_call(tmp_path: Path) -> None:
    out, figures = tmp_path / "token_verify.md", tmp_path / "token_verify.json"
    sizes = ["--tokens", "5", "--count", "40"]
    done = run_bench("bench.token_verify", *sizes, "--output", str(out), "--json", str(figures))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(figures.read_text())
    for key in ("verify", "verify_unknown", "ping", "write_per_request", "verify_under_writes", "write_under_writes"):
        assert 0 < report[key]["p50"] <= report[key]["p95"], key
    assert report["verify_malformed_us"] < report["verify"]["p50"] * 1000  # no read at all
    assert report["concurrent"]["verifies"] == 32 and report["tokens"] == 5
    assert "| verify, a working token (one indexed read) |" in out.read_text()


def test_http_load_bench_drives_one_replica_and_two_and_compares_with_stdio(tmp_path: Path) -> None:
    out = tmp_path / "http_load.md"
    sizes = ["--clients", "4", "--seconds", "1", "--memories", "20", "--searches", "5"]
    done = run_bench("bench.http_load", *sizes, "--output", str(out))
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
    done = run_bench(
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
    done = run_bench(
        "bench.primary_writes", "--seconds", "1", "--texts", "1500", "--seed-memories", "20", "--output", str(out)
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rates = json.loads(out.with_suffix(".json").read_text())["rates"]
    assert set(rates) == {f"{fsync}/{w}" for fsync in ("always", "everysec") for w in (1, 4, 16)}
    assert all(rate > 0 for rate in rates.values()), rates
