"""What a retrieval leg takes and returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from zapomni_db import SearchFilter


@dataclass(frozen=True)
class RetrievalQuery:
    text: str
    vector: list[float]
    filters: SearchFilter
    limit: int


@dataclass(frozen=True)
class Candidate:
    memory_id: str
    chunk_id: str
    text: str
    tags: list[str]
    source: str | None
    created_at: float
    date: str | None
    similarity: float | None  # cosine similarity in [0, 1] when the vector leg scored it


class Retriever(Protocol):
    name: str

    async def retrieve(self, query: RetrievalQuery, k: int) -> list[Candidate]:
        """Up to `k` candidates that pass the query's filters, best first."""
