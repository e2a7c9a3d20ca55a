"""What a retrieval leg takes and returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, get_args

from zapomni_db import ChunkHit, SearchFilter

LegName = Literal["vector", "keyword", "graph"]  # graph: the expansion list (graph/expansion.py)
# hybrid: both legs fused (search/fusion.py); the one list of modes that the tools, the CLI and the pipeline accept.
SearchMode = Literal["hybrid", "vector", "keyword"]
SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)


@dataclass(frozen=True)
class RetrievalQuery:
    text: str
    vector: list[float]
    filters: SearchFilter
    # How far behind the store (seconds) a leg's own index may be: such a query answers from what the index has and
    # catches it up in the background when it is further behind. A user's search sees every write.
    stale_ok_s: float = 0.0


@dataclass(frozen=True)
class Candidate:
    """A chunk a leg found, with its similarity to the query and the score its leg ranked it by."""

    hit: ChunkHit
    similarity: float  # cosine similarity to the query, clamped to [0, 1]
    leg_score: float = 0.0  # cosine similarity, or BM25

    @property
    def chunk_id(self) -> str:
        return self.hit.chunk_id

    @property
    def memory_id(self) -> str:
        return self.hit.memory.id

    @classmethod
    def from_hit(cls, hit: ChunkHit, leg_score: float | None = None) -> Candidate:
        similarity = similarity_from_distance(hit.distance)
        return cls(hit=hit, similarity=similarity, leg_score=similarity if leg_score is None else leg_score)


@dataclass(frozen=True)
class Ranked:
    candidate: Candidate
    rank_score: float  # the fused (reciprocal rank) score
    legs: list[LegName] = field(default_factory=list)  # which legs found it


class LegUnavailable(Exception):
    """A leg that cannot answer now (its index is being made, or cannot be written); the search goes on with the
    other legs and its reply says why this one did not answer."""


class Retriever(Protocol):
    name: LegName

    async def retrieve(self, query: RetrievalQuery, k: int) -> list[Candidate]:
        """Up to `k` candidates that pass the query's filters, best first; LegUnavailable when it cannot answer."""


def similarity_from_distance(distance: float) -> float:
    """FalkorDB reports cosine distance (1 - cos, in [0, 2]); users get cosine similarity in [0, 1]."""
    return min(1.0, max(0.0, 1.0 - distance))


class Expansion(Protocol):
    """A list fused into hybrid results after the legs (the knowledge graph's: zapomni_core.graph.expansion)."""

    async def expand(
        self, query: RetrievalQuery, ranked: list[Ranked], k: int, *, rrf_k: int, floor: float
    ) -> list[Ranked]:
        """`ranked` (the fused legs, before the relevance rule) with this list fused in."""
        ...
