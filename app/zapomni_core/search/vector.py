"""The vector leg: approximate nearest neighbours from FalkorDB's HNSW index, filtered."""

from __future__ import annotations

from zapomni_core.search.types import Candidate, RetrievalQuery
from zapomni_db import MemoryRepository, VectorHit

# The index is asked for this many times `k` first; filters may discard some of them.
_OVERFETCH = 4


def similarity_from_distance(distance: float) -> float:
    """FalkorDB reports cosine distance (1 - cos, in [0, 2]); users get cosine similarity clamped to [0, 1]."""
    return min(1.0, max(0.0, 1.0 - distance))


class VectorRetriever:
    name = "vector"

    def __init__(self, repository: MemoryRepository) -> None:
        self._repository = repository

    async def retrieve(self, query: RetrievalQuery, k: int) -> list[Candidate]:
        """Widen the index query until `k` filtered hits are found or the whole index was searched."""
        fetch = max(k * _OVERFETCH, 50)
        ceiling: int | None = None
        while True:
            hits = await self._repository.vector_search(query.vector, k=fetch, limit=k, filters=query.filters)
            if len(hits) >= k:
                break
            if ceiling is None:
                ceiling = await self._repository.indexed_chunks()
            if fetch >= ceiling:
                break
            fetch = min(fetch * _OVERFETCH, ceiling)
        return [_candidate(h) for h in hits]


def _candidate(hit: VectorHit) -> Candidate:
    return Candidate(
        memory_id=hit.memory_id,
        chunk_id=hit.chunk_id,
        text=hit.text,
        tags=hit.tags,
        source=hit.source,
        created_at=hit.created_at,
        date=hit.date,
        similarity=similarity_from_distance(hit.distance),
    )
