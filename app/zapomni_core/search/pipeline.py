"""Runs the retrieval legs concurrently, fuses them (their scores, or their ranks by RRF; plus the graph expansion
when on), drops the unrelated, groups, filters, cuts to `limit`."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from zapomni_core.search.fusion import best_per_memory, reciprocal_rank_fusion, relevant_only, score_fusion
from zapomni_core.search.temporal import favour_times, question_time
from zapomni_core.search.types import (
    Candidate,
    Expansion,
    LegName,
    LegUnavailable,
    Ranked,
    RetrievalQuery,
    Retriever,
    SearchMode,
)
from zapomni_core.tuning import (
    DEFAULT_DAYS_WEIGHT,
    DEFAULT_FUSION,
    DEFAULT_LEG_DEPTH,
    DEFAULT_RELEVANCE_FLOOR,
    DEFAULT_RRF_K,
    DEFAULT_VECTOR_SHARE,
    DEFAULT_VECTOR_WEIGHT,
    DEFAULT_WHEN_WEIGHT,
    FusionMethod,
)


@dataclass(frozen=True)
class SearchOptions:
    limit: int
    mode: SearchMode = "hybrid"
    min_score: float | None = None  # on cosine similarity
    all_chunks: bool = False
    include_unrelated: bool = False  # keep results that neither leg finds relevant (pads up to `limit`)


@dataclass(frozen=True)
class Answer:
    ranked: list[Ranked]
    legs: list[LegName]  # the legs that answered
    unavailable: dict[LegName, str]  # the legs asked that could not answer, and why


class SearchPipeline:
    def __init__(
        self,
        retrievers: Sequence[Retriever],
        *,
        rrf_k: int = DEFAULT_RRF_K,
        leg_depth: int = DEFAULT_LEG_DEPTH,
        relevance_floor: float = DEFAULT_RELEVANCE_FLOOR,
        vector_weight: float = DEFAULT_VECTOR_WEIGHT,
        fusion: FusionMethod = DEFAULT_FUSION,
        vector_share: float = DEFAULT_VECTOR_SHARE,
        expansion: Expansion | None = None,
        days_weight: float = DEFAULT_DAYS_WEIGHT,
        when_weight: float = DEFAULT_WHEN_WEIGHT,
    ) -> None:
        if not 0.0 <= relevance_floor <= 1.0:
            raise ValueError(f"relevance_floor must be a cosine similarity in [0, 1], got {relevance_floor}")
        self._retrievers = {r.name: r for r in retrievers}
        self._rrf_k = rrf_k
        self._leg_depth = leg_depth
        self._relevance_floor = relevance_floor
        if not 0.0 <= vector_share <= 1.0:
            raise ValueError(f"vector_share must be in [0, 1], got {vector_share}")
        self._weights: dict[LegName, float] = {"vector": vector_weight}
        self._fusion = fusion
        self._vector_share = vector_share
        self.expansion = expansion  # the graph leg (ZAPOMNI_GRAPH_EXPANSION), hybrid mode only
        self._days_weight = days_weight  # times in questions (search/temporal.py), hybrid mode only
        self._when_weight = when_weight

    @property
    def retrievers(self) -> list[Retriever]:
        """The legs (a benchmark rebuilds the pipeline around them to try other settings on one store)."""
        return list(self._retrievers.values())

    async def run(self, query: RetrievalQuery, options: SearchOptions) -> list[Ranked]:
        return (await self.answer(query, options)).ranked

    async def answer(self, query: RetrievalQuery, options: SearchOptions) -> Answer:
        """The ranked results, and which legs answered: one that cannot (LegUnavailable) is left out, said why."""
        wanted: list[LegName] = ["vector", "keyword"] if options.mode == "hybrid" else [options.mode]
        names = [name for name in wanted if name in self._retrievers]
        # Grouping by memory discards chunks, so the legs look deeper than the limit.
        depth = max(self._leg_depth, options.limit if options.all_chunks else 2 * options.limit)
        results = await asyncio.gather(*(_retrieve(self._retrievers[name], query, depth) for name in names))
        answered = {name: found for name, found in zip(names, results, strict=True) if isinstance(found, list)}
        unavailable = {name: str(found) for name, found in zip(names, results, strict=True) if name not in answered}
        ranked = self._fuse(answered)
        if self.expansion is not None and options.mode == "hybrid":
            ranked = await self.expansion.expand(query, ranked, depth, rrf_k=self._rrf_k, floor=self._relevance_floor)
        if options.mode == "hybrid" and (self._days_weight > 0.0 or self._when_weight > 0.0):
            question = question_time(query.text)
            weights = {"days_weight": self._days_weight, "when_weight": self._when_weight}
            ranked = favour_times(ranked, question, k=self._rrf_k, **weights)
        # Before grouping, so a memory is shown by its best *relevant* chunk and dropped only if it has none.
        if not options.include_unrelated:
            ranked = relevant_only(ranked, self._relevance_floor)
        if not options.all_chunks:
            ranked = best_per_memory(ranked)
        if options.min_score is not None:
            ranked = [r for r in ranked if r.candidate.similarity >= options.min_score]
        return Answer(ranked[: options.limit], list(answered), unavailable)

    def _fuse(self, legs: dict[LegName, list[Candidate]]) -> list[Ranked]:
        if self._fusion == "scores" and len(legs) > 1:
            weight = self._weights["vector"]
            return score_fusion(legs, vector_share=self._vector_share, k=self._rrf_k, vector_weight=weight)
        return reciprocal_rank_fusion(legs, k=self._rrf_k, weights=self._weights)


async def _retrieve(leg: Retriever, query: RetrievalQuery, depth: int) -> list[Candidate] | LegUnavailable:
    try:
        return await leg.retrieve(query, depth)
    except LegUnavailable as exc:
        return exc
