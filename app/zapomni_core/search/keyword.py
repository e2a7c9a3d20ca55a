"""The keyword leg: BM25 over chunk terms, with the filters applied in the database.

It finds what embeddings blur: identifiers, error codes, acronyms, rare names. The index is tantivy's,
derived from the database and caught up before every search (`keyword_index.py`, decision 0044).
"""

from __future__ import annotations

from functools import lru_cache

from zapomni_core.search.analyzer import Analyzer
from zapomni_core.search.keyword_index import KeywordHit, KeywordIndex
from zapomni_core.search.types import Candidate, LegName, RetrievalQuery
from zapomni_db import SearchReads

# BM25 candidates fetched per wanted result before filters; widened when filters discard many.
_OVERFETCH = 4


class KeywordRetriever:
    name: LegName = "keyword"

    def __init__(self, reads: SearchReads, index: KeywordIndex, analyzer: Analyzer) -> None:
        self._reads = reads
        self._index = index
        self._analyzer = analyzer
        self._terms = lru_cache(maxsize=256)(lambda text: frozenset(analyzer.query_terms(text)))

    @property
    def caught_up_to(self) -> int:
        """The last change of the store its index has read: a query that allowed a lag finds nothing after it."""
        return self._index.caught_up_to

    def terms(self, text: str) -> frozenset[str]:
        """The words of `text` as the index holds them (a stream's recent turns are read once per add after them)."""
        return self._terms(text)

    async def ranked(self, text: str, k: int, *, stale_ok_s: float = 0.0) -> list[KeywordHit]:
        """The `k` chunks BM25 ranks best for `text`, not read from the database: for a caller that reads them with
        other chunks in one query (update detection). `stale_ok_s` as in `RetrievalQuery`."""
        terms = self._analyzer.query_terms(text)
        return await self._index.search(terms, k, stale_ok_s=stale_ok_s) if terms else []

    async def retrieve(self, query: RetrievalQuery, k: int) -> list[Candidate]:
        terms = self._analyzer.query_terms(query.text)
        if not terms:  # only stopwords or punctuation: nothing to match on
            return []
        # Every indexed chunk is fetchable, so only filters can make the database drop candidates.
        fetch = k * _OVERFETCH if query.filters.narrows else k
        while True:
            ranked = await self._index.search(terms, fetch, stale_ok_s=query.stale_ok_s)
            scores = {hit.chunk_id: hit.score for hit in ranked}
            hits = await self._reads.fetch_chunks(
                list(scores), query.vector, filters=query.filters, nodes=[hit.node for hit in ranked]
            )
            if len(hits) >= k or len(ranked) < fetch:
                return [Candidate.from_hit(hit, leg_score=scores[hit.chunk_id]) for hit in hits[:k]]
            fetch *= _OVERFETCH
