"""An incremental BM25 index over chunks, kept in memory and fed from the database.

Why not FalkorDB's full-text index or bm25s: docs/decisions/0005-keyword-index.md. In short,
FalkorDB's full-text scores rank poorly (nDCG@10 0.08 on SciFact against 0.69 for BM25), and
bm25s must rebuild its whole index to add one document (8 s at 100K documents).

Each chunk's terms and counts are computed once, when it is stored, and saved on the chunk; a
database-wide sequence number marks the order memories became visible. Before answering, the
index reads the chunks with a higher sequence number than it has seen, so every process sharing
the database sees every other's writes, and a restart rebuilds the index from the stored counts
without re-analysing any text. Scoring touches only the postings of the query's terms.
"""

from __future__ import annotations

import asyncio
import math
import time

import numpy as np
import structlog

from zapomni_db import MemoryRepository

log = structlog.get_logger(__name__)

# bm25s "lucene" defaults (the reference the keyword leg is checked against).
K1 = 1.5
B = 0.75
# Sequence numbers read per round trip while catching up (one per memory, so pages stay whole).
_SYNC_WINDOW = 2000


class _Postings:
    """Chunk positions and term counts for one term; arrays are rebuilt only after it grows."""

    __slots__ = ("_arrays", "counts", "positions")

    def __init__(self) -> None:
        self.positions: list[int] = []
        self.counts: list[int] = []
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None

    def add(self, position: int, count: int) -> None:
        self.positions.append(position)
        self.counts.append(count)
        self._arrays = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._arrays is None:
            self._arrays = (np.asarray(self.positions, dtype=np.int64), np.asarray(self.counts, dtype=np.float32))
        return self._arrays


class Bm25Index:
    def __init__(self) -> None:
        self._chunk_ids: list[str] = []
        self._lengths = np.zeros(1024, dtype=np.float32)
        self._total_length = 0.0
        self._postings: dict[str, _Postings] = {}

    def __len__(self) -> int:
        return len(self._chunk_ids)

    def add(self, chunk_id: str, terms: list[str], counts: list[int], length: int) -> None:
        position = len(self._chunk_ids)
        self._chunk_ids.append(chunk_id)
        if position == len(self._lengths):
            self._lengths = np.concatenate([self._lengths, np.zeros_like(self._lengths)])
        self._lengths[position] = length
        self._total_length += length
        for term, count in zip(terms, counts, strict=True):
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = _Postings()
            postings.add(position, count)

    def search(self, terms: list[str], k: int) -> list[tuple[str, float]]:
        """The `k` best chunks for `terms` by BM25, best first; chunks matching no term are left out."""
        n = len(self._chunk_ids)
        if n == 0 or k <= 0:
            return []
        lengths = self._lengths[:n]
        average = self._total_length / n or 1.0
        scores = np.zeros(n, dtype=np.float32)
        for term in dict.fromkeys(terms):
            postings = self._postings.get(term)
            if postings is None:
                continue
            positions, tf = postings.arrays()
            df = len(positions)
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            norm = K1 * (1.0 - B + B * lengths[positions] / average)
            # Lucene's form: the constant (k1 + 1) of the textbook numerator is left out.
            scores[positions] += idf * tf / (tf + norm)
        matched = np.flatnonzero(scores)
        if len(matched) > k:
            matched = matched[np.argpartition(-scores[matched], k - 1)[:k]]
        # Ties (same score) go to the chunk stored first: a stable, deterministic order.
        best = matched[np.lexsort((matched, -scores[matched]))]
        return [(self._chunk_ids[i], float(scores[i])) for i in best]


class SyncedBm25Index:
    """A `Bm25Index` that catches up with the database before every search."""

    def __init__(self, repository: MemoryRepository) -> None:
        self._repository = repository
        self._index = Bm25Index()
        self._seen_seq = 0
        self._lock = asyncio.Lock()

    def __len__(self) -> int:
        return len(self._index)

    async def sync(self) -> int:
        """Add every chunk stored since the last sync (by any process); return how many."""
        async with self._lock:
            started, added = time.perf_counter(), 0
            latest = await self._repository.chunk_sequence()
            while self._seen_seq < latest:
                upto = min(latest, self._seen_seq + _SYNC_WINDOW)
                for row in await self._repository.chunk_terms_between(self._seen_seq, upto):
                    self._index.add(row.chunk_id, row.terms, row.counts, row.length)
                    added += 1
                self._seen_seq = upto
            if added > 1000:
                log.info("keyword_index.synced", chunks=added, total=len(self._index),
                         duration_ms=round((time.perf_counter() - started) * 1000, 1))  # fmt: skip
            return added

    async def search(self, terms: list[str], k: int) -> list[tuple[str, float]]:
        await self.sync()
        return self._index.search(terms, k)
