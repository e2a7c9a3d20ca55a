"""Reciprocal rank fusion and per-memory grouping."""

from __future__ import annotations

import pytest

from zapomni_core.search import Candidate, best_per_memory, reciprocal_rank_fusion
from zapomni_core.search.fusion import fractional_ranks
from zapomni_db import ChunkHit, MemoryInfo


def cand(chunk: str, memory: str | None = None, similarity: float = 0.5, score: float | None = None) -> Candidate:
    info = MemoryInfo(memory or f"m-{chunk}", [], None, None, 0.0, 0.0, 1)
    return Candidate(
        hit=ChunkHit(memory=info, chunk_id=chunk, text=chunk, distance=1.0 - similarity),
        similarity=similarity,
        # Distinct by default (derived from the name), so lists are strictly ranked unless a test says otherwise.
        leg_score=score if score is not None else 1.0 / (1 + sum(map(ord, chunk))),
    )


def leg(*chunks: str) -> list[Candidate]:
    """A leg's ranked list with strictly decreasing scores."""
    return [cand(c, score=1.0 / (i + 1)) for i, c in enumerate(chunks)]


def test_a_chunk_found_by_both_legs_outranks_single_leg_winners() -> None:
    fused = reciprocal_rank_fusion({"vector": leg("a", "shared"), "keyword": leg("b", "shared")}, k=60)
    assert fused[0].candidate.chunk_id == "shared"
    assert fused[0].rank_score == pytest.approx(2 / 62)
    assert fused[0].legs == ["keyword", "vector"]
    assert {r.candidate.chunk_id: r.legs for r in fused[1:]} == {"a": ["vector"], "b": ["keyword"]}


def test_a_leg_weight_scales_its_ranks() -> None:
    legs = {"vector": leg("v"), "keyword": leg("k")}
    fused = reciprocal_rank_fusion(legs, k=60, weights={"vector": 0.7})
    assert [(r.candidate.chunk_id, r.rank_score) for r in fused] == [
        ("k", pytest.approx(1 / 61)),
        ("v", pytest.approx(0.7 / 61)),
    ]
    # Unweighted legs count 1: a keyword rank of 2 still beats a vector rank of 1 weighted 0.7 only
    # while 1 / (k + 2) > 0.7 / (k + 1).
    close = reciprocal_rank_fusion({"vector": leg("v"), "keyword": leg("k1", "k2")}, k=60, weights={"vector": 0.7})
    assert [r.candidate.chunk_id for r in close] == ["k1", "k2", "v"]


def test_scores_follow_the_formula_and_k_flattens_them() -> None:
    fused = reciprocal_rank_fusion({"vector": leg("x", "y", "z")}, k=1)
    assert [r.rank_score for r in fused] == pytest.approx([1 / 2, 1 / 3, 1 / 4])
    flat = reciprocal_rank_fusion({"vector": leg("x", "y")}, k=1000)
    assert flat[0].rank_score / flat[1].rank_score < 1.001


def test_ties_break_on_similarity_then_chunk_id() -> None:
    # Same rank in different legs gives equal fused scores.
    fused = reciprocal_rank_fusion({"vector": [cand("low", similarity=0.2)], "keyword": [cand("high", similarity=0.9)]})
    assert [r.candidate.chunk_id for r in fused] == ["high", "low"]
    same = reciprocal_rank_fusion({"vector": [cand("b", similarity=0.5)], "keyword": [cand("a", similarity=0.5)]})
    assert [r.candidate.chunk_id for r in same] == ["a", "b"]


def test_the_order_does_not_depend_on_leg_order() -> None:
    legs = {"vector": leg("a", "b", "c"), "keyword": leg("c", "d")}
    forward = [r.candidate.chunk_id for r in reciprocal_rank_fusion(legs)]
    backward = [r.candidate.chunk_id for r in reciprocal_rank_fusion(dict(reversed(list(legs.items()))))]
    assert forward == backward


def test_one_empty_leg_leaves_the_other_in_its_order() -> None:
    fused = reciprocal_rank_fusion({"vector": [], "keyword": leg("k1", "k2", "k3")})
    assert [r.candidate.chunk_id for r in fused] == ["k1", "k2", "k3"]
    assert reciprocal_rank_fusion({"vector": [], "keyword": []}) == []


def test_best_per_memory_keeps_each_memorys_top_chunk_in_order() -> None:
    chunks = [cand("a1", "A", score=5), cand("a2", "A", score=4), cand("b1", "B", score=3)]
    fused = reciprocal_rank_fusion({"vector": [*chunks, cand("a3", "A", score=2), cand("c1", "C", score=1)]})
    grouped = best_per_memory(fused)
    assert [(r.candidate.memory_id, r.candidate.chunk_id) for r in grouped] == [("A", "a1"), ("B", "b1"), ("C", "c1")]


def test_equal_leg_scores_share_the_mean_rank() -> None:
    tied = [cand("top", score=9.0), *(cand(f"t{i}", score=1.0) for i in range(4))]
    assert fractional_ranks(tied) == [1.0, 3.5, 3.5, 3.5, 3.5]
    # The first of a tied block gains nothing over the rest of it in the fused order.
    fused = reciprocal_rank_fusion({"keyword": tied, "vector": leg("t3", "top")}, k=60)
    assert [r.candidate.chunk_id for r in fused][:2] == ["top", "t3"]
    assert fused[1].rank_score == pytest.approx(1 / 63.5 + 1 / 61)
