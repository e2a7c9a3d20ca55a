"""Fusion of the legs' lists: reciprocal rank fusion (Cormack et al., 2009: score = sum over legs of
weight / (k + rank)) or a convex combination of their scores (`score_fusion`); then the relevance rule and
per-memory grouping.

Candidates a leg scored equally share one rank, the mean of the positions they occupy: BM25
gives identical scores to chunks that match a query the same way, and the arbitrary order among
them must not earn the first of them a better fused rank than the others.
"""

from __future__ import annotations

from collections.abc import Mapping

from zapomni_core.search.types import Candidate, LegName, Ranked


def reciprocal_rank_fusion(
    legs: Mapping[LegName, list[Candidate]], k: int = 60, weights: Mapping[LegName, float] | None = None
) -> list[Ranked]:
    """Fuse ranked lists, each rank worth `weight / (k + rank)` (weight 1 unless given); ties break on cosine
    similarity, then chunk id, so the order is deterministic."""
    scores: dict[str, float] = {}
    found_by: dict[str, list[LegName]] = {}
    candidates: dict[str, Candidate] = {}
    for leg, ranked in legs.items():
        weight = (weights or {}).get(leg, 1.0)
        for rank, candidate in zip(fractional_ranks(ranked), ranked, strict=True):
            scores[candidate.chunk_id] = scores.get(candidate.chunk_id, 0.0) + weight / (k + rank)
            found_by.setdefault(candidate.chunk_id, []).append(leg)
            candidates.setdefault(candidate.chunk_id, candidate)
    order = sorted(scores, key=lambda cid: (-scores[cid], -candidates[cid].similarity, cid))
    return [Ranked(candidates[cid], scores[cid], sorted(found_by[cid])) for cid in order]


def score_fusion(
    legs: Mapping[LegName, list[Candidate]], *, vector_share: float, k: int, vector_weight: float
) -> list[Ranked]:
    """Fuse the legs' scores, not their ranks (Bruch et al., 2023, "An Analysis of Fusion Functions for Hybrid
    Retrieval": a convex combination of scores each divided by its list's best, both legs' least being 0):
    `vector_share` × cosine similarity / the best similarity + the rest × BM25 / the best BM25.

    Every candidate carries its own cosine similarity, so a chunk only the keyword leg listed has its true
    vector part; one only the vector leg listed counts 0 for keywords. The scores are put on RRF's scale, the
    best possible (first in both legs) worth what RRF gives a chunk first in both, `(1 + vector_weight) / (k + 1)`,
    so that lists fused later (times in questions, the graph) weigh against them as against an RRF ranking.
    """
    vector = legs.get("vector", [])
    keyword = legs.get("keyword", [])
    best_similarity = max((c.similarity for listed in legs.values() for c in listed), default=0.0) or 1.0
    best_bm25 = max((c.leg_score for c in keyword), default=0.0) or 1.0
    share = vector_share if vector else 0.0
    candidates: dict[str, Candidate] = {}
    found_by: dict[str, list[LegName]] = {}
    bm25: dict[str, float] = {}
    for leg, ranked in legs.items():
        for candidate in ranked:
            candidates.setdefault(candidate.chunk_id, candidate)
            found_by.setdefault(candidate.chunk_id, []).append(leg)
            if leg == "keyword":
                bm25[candidate.chunk_id] = candidate.leg_score / best_bm25
    scores = {
        cid: share * c.similarity / best_similarity + (1.0 - share) * bm25.get(cid, 0.0)
        for cid, c in candidates.items()
    }
    order = sorted(scores, key=lambda cid: (-scores[cid], -candidates[cid].similarity, cid))
    scale = (1.0 + vector_weight) / (k + 1)
    return [Ranked(candidates[cid], scale * scores[cid], sorted(found_by[cid])) for cid in order]


def fractional_ranks(ranked: list[Candidate]) -> list[float]:
    """1-based ranks where a run of equal `leg_score`s shares the mean of its positions."""
    ranks: list[float] = []
    start = 0
    while start < len(ranked):
        end = start
        while end + 1 < len(ranked) and ranked[end + 1].leg_score == ranked[start].leg_score:
            end += 1
        ranks.extend([(start + end) / 2 + 1] * (end - start + 1))
        start = end + 1
    return ranks


def best_per_memory(ranked: list[Ranked]) -> list[Ranked]:
    """Keep each memory's best chunk, so one long memory cannot crowd out the others."""
    seen: set[str] = set()
    out: list[Ranked] = []
    for item in ranked:
        if item.candidate.memory_id not in seen:
            seen.add(item.candidate.memory_id)
            out.append(item)
    return out


def relevant_only(ranked: list[Ranked], floor: float) -> list[Ranked]:
    """Keep what a leg vouches for: a keyword match, a graph link, or a cosine similarity of at least `floor`.

    The keyword leg returns only chunks sharing a (non-stopword, stemmed) term with the query, so
    its finding a chunk is evidence enough; so is the graph expansion's (an entity shared with a
    relevant top hit, or named by the query); the vector leg returns the k nearest chunks however far
    they are, so its finding one is not. The order is kept, so a floor of 0 keeps everything.
    """
    return [r for r in ranked if "keyword" in r.legs or "graph" in r.legs or r.candidate.similarity >= floor]
