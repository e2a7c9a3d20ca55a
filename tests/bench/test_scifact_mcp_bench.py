"""bench/scifact_mcp.py end to end on a tiny BEIR corpus: stored the issue way, asked at two limits."""

from __future__ import annotations

import json
from pathlib import Path

from bench.common import scifact_documents
from tests.bench.runs import run_bench, write_beir


def test_the_issue_way_stores_title_newline_text_with_a_source(tmp_path: Path) -> None:
    write_beir(tmp_path)
    doc_id, text, metadata = scifact_documents(tmp_path, "issue")[3]
    assert doc_id == "d3" and text.startswith("Study 3\nA report on") and metadata == {"source": "scifact/d3"}
    assert scifact_documents(tmp_path, "bench")[3] == ("d3", text.replace("\n", " "), {})


def test_scifact_mcp_bench_measures_each_limit_through_mcp(tmp_path: Path) -> None:
    write_beir(tmp_path / "beir")
    raw = tmp_path / "out.json"
    out = tmp_path / "out.md"
    kept = tmp_path / "kept"
    args = ("--data-dir", str(tmp_path / "beir"), "--json", str(raw), "--output", str(out))
    done = run_bench("bench.scifact_mcp", *args, "--limits", "5,10", "--keep", str(kept))
    assert done.returncode == 0, done.stderr[-2000:]
    [report] = json.loads(raw.read_text())["runs"]
    assert "| defaults | 10 |" in out.read_text() and "| issue |" in out.read_text()
    assert report["memories"] == report["documents"] == 40 and (report["split"], report["claims"]) == ("test", 8)
    for limit in ("5", "10"):
        assert 0.5 < report["by_limit"][limit]["ndcg10"] <= 1.0, report
    # The kept corpus answers the train claims in a later run that stores nothing.
    done = run_bench("bench.scifact_mcp", *args, "--limits", "10", "--store", str(kept), "--split", "train")
    assert done.returncode == 0, done.stderr[-2000:]
    [train] = json.loads(raw.read_text())["runs"]
    assert (train["split"], train["claims"], train["ingest_s"]) == ("train", 4, 0.0)
    assert "| issue (copy), train |" in out.read_text() and 0.5 < train["by_limit"]["10"]["ndcg10"] <= 1.0
