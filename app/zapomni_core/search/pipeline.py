"""Runs the retrieval legs concurrently, fuses them with RRF, groups, filters and cuts to `limit`."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from zapomni_core.search.fusion import best_per_memory, reciprocal_rank_fusion
from zapomni_core.search.types import LegName, Ranked, RetrievalQuery, Retriever

Mode = Literal["hybrid", "vector", "keyword"]


@dataclass(frozen=True)
class SearchOptions:
    limit: int
    mode: Mode = "hybrid"
    min_score: float | None = None  # on cosine similarity
    all_chunks: bool = False


class SearchPipeline:
    def __init__(self, retrievers: Sequence[Retriever], *, rrf_k: int = 60, leg_depth: int = 50) -> None:
        self._retrievers = {r.name: r for r in retrievers}
        self._rrf_k = rrf_k
        self._leg_depth = leg_depth

    async def run(self, query: RetrievalQuery, options: SearchOptions) -> list[Ranked]:
        wanted: list[LegName] = ["vector", "keyword"] if options.mode == "hybrid" else [options.mode]
        names = [name for name in wanted if name in self._retrievers]
        legs = [self._retrievers[name] for name in names]
        # Grouping by memory discards chunks, so the legs look deeper than the limit.
        depth = max(self._leg_depth, options.limit if options.all_chunks else 2 * options.limit)
        results = await asyncio.gather(*(leg.retrieve(query, depth) for leg in legs))
        ranked = reciprocal_rank_fusion(dict(zip(names, results, strict=True)), k=self._rrf_k)
        if not options.all_chunks:
            ranked = best_per_memory(ranked)
        if options.min_score is not None:
            ranked = [r for r in ranked if r.candidate.similarity >= options.min_score]
        return ranked[: options.limit]
