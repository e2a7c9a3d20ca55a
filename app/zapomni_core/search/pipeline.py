"""Runs the retrieval legs concurrently and merges what they return.

With one leg the merge is that leg's order; the keyword leg and reciprocal rank fusion plug in
here as another `Retriever` and another `fuse` without touching the callers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from zapomni_core.search.types import Candidate, RetrievalQuery, Retriever


class SearchPipeline:
    def __init__(self, retrievers: Sequence[Retriever], *, leg_depth: int = 50) -> None:
        if not retrievers:
            raise ValueError("a search pipeline needs at least one retriever")
        self._retrievers = list(retrievers)
        self._leg_depth = leg_depth

    async def run(self, query: RetrievalQuery) -> list[Candidate]:
        k = query.limit if len(self._retrievers) == 1 else max(query.limit, self._leg_depth)
        legs = await asyncio.gather(*(r.retrieve(query, k) for r in self._retrievers))
        return fuse(legs)[: query.limit]


def fuse(legs: Sequence[list[Candidate]]) -> list[Candidate]:
    """Merge ranked lists, first occurrence wins. (Reciprocal rank fusion replaces this with the keyword leg.)"""
    seen: set[str] = set()
    merged: list[Candidate] = []
    for leg in legs:
        for candidate in leg:
            if candidate.chunk_id not in seen:
                seen.add(candidate.chunk_id)
                merged.append(candidate)
    return merged
