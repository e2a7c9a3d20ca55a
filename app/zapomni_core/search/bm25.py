"""An incremental BM25 index over chunks, kept in memory and fed from the database.

Why not FalkorDB's full-text index or bm25s: docs/decisions/0005-keyword-index.md. In short,
FalkorDB's full-text scores rank poorly (nDCG@10 0.08 on SciFact against 0.69 for BM25), and
bm25s must rebuild its whole index to add one document (8 s at 100K documents).

A database-wide sequence number marks the order memories became visible. Before answering, the
index reads the chunks with a higher sequence number than it has seen and counts their terms, so every
process sharing the database sees every other's writes; a server starts from the index saved beside the
embedded database (`keyword_file`). Scoring touches only the postings of the query's terms.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import math
import time
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Protocol

import numpy as np
import structlog

from zapomni_core.content.conversation import THREAD_WINDOW, indexed_text
from zapomni_core.search.analyzer import Analyzer, TermCounts
from zapomni_core.search.chunk_ids import ChunkIds
from zapomni_db import IndexedChunk, SearchReads

log = structlog.get_logger(__name__)

# bm25s "lucene" defaults (the reference the keyword leg is checked against).
K1 = 1.5
B = 0.75
# Sequence numbers read per round trip while catching up (one per memory, so pages stay whole).
_SYNC_WINDOW = 2000
# A running server saves its keyword index at most this often (seconds): a save at a million chunks holds searches
# for a second or more while the index is frozen, and deletes for as long as the file is written (decision 0037).
SAVE_INTERVAL_S = 300.0
# Chunks whose terms a catch-up counts in the event loop; more go to a worker thread (25K short chunks/s).
_COUNT_INLINE = 200


# Postings added since the last freeze that trigger the next one (at least; or half the frozen ones): few
# freezes while a large store is read, each a stable sort of what is there.
_FREEZE_AT = 2_000_000
# Live postings arrays kept for the terms searched since the last change (bounded: a large index's common
# terms have arrays of hundreds of thousands of entries).
_CACHE_TERMS = 4096
# Scores sampled to find a floor under the best k (`_floor`).
_FLOOR_SAMPLE = 16_384
# A term's count in one chunk is kept in a byte (a million chunks' postings take 86 MB less, decision 0032). A higher
# count needs a chunk of more than 255 words, past the default chunk size (256 wordpieces with the ONNX model, 512
# with Ollama); in a chunk of average length BM25's tf / (tf + norm) at 255 is within 0.6 % of any higher count's.
MAX_COUNT = 255
_EMPTY_POSITIONS = np.zeros(0, dtype=np.int32)
_EMPTY_COUNTS = np.zeros(0, dtype=np.uint8)


@dataclass(frozen=True)
class Bm25State:
    """A `Bm25Index` without removed chunks, as arrays: what is saved beside the database and read back.

    The postings of term `t` (`terms[t]`) are `positions[offsets[t]:offsets[t + 1]]` with their
    `counts`; positions index `chunk_ids` and `lengths`; `id_order` is the positions that sort `chunk_ids`.
    `threads` are the positions in a thread with the thread's name and the chunk's order in it (IndexedChunk).
    """

    window: int
    chunk_ids: np.ndarray  # bytes (numpy S), one per chunk
    id_order: np.ndarray  # intp (a searchsorted sorter of another type is copied on every lookup)
    lengths: np.ndarray  # float32, one per chunk
    terms: list[str]
    offsets: np.ndarray  # int64, len(terms) + 1
    positions: np.ndarray  # int32
    counts: np.ndarray  # uint8, at most MAX_COUNT
    threads: list[tuple[int, str, tuple[float, float, int]]]


class Bm25Index:
    """BM25 over chunks that can be added (idempotently, by id) and removed.

    Postings are kept compact: frozen into three arrays term by term (CSR), plus the lists of what
    was added since, merged in by the next freeze. A removed chunk's slot is marked dead and left
    out of every statistic; once dead slots are a quarter of the index it is compacted.

    A chunk of a conversation thread is scored as one document with the `window` chunks before it
    in its thread (their term counts and lengths summed), so a reply is found by the words of the
    question it answers. The window is assembled at query time from each chunk's own counts:
    removing a chunk removes its words from its neighbours' documents too.
    """

    def __init__(self, window: int = THREAD_WINDOW) -> None:
        self._ids = ChunkIds()
        self._live = 0
        self._lengths = np.zeros(1024, dtype=np.float32)
        self._alive = np.zeros(1024, dtype=bool)
        self._total_length = 0.0
        self._dead = 0
        self._generation = 0  # counts what invalidates cached postings: removals, freezes, compactions
        self._vocabulary: dict[str, int] = {}  # term -> its row in the frozen postings
        self._terms: list[str] = []
        self._offsets = np.zeros(1, dtype=np.int64)
        self._frozen_positions = _EMPTY_POSITIONS
        self._frozen_counts = _EMPTY_COUNTS
        self._recent: dict[str, tuple[list[int], list[int]]] = {}  # term -> positions, counts since the freeze
        self._recent_size = 0
        self._cache: dict[str, tuple[int, int, np.ndarray, np.ndarray]] = {}
        self._window = window
        # thread -> its chunks as (order, position), sorted; position -> (thread, order).
        self._threads: dict[str, list[tuple[tuple[float, float, int], int]]] = {}
        self._thread_of: dict[int, tuple[str, tuple[float, float, int]]] = {}
        self._unlinked: set[str] = set()  # threads whose `_before` rows are out of date
        # _before[d, p]: the position of the chunk d + 1 places before p in its thread, or -1.
        self._before = np.full((window, 1024), -1, dtype=np.int32)

    def __len__(self) -> int:
        return self._live

    @property
    def window(self) -> int:
        return self._window

    def __contains__(self, chunk_id: str) -> bool:
        return self._ids.find(chunk_id, self._alive) is not None

    def add(
        self,
        chunk_id: str,
        terms: list[str],
        counts: list[int],
        length: int,
        thread: str | None = None,
        order: tuple[float, float, int] = (0.0, 0.0, 0),
    ) -> None:
        """Index a chunk; `thread` and `order` place it in its conversation (IndexedChunk)."""
        if chunk_id in self:
            return
        position = self._ids.append(chunk_id)
        self._live += 1
        if position == len(self._lengths):
            self._grow(2 * position)
        if thread is not None and self._window > 0:
            bisect.insort(self._threads.setdefault(thread, []), (order, position))
            self._thread_of[position] = (thread, order)
            self._unlinked.add(thread)
        self._lengths[position] = length
        self._alive[position] = True
        self._total_length += length
        for term, count in zip(terms, counts, strict=True):
            recent = self._recent.get(term)
            if recent is None:
                recent = self._recent[term] = ([], [])
            recent[0].append(position)
            recent[1].append(min(count, MAX_COUNT))
        self._recent_size += len(terms)
        if self._recent_size > max(_FREEZE_AT, len(self._frozen_positions) // 2):
            self._freeze()

    def remove(self, chunk_id: str) -> None:
        position = self._ids.find(chunk_id, self._alive)
        if position is None:
            return
        self._alive[position] = False
        self._live -= 1
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
        if self._dead > 1000 and self._dead * 4 > len(self._ids):
            self._compact()

    def search(self, terms: list[str], k: int) -> list[tuple[str, float]]:
        """The `k` best chunks for `terms` by BM25, best first; chunks matching no term are left out."""
        n = self._live
        if n == 0 or k <= 0:
            return []
        size = len(self._ids)
        alive = self._alive[:size]
        before = self._linked()[:, :size] if self._threads else None
        lengths = self._lengths[:size] if before is None else _windowed(self._lengths[:size], before)
        average = (self._total_length / n if before is None else float(lengths[alive].mean())) or 1.0
        scores = np.zeros(size, dtype=np.float32)
        for term in dict.fromkeys(terms):
            positions, tf = self._postings(term)
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
        matched = np.flatnonzero(scores >= _floor(scores, k))
        if len(matched) > k:  # keep everything tied with the k-th best: argpartition would pick among ties at random
            kth = np.partition(scores[matched], len(matched) - k)[len(matched) - k]
            matched = matched[scores[matched] >= kth]
        # Ties (same score) go to the chunk stored first: a stable, deterministic order.
        best = matched[np.lexsort((matched, -scores[matched]))][:k]
        return [(self._ids.at(int(i)), float(scores[i])) for i in best]

    def state(self) -> Bm25State:
        """This index as arrays, removed chunks left out (compacted first): nothing deleted is in it."""
        if self._dead:
            self._compact()
        self._freeze()
        size = len(self._ids)
        threads = [(position, thread, order) for position, (thread, order) in self._thread_of.items()]
        chunk_ids, id_order = self._ids.arrays()
        return Bm25State(
            window=self._window,
            chunk_ids=chunk_ids,
            id_order=id_order,
            lengths=self._lengths[:size].copy(),
            terms=list(self._terms),
            offsets=self._offsets,
            positions=self._frozen_positions,
            counts=self._frozen_counts,
            threads=threads,
        )

    @classmethod
    def from_state(cls, state: Bm25State) -> Bm25Index:
        index = cls(state.window)
        size = len(state.chunk_ids)
        index._ids = ChunkIds(state.chunk_ids, state.id_order)
        index._live = size
        index._grow(size)
        index._lengths[:size] = state.lengths
        index._alive[:size] = True
        index._total_length = float(state.lengths.sum(dtype=np.float64))
        index._terms = list(state.terms)
        index._vocabulary = {term: i for i, term in enumerate(index._terms)}
        index._offsets, index._frozen_positions, index._frozen_counts = state.offsets, state.positions, state.counts
        for position, thread, order in state.threads:
            if index._window > 0:
                index._threads.setdefault(thread, []).append((order, position))
                index._thread_of[position] = (thread, order)
        for chunks in index._threads.values():
            chunks.sort()
        index._unlinked = set(index._threads)
        return index

    def _postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Positions and counts of the chunks still in the index that contain `term`."""
        recent = self._recent.get(term)
        term_id = self._vocabulary.get(term)
        if term_id is None:
            positions, counts = _EMPTY_POSITIONS, _EMPTY_COUNTS
        else:
            start, end = self._offsets[term_id], self._offsets[term_id + 1]
            positions, counts = self._frozen_positions[start:end], self._frozen_counts[start:end]
        if not recent and not self._dead:
            return positions, counts  # views of the frozen arrays: nothing to add or leave out
        added = len(recent[0]) if recent else 0
        cached = self._cache.get(term)
        if cached is not None and cached[0] == self._generation and cached[1] == added:
            return cached[2], cached[3]
        if recent:
            positions = np.concatenate([positions, np.asarray(recent[0], dtype=np.int32)])
            counts = np.concatenate([counts, np.asarray(recent[1], dtype=np.uint8)])
        if self._dead:
            live = self._alive[positions]
            positions, counts = positions[live], counts[live]
        if len(self._cache) >= _CACHE_TERMS:
            self._cache.clear()
        self._cache[term] = (self._generation, added, positions, counts)
        return positions, counts

    def _freeze(self) -> None:
        """Merge the postings and ids added since the last freeze into the frozen arrays."""
        self._ids.freeze()
        if not self._recent:
            return
        recent = list(self._recent.items())
        for term, _ in recent:
            if term not in self._vocabulary:
                self._vocabulary[term] = len(self._terms)
                self._terms.append(term)
        ids = np.fromiter((self._vocabulary[t] for t, _ in recent), dtype=np.int32, count=len(recent))
        sizes = np.fromiter((len(entry[0]) for _, entry in recent), dtype=np.int64, count=len(recent))
        total = int(sizes.sum())
        recent_terms = np.repeat(ids, sizes)
        recent_positions = np.fromiter(chain.from_iterable(e[0] for _, e in recent), dtype=np.int32, count=total)
        recent_counts = np.fromiter(chain.from_iterable(e[1] for _, e in recent), dtype=np.uint8, count=total)
        # Each recent posting goes at the end of its term's frozen ones (older chunks, lower positions first): a
        # merge, linear in the postings, where sorting all of them took 1.8 s at a million chunks (decision 0037).
        order = np.argsort(recent_terms, kind="stable")
        ends = np.append(self._offsets[1:], np.full(len(self._terms) + 1 - len(self._offsets), self._offsets[-1]))
        at = ends[recent_terms[order]]
        self._frozen_positions = np.insert(self._frozen_positions, at, recent_positions[order])
        self._frozen_counts = np.insert(self._frozen_counts, at, recent_counts[order])
        sizes_by_term = np.bincount(recent_terms, minlength=len(self._terms))
        sizes_by_term[: len(self._offsets) - 1] += np.diff(self._offsets)
        self._offsets = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(sizes_by_term, dtype=np.int64)])
        self._recent.clear()
        self._recent_size = 0
        self._cache.clear()
        self._generation += 1

    def _grow(self, capacity: int) -> None:
        extra = max(capacity, 1024) - len(self._lengths)
        if extra > 0:
            self._lengths = np.concatenate([self._lengths, np.zeros(extra, dtype=np.float32)])
            self._alive = np.concatenate([self._alive, np.zeros(extra, dtype=bool)])
            self._before = np.concatenate([self._before, np.full((self._window, extra), -1, dtype=np.int32)], axis=1)

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
        """Drop the dead slots, keeping the live chunks' order (positions are renumbered)."""
        self._freeze()
        size = len(self._ids)
        keep = self._alive[:size].copy()
        renumber = np.cumsum(keep) - 1
        live = keep[self._frozen_positions]
        terms = np.repeat(np.arange(len(self._offsets) - 1, dtype=np.int32), np.diff(self._offsets))[live]
        self._frozen_positions = renumber[self._frozen_positions[live]].astype(np.int32)
        self._frozen_counts = self._frozen_counts[live]
        # Terms only removed chunks had go too: the vocabulary is what a saved index shows of the text.
        used = np.bincount(terms, minlength=len(self._terms)) > 0
        self._terms = [term for term, kept in zip(self._terms, used.tolist(), strict=True) if kept]
        self._vocabulary = {term: i for i, term in enumerate(self._terms)}
        self._offsets = _offsets((np.cumsum(used) - 1)[terms].astype(np.int32), len(self._terms))
        lengths = self._lengths[:size][keep]
        self._ids.keep(keep)
        self._lengths = np.zeros(max(1024, len(lengths)), dtype=np.float32)
        self._lengths[: len(lengths)] = lengths
        self._alive = np.zeros(len(self._lengths), dtype=bool)
        self._alive[: len(lengths)] = True
        self._before = np.full((self._window, len(self._lengths)), -1, dtype=np.int32)
        self._thread_of = {int(renumber[p]): placed for p, placed in self._thread_of.items()}
        self._threads = {
            thread: [(order, int(renumber[p])) for order, p in chunks] for thread, chunks in self._threads.items()
        }
        self._unlinked = set(self._threads)
        self._dead = 0
        self._cache.clear()
        self._generation += 1


def _floor(scores: np.ndarray, k: int) -> float:
    """A score the `k` best are all at or above (the smallest positive one when fewer than `k` matched).

    Listing every matching chunk of a million (`np.flatnonzero(scores)`) and partitioning them cost most of a
    keyword search there (decision 0028). The k-th best of an evenly spaced sample is such a floor: the sample
    has k scores at or above it, so the whole index does too. Whatever is tied with the k-th best stays above it.
    """
    sample = scores[:: max(1, len(scores) // _FLOOR_SAMPLE)]
    if len(sample) <= k:
        return float(np.finfo(np.float32).tiny)
    floor = float(np.partition(sample, len(sample) - k)[len(sample) - k])
    return floor if floor > 0.0 else float(np.finfo(np.float32).tiny)


def _offsets(terms: np.ndarray, vocabulary: int) -> np.ndarray:
    """CSR offsets of postings sorted by term id: term t's are [offsets[t], offsets[t + 1])."""
    offsets = np.zeros(vocabulary + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms, minlength=vocabulary), out=offsets[1:])
    return offsets


@dataclass(frozen=True)
class SavedIndex:
    state: Bm25State
    seq: int  # every change up to this sequence number is in `state`


class SavedFile(Protocol):
    """Where an index is saved between runs (zapomni_core.search.keyword_file: one graph's file)."""

    @property
    def path(self) -> Path: ...

    @property
    def save_after(self) -> int: ...

    async def load(self, *, window: int, latest: int, pruned_upto: int) -> SavedIndex | None: ...

    def saving(self) -> AbstractAsyncContextManager[None]: ...

    async def write(self, state: Bm25State, seq: int) -> bool: ...

    async def discard(self) -> None: ...


class SyncedBm25Index:
    """A `Bm25Index` that catches up with the database before every search.

    It reads what changed since the last sequence number it saw: chunks of memories made visible,
    chunks added by updates, chunk ids removed by updates and deletes (the change log). When the
    store's counter went backwards (the workspace was deleted and made again) or the change log
    was pruned past what it saw, it starts over from every stored chunk. It counts the terms of what it
    reads itself (the store keeps texts, not term counts: decision 0031).

    With a `saved` file (the embedded database), the first catch-up starts from the index saved there
    when the store proves it is its past (`keyword_file`); `save` writes it back, and a catch-up that leaves
    the file `save_after` chunks behind (or a large index without one) saves it in the background, at most
    once per `SAVE_INTERVAL_S` (decision 0037).
    """

    def __init__(self, search: SearchReads, saved: SavedFile | None = None) -> None:
        self._reads = search
        self._saved = saved
        self._index = Bm25Index()
        self._analyzer = Analyzer()  # its own: counting may run in a worker thread, and a stemmer is not thread-safe
        self._seen_seq = 0
        self._lock = asyncio.Lock()
        self._tried_file = saved is None
        self._file_seq: int | None = None  # what the file holds as far as this process knows (read or written)
        self._unsaved = 0  # chunks added or removed since the file
        self._saved_at: float | None = None  # when this process last saved (monotonic)
        self._saving: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._index)

    async def sync(self) -> int:
        """Apply every change stored since the last sync (by any process); return how many chunks changed."""
        async with self._lock:
            return await self._sync()

    async def _sync(self, *, saving: bool = False) -> int:
        started, changed, removed = time.perf_counter(), 0, 0
        latest, pruned_upto = await self._reads.sequence()
        if not self._tried_file:
            self._tried_file = True
            await self._load(latest, pruned_upto)
        if latest < self._seen_seq or (0 < self._seen_seq < pruned_upto):
            log.info("keyword_index.rebuild", seen=self._seen_seq, latest=latest, pruned_upto=pruned_upto)
            self._index, self._seen_seq = Bm25Index(self._index.window), 0
        while self._seen_seq < latest:
            upto = min(latest, self._seen_seq + _SYNC_WINDOW)
            changes = await self._reads.changes_between(self._seen_seq, upto)
            many = len(changes.added) > _COUNT_INLINE
            counted = await asyncio.to_thread(self._count, changes.added) if many else self._count(changes.added)
            for row, counts in zip(changes.added, counted, strict=True):
                self._index.add(row.chunk_id, counts.terms, counts.counts, counts.length, row.thread, row.order)
            for chunk_id in changes.removed:
                self._index.remove(chunk_id)
            changed += len(changes.added) + len(changes.removed)
            removed += len(changes.removed)
            self._seen_seq = upto
        self._unsaved += changed
        if removed and not saving and self._saved is not None:
            self._file_seq = None
            await self._saved.discard()  # it may hold what was removed (read at start, before the removal)
        if changed > 1000:
            log.info("keyword_index.synced", chunks=changed, total=len(self._index),
                     duration_ms=round((time.perf_counter() - started) * 1000, 1))  # fmt: skip
        if not saving and self._save_due():
            self._saving = asyncio.create_task(self._save_in_background(), name="zapomni-keyword-index-save")
        return changed

    def _count(self, chunks: list[IndexedChunk]) -> list[TermCounts]:
        return [self._analyzer.count(indexed_text(chunk.context, chunk.text)) for chunk in chunks]

    async def _load(self, latest: int, pruned_upto: int) -> None:
        assert self._saved is not None
        started = time.perf_counter()
        found = await self._saved.load(window=self._index.window, latest=latest, pruned_upto=pruned_upto)
        if found is None:
            return
        try:
            index = await asyncio.to_thread(Bm25Index.from_state, found.state)
        except ValueError as exc:
            log.warning("keyword_index.file_unreadable", path=str(self._saved.path), error=str(exc))
            return
        self._index, self._seen_seq, self._file_seq = index, found.seq, found.seq
        log.info("keyword_index.loaded", chunks=len(index), seq=found.seq, latest=latest,
                 duration_ms=round((time.perf_counter() - started) * 1000, 1))  # fmt: skip

    def _save_due(self) -> bool:
        if self._saved is None or self._saving is not None:
            return False
        if self._saved_at is not None and time.monotonic() - self._saved_at < SAVE_INTERVAL_S:
            return False
        behind = len(self._index) if self._file_seq is None else self._unsaved
        return behind >= self._saved.save_after

    async def _save_in_background(self) -> None:
        try:
            await self.save()
        except Exception as exc:  # the file stays as it was (or absent): the next start catches up or rebuilds
            log.warning("keyword_index.save_failed", error=str(exc))
        finally:
            self._saved_at = time.monotonic()  # a failed save is not tried again at once either
            self._saving = None

    async def save(self) -> bool:
        """Catch up and write the index to its file (embedded database only) unless the file already holds
        it; False when nothing was written."""
        if self._saved is None:
            return False
        started = time.perf_counter()
        async with contextlib.AsyncExitStack() as held:
            async with self._lock:  # the index lock first, then the directory's, as a catch-up that removes
                await held.enter_async_context(self._saved.saving())
                await self._sync(saving=True)  # the file is rewritten under the lock removals wait for
                seq, unsaved = self._seen_seq, self._unsaved
                if self._file_seq == seq and self._saved.path.is_file():
                    return False  # a reader (a CLI command, a server that wrote nothing) leaves it as it found it
                # Searches wait for this (0.85 s at a million chunks, 3 s after removals), the event loop does not.
                state = await asyncio.to_thread(self._index.state)
            # Searches go on while the file is written: the index replaces its arrays, it never changes them.
            if not await self._saved.write(state, seq):
                return False
            self._file_seq, self._unsaved, self._saved_at = seq, self._unsaved - unsaved, time.monotonic()
        log.info("keyword_index.saved", chunks=len(state.chunk_ids), seq=seq,
                 duration_ms=round((time.perf_counter() - started) * 1000, 1))  # fmt: skip
        return True

    async def close(self) -> bool:
        """Let a background save finish, then save what is left; False when nothing was written."""
        if self._saving is not None:
            await asyncio.gather(self._saving, return_exceptions=True)
        return await self.save()

    async def search(self, terms: list[str], k: int) -> list[tuple[str, float]]:
        async with self._lock:  # a save may be freezing the index in a worker thread
            await self._sync()
            return self._index.search(terms, k)


def _windowed(values: np.ndarray, before: np.ndarray) -> np.ndarray:
    """Each position's value plus those of the positions `before` it (-1: none)."""
    padded = np.append(values, np.zeros(1, dtype=values.dtype))  # index -1 reads the trailing 0
    windowed: np.ndarray = values + padded[before].sum(axis=0)  # numpy's stubs type array arithmetic as Any
    return windowed
