"""Reciprocal rank fusion (Cormack et al., 2009): score = sum over legs of weight / (k + rank), then
the relevance rule and per-memory grouping.

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
