"""The vector leg: approximate nearest neighbours from FalkorDB's HNSW index, filtered."""

from __future__ import annotations

from zapomni_core.search.types import Candidate, LegName, RetrievalQuery
from zapomni_db import SearchReads

# The index is asked for this many times `k` first; filters may discard some of them.
_OVERFETCH = 4


class VectorRetriever:
    name: LegName = "vector"

    def __init__(self, reads: SearchReads) -> None:
        self._reads = reads

    async def retrieve(self, query: RetrievalQuery, k: int) -> list[Candidate]:
        """Widen the index query until `k` filtered hits are found or the whole index was searched."""
        fetch = k * _OVERFETCH if query.filters.narrows else k
        ceiling: int | None = None
        while True:
            hits = await self._reads.vector_search(query.vector, k=fetch, limit=k, filters=query.filters)
            if len(hits) >= k:
                break
            if ceiling is None:
                ceiling = await self._reads.indexed_chunks()
            if fetch >= ceiling:
                break
            fetch = min(fetch * _OVERFETCH, ceiling)
        return [Candidate.from_hit(h) for h in hits]
