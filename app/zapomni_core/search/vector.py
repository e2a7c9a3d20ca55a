"""The vector leg: approximate nearest neighbours from FalkorDB's HNSW index, filtered."""

from __future__ import annotations

from zapomni_core.search.types import Candidate, LegName, LegUnavailable, RetrievalQuery
from zapomni_db import SearchReads, VectorIndexBuilding

# The index is asked for this many times `k` first; filters may discard some of them.
_OVERFETCH = 4


class VectorRetriever:
    name: LegName = "vector"

    def __init__(self, reads: SearchReads, *, exact_within_ms: int | None = None) -> None:
        """`exact_within_ms`: while the index is built after a load, every stored vector is compared with the
        query; beyond this long the leg gives up and the search answers from the other legs (decision 0045)."""
        self._reads = reads
        self._exact_within_ms = exact_within_ms

    async def retrieve(self, query: RetrievalQuery, k: int) -> list[Candidate]:
        """Widen the index query until `k` filtered hits are found or the whole index was searched."""
        fetch = k * _OVERFETCH if query.filters.narrows else k
        ceiling: int | None = None
        while True:
            try:
                hits = await self._reads.vector_search(
                    query.vector, k=fetch, limit=k, filters=query.filters, exact_within_ms=self._exact_within_ms
                )
            except VectorIndexBuilding as exc:
                raise LegUnavailable(str(exc)) from exc
            if len(hits) >= k:
                break
            if ceiling is None:
                ceiling = await self._reads.indexed_chunks()
            if fetch >= ceiling:
                break
            fetch = min(fetch * _OVERFETCH, ceiling)
        return [Candidate.from_hit(h) for h in hits]
