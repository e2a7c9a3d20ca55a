"""Reciprocal rank fusion, score fusion and per-memory grouping."""

from __future__ import annotations

import pytest

from zapomni_core.search import Candidate, best_per_memory, reciprocal_rank_fusion, score_fusion
from zapomni_core.search.fusion import fractional_ranks
from zapomni_core.search.types import LegName
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
    legs: dict[LegName, list[Candidate]] = {"vector": leg("v"), "keyword": leg("k")}
    fused = reciprocal_rank_fusion(legs, k=60, weights={"vector": 0.7})
    assert [r.candidate.chunk_id for r in fused] == ["k", "v"]
    assert [r.rank_score for r in fused] == pytest.approx([1 / 61, 0.7 / 61])
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
    legs: dict[LegName, list[Candidate]] = {"vector": leg("a", "b", "c"), "keyword": leg("c", "d")}
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


def scored(*pairs: tuple[str, float, float]) -> list[Candidate]:
    """A leg's list of (chunk, similarity, leg score), in the order given."""
    return [cand(chunk, similarity=similarity, score=score) for chunk, similarity, score in pairs]


def test_score_fusion_weighs_each_legs_score_against_its_best() -> None:
    vector = scored(("v", 0.8, 0.8), ("both", 0.6, 0.6))
    keyword = scored(("k", 0.2, 12.0), ("both", 0.6, 6.0))
    fused = score_fusion({"vector": vector, "keyword": keyword}, vector_share=0.6, k=10, vector_weight=0.7)
    # v: 0.6 * 0.8/0.8 = 0.6; both: 0.6 * 0.6/0.8 + 0.4 * 6/12 = 0.65; k (its own cosine counts): 0.6 * 0.2/0.8 + 0.4
    assert [r.candidate.chunk_id for r in fused] == ["both", "v", "k"]
    assert {r.candidate.chunk_id: r.legs for r in fused} == {
        "both": ["keyword", "vector"],
        "v": ["vector"],
        "k": ["keyword"],
    }
    # On RRF's scale for the lists fused after it: 1 (first in both legs) is worth RRF's first in both legs.
    assert [r.rank_score for r in fused] == pytest.approx([0.65 * 1.7 / 11, 0.6 * 1.7 / 11, 0.55 * 1.7 / 11])


def test_score_fusion_unlike_ranks_lets_a_far_stronger_match_win() -> None:
    # The vector leg's first hit is far nearer than its second, the keyword leg's two score nearly the same: RRF
    # sees only ranks and puts the keyword leg's first ahead; score fusion keeps the clear vector winner.
    vector = scored(("clear", 0.90, 0.90), ("second", 0.40, 0.40))
    keyword = scored(("second", 0.40, 5.0), ("clear", 0.90, 4.9))
    legs: dict[LegName, list[Candidate]] = {"vector": vector, "keyword": keyword}
    by_ranks = reciprocal_rank_fusion(legs, k=10, weights={"vector": 0.7})
    assert [r.candidate.chunk_id for r in by_ranks] == ["second", "clear"]
    fused = score_fusion(legs, vector_share=0.6, k=10, vector_weight=0.7)
    assert [r.candidate.chunk_id for r in fused] == ["clear", "second"]


def test_score_fusion_share_runs_from_keywords_only_to_vectors_only() -> None:
    legs: dict[LegName, list[Candidate]] = {
        "vector": scored(("v", 0.9, 0.9), ("k", 0.3, 0.3)),
        "keyword": scored(("k", 0.3, 5.0)),
    }
    by_keywords = score_fusion(legs, vector_share=0.0, k=10, vector_weight=0.7)
    by_vectors = score_fusion(legs, vector_share=1.0, k=10, vector_weight=0.7)
    assert [r.candidate.chunk_id for r in by_keywords] == ["k", "v"]
    assert [r.candidate.chunk_id for r in by_vectors] == ["v", "k"]


def test_score_fusion_of_one_keyword_leg_keeps_its_order_and_empty_legs_give_nothing() -> None:
    keyword = scored(("a", 0.1, 9.0), ("b", 0.9, 3.0))
    assert [
        r.candidate.chunk_id for r in score_fusion({"keyword": keyword}, vector_share=0.6, k=10, vector_weight=0.7)
    ] == ["a", "b"]
    assert score_fusion({"vector": [], "keyword": []}, vector_share=0.6, k=10, vector_weight=0.7) == []
