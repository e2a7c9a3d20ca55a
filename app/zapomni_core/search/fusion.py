"""Reciprocal rank fusion (Cormack et al., 2009): score = sum over legs of 1 / (k + rank)."""

from __future__ import annotations

from collections.abc import Mapping

from zapomni_core.search.types import Candidate, LegName, Ranked


def reciprocal_rank_fusion(legs: Mapping[LegName, list[Candidate]], k: int = 60) -> list[Ranked]:
    """Fuse ranked lists; ties break on cosine similarity, then chunk id, so the order is deterministic."""
    scores: dict[str, float] = {}
    found_by: dict[str, list[LegName]] = {}
    candidates: dict[str, Candidate] = {}
    for leg, ranked in legs.items():
        for rank, candidate in enumerate(ranked, start=1):
            scores[candidate.chunk_id] = scores.get(candidate.chunk_id, 0.0) + 1.0 / (k + rank)
            found_by.setdefault(candidate.chunk_id, []).append(leg)
            candidates.setdefault(candidate.chunk_id, candidate)
    order = sorted(scores, key=lambda cid: (-scores[cid], -candidates[cid].similarity, cid))
    return [Ranked(candidates[cid], scores[cid], sorted(found_by[cid])) for cid in order]


def best_per_memory(ranked: list[Ranked]) -> list[Ranked]:
    """Keep each memory's best chunk, so one long memory cannot crowd out the others."""
    seen: set[str] = set()
    out: list[Ranked] = []
    for item in ranked:
        if item.candidate.memory_id not in seen:
            seen.add(item.candidate.memory_id)
            out.append(item)
    return out
