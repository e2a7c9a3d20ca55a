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
import bisect
import math
import time

import numpy as np
import structlog

from zapomni_core.memories.conversation import THREAD_WINDOW
from zapomni_db import SearchReads

log = structlog.get_logger(__name__)

# bm25s "lucene" defaults (the reference the keyword leg is checked against).
K1 = 1.5
B = 0.75
# Sequence numbers read per round trip while catching up (one per memory, so pages stay whole).
_SYNC_WINDOW = 2000


class _Postings:
    """Chunk positions and term counts for one term; the live arrays are rebuilt only after a change."""

    __slots__ = ("_arrays", "_generation", "counts", "positions")

    def __init__(self) -> None:
        self.positions: list[int] = []
        self.counts: list[int] = []
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None
        self._generation = -1

    def add(self, position: int, count: int) -> None:
        self.positions.append(position)
        self.counts.append(count)
        self._arrays = None

    def arrays(self, alive: np.ndarray, generation: int) -> tuple[np.ndarray, np.ndarray]:
        """Positions and counts of the chunks still in the index (`generation` counts removals)."""
        if self._arrays is None or self._generation != generation:
            positions = np.asarray(self.positions, dtype=np.int64)
            counts = np.asarray(self.counts, dtype=np.float32)
            live = alive[positions]
            self._arrays = (positions[live], counts[live]) if not live.all() else (positions, counts)
            self._generation = generation
        return self._arrays


class Bm25Index:
    """BM25 over chunks that can be added (idempotently, by id) and removed.

    A removed chunk's slot is marked dead and left out of every statistic; once dead slots are a
    quarter of the index it is compacted.

    A chunk of a conversation thread is scored as one document with the `window` chunks before it
    in its thread (their term counts and lengths summed), so a reply is found by the words of the
    question it answers. The window is assembled at query time from each chunk's own counts:
    removing a chunk removes its words from its neighbours' documents too.
    """

    def __init__(self, window: int = THREAD_WINDOW) -> None:
        self._chunk_ids: list[str] = []
        self._positions: dict[str, int] = {}
        self._lengths = np.zeros(1024, dtype=np.float32)
        self._alive = np.zeros(1024, dtype=bool)
        self._total_length = 0.0
        self._dead = 0
        self._generation = 0
        self._postings: dict[str, _Postings] = {}
        self._window = window
        # thread -> its chunks as (order, position), sorted; position -> (thread, order).
        self._threads: dict[str, list[tuple[tuple[float, float, int], int]]] = {}
        self._thread_of: dict[int, tuple[str, tuple[float, float, int]]] = {}
        self._unlinked: set[str] = set()  # threads whose `_before` rows are out of date
        # _before[d, p]: the position of the chunk d + 1 places before p in its thread, or -1.
        self._before = np.full((window, 1024), -1, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._positions)

    @property
    def window(self) -> int:
        return self._window

    def __contains__(self, chunk_id: str) -> bool:
        return chunk_id in self._positions

    def add(
        self,
        chunk_id: str,
        terms: list[str],
        counts: list[int],
        length: int,
        thread: str | None = None,
        order: tuple[float, float, int] = (0.0, 0.0, 0),
    ) -> None:
        """Index a chunk; `thread` and `order` place it in its conversation (ChunkTerms)."""
        if chunk_id in self._positions:
            return
        position = len(self._chunk_ids)
        self._chunk_ids.append(chunk_id)
        self._positions[chunk_id] = position
        if position == len(self._lengths):
            self._lengths = np.concatenate([self._lengths, np.zeros_like(self._lengths)])
            self._alive = np.concatenate([self._alive, np.zeros_like(self._alive)])
            self._before = np.concatenate([self._before, np.full_like(self._before, -1)], axis=1)
        if thread is not None and self._window > 0:
            bisect.insort(self._threads.setdefault(thread, []), (order, position))
            self._thread_of[position] = (thread, order)
            self._unlinked.add(thread)
        self._lengths[position] = length
        self._alive[position] = True
        self._total_length += length
        for term, count in zip(terms, counts, strict=True):
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = _Postings()
            postings.add(position, count)

    def remove(self, chunk_id: str) -> None:
        position = self._positions.pop(chunk_id, None)
        if position is None:
            return
        self._alive[position] = False
        placed = self._thread_of.pop(position, None)
        if placed is not None:
            thread, order = placed
            chunks = self._threads[thread]
            del chunks[bisect.bisect_left(chunks, (order, position))]
            if not chunks:
                del self._threads[thread]
            self._unlinked.add(thread)
        self._total_length -= float(self._lengths[position])
        self._dead += 1
        self._generation += 1
        if self._dead > 1000 and self._dead * 4 > len(self._chunk_ids):
            self._compact()

    def search(self, terms: list[str], k: int) -> list[tuple[str, float]]:
        """The `k` best chunks for `terms` by BM25, best first; chunks matching no term are left out."""
        n = len(self._positions)
        if n == 0 or k <= 0:
            return []
        size = len(self._chunk_ids)
        alive = self._alive[:size]
        before = self._linked()[:, :size] if self._threads else None
        lengths = self._lengths[:size] if before is None else _windowed(self._lengths[:size], before)
        average = (self._total_length / n if before is None else float(lengths[alive].mean())) or 1.0
        scores = np.zeros(size, dtype=np.float32)
        for term in dict.fromkeys(terms):
            postings = self._postings.get(term)
            if postings is None:
                continue
            positions, tf = postings.arrays(alive, self._generation)
            if before is not None and len(positions):
                dense = np.zeros(size, dtype=np.float32)
                dense[positions] = tf
                dense = _windowed(dense, before)
                dense[~alive] = 0.0
                positions = np.flatnonzero(dense)
                tf = dense[positions]
            df = len(positions)
            if df == 0:
                continue
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

    def _linked(self) -> np.ndarray:
        """`_before`, brought up to date for the threads changed since the last search."""
        for thread in self._unlinked:
            chunks = self._threads.get(thread, [])
            for i, (_, position) in enumerate(chunks):
                for d in range(self._window):
                    self._before[d, position] = chunks[i - d - 1][1] if i - d - 1 >= 0 else -1
        self._unlinked.clear()
        return self._before

    def _compact(self) -> None:
        """Rebuild without the dead slots, keeping the live chunks' order."""
        terms_of: dict[int, tuple[list[str], list[int]]] = {}
        for term, postings in self._postings.items():
            for position, count in zip(postings.positions, postings.counts, strict=True):
                if self._alive[position]:
                    entry = terms_of.setdefault(position, ([], []))
                    entry[0].append(term)
                    entry[1].append(count)
        fresh = Bm25Index(self._window)
        for position in range(len(self._chunk_ids)):
            if self._alive[position]:
                terms, counts = terms_of.get(position, ([], []))
                thread, order = self._thread_of.get(position, (None, (0.0, 0.0, 0)))
                fresh.add(self._chunk_ids[position], terms, counts, int(self._lengths[position]), thread, order)
        vars(self).update(vars(fresh))


class SyncedBm25Index:
    """A `Bm25Index` that catches up with the database before every search.

    It reads what changed since the last sequence number it saw: chunks of memories made visible,
    chunks added by updates, chunk ids removed by updates and deletes (the change log). When the
    store's counter went backwards (the workspace was deleted and made again) or the change log
    was pruned past what it saw, it starts over from the stored term counts.
    """

    def __init__(self, search: SearchReads) -> None:
        self._reads = search
        self._index = Bm25Index()
        self._seen_seq = 0
        self._lock = asyncio.Lock()

    def __len__(self) -> int:
        return len(self._index)

    async def sync(self) -> int:
        """Apply every change stored since the last sync (by any process); return how many chunks changed."""
        async with self._lock:
            started, changed = time.perf_counter(), 0
            latest, pruned_upto = await self._reads.sequence()
            if latest < self._seen_seq or (0 < self._seen_seq < pruned_upto):
                log.info("keyword_index.rebuild", seen=self._seen_seq, latest=latest, pruned_upto=pruned_upto)
                self._index, self._seen_seq = Bm25Index(self._index.window), 0
            while self._seen_seq < latest:
                upto = min(latest, self._seen_seq + _SYNC_WINDOW)
                changes = await self._reads.changes_between(self._seen_seq, upto)
                for row in changes.added:
                    self._index.add(row.chunk_id, row.terms, row.counts, row.length, row.thread, row.order)
                for chunk_id in changes.removed:
                    self._index.remove(chunk_id)
                changed += len(changes.added) + len(changes.removed)
                self._seen_seq = upto
            if changed > 1000:
                log.info("keyword_index.synced", chunks=changed, total=len(self._index),
                         duration_ms=round((time.perf_counter() - started) * 1000, 1))  # fmt: skip
            return changed

    async def search(self, terms: list[str], k: int) -> list[tuple[str, float]]:
        await self.sync()
        return self._index.search(terms, k)


def _windowed(values: np.ndarray, before: np.ndarray) -> np.ndarray:
    """Each position's value plus those of the positions `before` it (-1: none)."""
    padded = np.append(values, np.zeros(1, dtype=values.dtype))  # index -1 reads the trailing 0
    windowed: np.ndarray = values + padded[before].sum(axis=0)  # numpy's stubs type array arithmetic as Any
    return windowed
