"""The classifier bench leaves each development set out in turn, scores the rules and the classifier on it against the
labels, and never reads the held-out cases."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.runs import run_bench


def case(case_id: str, link: bool, older: str, newer: str) -> str:
    return json.dumps({
        "id": case_id, "link": link,
        "older": {"text": older, "speaker": None, "date": "2025-01-10"},
        "newer": {"text": newer, "speaker": None, "date": "2025-06-10"},
    }) + "\n"  # fmt: skip


def test_update_classifier_bench_scores_each_set_left_out_and_leaves_the_held_out_cases_unread(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(
        case("c1", True, "Lives in Lyon", "Lives in Marseille")
        + case("c2", False, "Plays guitar", "Plays piano")
        # labelled an update, which the rules do not link: a miss the figures must count
        + case("c3", True, "Enjoys hiking", "Went to the cinema on Friday")
    )
    (tmp_path / "facts.jsonl").write_text(
        case("f1", True, "Drives a Ford Focus", "Drives a Kia Niro")
        + case("f2", False, "Has a cat", "Sister has a dog")
    )
    (tmp_path / "heldout.jsonl").write_text("this is not JSON: reading it would fail the run\n")
    out, raw = tmp_path / "classifier.md", tmp_path / "classifier.json"
    sets = ("--data", str(tmp_path), "--sets", "cases,facts")
    run = run_bench("bench.update_classifier", *sets, "--output", str(out), "--json", str(raw))
    assert run.returncode == 0, run.stderr
    left_out = json.loads(raw.read_text())["left_out"]
    assert set(left_out) == {"cases", "facts"}
    assert (left_out["cases"]["pairs"], left_out["cases"]["updates"]) == (3, 2)
    assert left_out["cases"]["rules"] == {"tp": 1, "fp": 0, "fn": 1, "precision": 1.0, "recall": 0.5}
    assert left_out["facts"]["rules"] == {"tp": 1, "fp": 0, "fn": 0, "precision": 1.0, "recall": 1.0}
    for row in left_out.values():
        judged = [s for label, s in row.items() if "classifier" in label]
        assert judged and all(s["tp"] + s["fn"] == row["updates"] for s in judged)
        # a link made by either is at least every link the rules make
        assert all(s["tp"] >= row["rules"]["tp"] for label, s in row.items() if label.startswith("rules or"))
    assert "| cases (3 pairs, 2 updates) | rules | 1.0 | 0.5 | 1 | 0 | 1 |" in out.read_text()
