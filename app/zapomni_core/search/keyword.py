"""The keyword leg: FalkorDB's full-text index (stemmed, stopwords removed), filtered.

It finds what embeddings blur: identifiers, error codes, acronyms, rare names.
See docs/decisions/0005-keyword-index.md for why this index and not an in-process BM25.
"""

from __future__ import annotations

from zapomni_core.search.types import Candidate, LegName, RetrievalQuery
from zapomni_db import MemoryRepository, fulltext_query


class KeywordRetriever:
    name: LegName = "keyword"

    def __init__(self, repository: MemoryRepository) -> None:
        self._repository = repository

    async def retrieve(self, query: RetrievalQuery, k: int) -> list[Candidate]:
        text_query = fulltext_query(query.text)
        if text_query is None:  # only stopwords or punctuation: nothing to match on
            return []
        hits = await self._repository.keyword_search(text_query, query.vector, limit=k, filters=query.filters)
        return [Candidate.from_hit(h) for h in hits]
