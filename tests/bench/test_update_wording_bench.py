"""The wording bench judges each pair with the rules and counts, per batch, what they link against the labels."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.runs import run_bench


def test_update_wording_bench_counts_links_against_the_labels(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    rows = [
        {"id": "a", "batch": "one", "link": True, "older": "Lives in Lyon", "newer": "Lives in Marseille"},
        {"id": "b", "batch": "one", "link": False, "older": "Plays guitar", "newer": "Plays piano"},
        # labelled the wrong way on purpose: the bench must count it as a near-miss linked, and list it
        {"id": "c", "batch": "two", "link": False, "older": "Lives in Oslo", "newer": "Moved to Bergen in June"},
    ]
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out, raw = tmp_path / "wording.md", tmp_path / "wording.json"
    run = run_bench("bench.update_wording", "--pairs", str(pairs), "--output", str(out), "--json", str(raw))
    assert run.returncode == 0, run.stderr
    report = json.loads(raw.read_text())
    assert report["batches"] == {
        "one": {"updates": 1, "linked": 1, "near_misses": 1, "wrongly_linked": 0},
        "two": {"updates": 0, "linked": 0, "near_misses": 1, "wrongly_linked": 1},
    }
    [wrong] = report["wrong"]
    assert wrong["id"] == "c" and wrong["attribute"] == "home" and 0 < wrong["similarity"] < 1
    assert "| two | 0 | 0 | 1 | 1 |" in out.read_text()
