"""The hand-written BM25 index the keyword leg ran on until decision 0044 (numpy, in memory), kept for the benches.

`bench.keyword_engines` measures tantivy beside it, and `bench.scifact_replay` replays the keyword leg with other
`K1`/`B` on it (tantivy's Python bindings fix them). Decisions 0005, 0028, 0032 and 0037 describe how it was built;
the app now keeps its keyword index in tantivy (`zapomni_core.search.keyword_index`).
"""

from __future__ import annotations

import bisect
import math
import os
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np

from bench.handwritten_bm25_ids import ChunkIds
from zapomni_core.content.conversation import THREAD_WINDOW

# bm25s "lucene" defaults (the reference the keyword leg is checked against).
K1 = 1.5
B = 0.75

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


def _windowed(values: np.ndarray, before: np.ndarray) -> np.ndarray:
    """Each position's value plus those of the positions `before` it (-1: none)."""
    padded = np.append(values, np.zeros(1, dtype=values.dtype))  # index -1 reads the trailing 0
    windowed: np.ndarray = values + padded[before].sum(axis=0)  # numpy's stubs type array arithmetic as Any
    return windowed


def save_state(path: Path, state: Bm25State) -> None:
    """The index as one file, written to a temporary name and renamed (as the app saved it; no threads)."""
    temporary = path.with_name(f".{path.name}.tmp")
    with temporary.open("wb") as out:
        np.savez(
            out,
            chunk_ids=state.chunk_ids,
            id_order=state.id_order,
            lengths=state.lengths,
            terms=np.array(state.terms, dtype=str),
            offsets=state.offsets,
            positions=state.positions,
            counts=state.counts,
        )
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def load_state(path: Path, window: int = 0) -> Bm25State:
    with np.load(path, allow_pickle=False) as data:
        return Bm25State(
            window=window,
            chunk_ids=data["chunk_ids"],
            id_order=data["id_order"].astype(np.intp, copy=False),
            lengths=data["lengths"],
            terms=[str(term) for term in data["terms"]],
            offsets=data["offsets"],
            positions=data["positions"],
            counts=data["counts"],
            threads=[],
        )
