"""Reciprocal rank fusion and per-memory grouping."""

from __future__ import annotations

import pytest

from zapomni_core.search import Candidate, best_per_memory, reciprocal_rank_fusion


def cand(chunk: str, memory: str | None = None, similarity: float = 0.5) -> Candidate:
    return Candidate(
        memory_id=memory or f"m-{chunk}",
        chunk_id=chunk,
        text=chunk,
        tags=[],
        source=None,
        created_at=0.0,
        date=None,
        similarity=similarity,
    )


def test_a_chunk_found_by_both_legs_outranks_single_leg_winners() -> None:
    fused = reciprocal_rank_fusion(
        {"vector": [cand("a"), cand("shared")], "keyword": [cand("b"), cand("shared")]}, k=60
    )
    assert fused[0].candidate.chunk_id == "shared"
    assert fused[0].rank_score == pytest.approx(2 / 62)
    assert fused[0].legs == ["keyword", "vector"]
    assert {r.candidate.chunk_id: r.legs for r in fused[1:]} == {"a": ["vector"], "b": ["keyword"]}


def test_scores_follow_the_formula_and_k_flattens_them() -> None:
    fused = reciprocal_rank_fusion({"vector": [cand("x"), cand("y"), cand("z")]}, k=1)
    assert [r.rank_score for r in fused] == pytest.approx([1 / 2, 1 / 3, 1 / 4])
    flat = reciprocal_rank_fusion({"vector": [cand("x"), cand("y")]}, k=1000)
    assert flat[0].rank_score / flat[1].rank_score < 1.001


def test_ties_break_on_similarity_then_chunk_id() -> None:
    # Same rank in different legs gives equal fused scores.
    fused = reciprocal_rank_fusion({"vector": [cand("low", similarity=0.2)], "keyword": [cand("high", similarity=0.9)]})
    assert [r.candidate.chunk_id for r in fused] == ["high", "low"]
    same = reciprocal_rank_fusion({"vector": [cand("b", similarity=0.5)], "keyword": [cand("a", similarity=0.5)]})
    assert [r.candidate.chunk_id for r in same] == ["a", "b"]


def test_the_order_does_not_depend_on_leg_order() -> None:
    legs = {"vector": [cand("a"), cand("b"), cand("c")], "keyword": [cand("c"), cand("d")]}
    forward = [r.candidate.chunk_id for r in reciprocal_rank_fusion(legs)]
    backward = [r.candidate.chunk_id for r in reciprocal_rank_fusion(dict(reversed(list(legs.items()))))]
    assert forward == backward


def test_one_empty_leg_leaves_the_other_in_its_order() -> None:
    fused = reciprocal_rank_fusion({"vector": [], "keyword": [cand("k1"), cand("k2"), cand("k3")]})
    assert [r.candidate.chunk_id for r in fused] == ["k1", "k2", "k3"]
    assert reciprocal_rank_fusion({"vector": [], "keyword": []}) == []


def test_best_per_memory_keeps_each_memorys_top_chunk_in_order() -> None:
    fused = reciprocal_rank_fusion(
        {"vector": [cand("a1", "A"), cand("a2", "A"), cand("b1", "B"), cand("a3", "A"), cand("c1", "C")]}
    )
    grouped = best_per_memory(fused)
    assert [(r.candidate.memory_id, r.candidate.chunk_id) for r in grouped] == [("A", "a1"), ("B", "b1"), ("C", "c1")]
