"""The keyword index saved beside the embedded database, so a server need not rebuild it from every chunk.

Rebuilding reads every chunk's text from FalkorDB and counts its terms: minutes at a million chunks (decisions
0026, 0037). A server saves its index while it runs, once it is `save_after` chunks ahead of its file (or has
none), and when it closes; one file per graph under ``<data dir>/keyword-index/``. The next server reads it and
catches up from the sequence number it was saved at, the way any process catches up with another's writes
(`SyncedBm25Index`).

A file is used only when it is provably this store's past:

- each save writes a new random stamp into the file and then beside the graph (`Maintenance.stamp_keyword_index`);
  a store that was restored from a backup, re-created or written by a server with another data directory
  carries another stamp. The file goes first: a save cut short (a client ends its server 4 s after closing its
  stdin; the MCP SDK does) leaves the previous file and the store's stamp as they were, still a pair;
- its sequence number is not past the store's, nor before the point the change log was pruned to;
- its format, graph name and thread window are this server's.

Otherwise it is ignored and the index is rebuilt from the store. A save holds an exclusive lock on the
directory from its last catch-up to its rename; every write that removes chunks removes the file under
the same lock once the database has the removal (`discard`), so a deleted memory's words are in no file
after its delete returns. Saved only for the embedded database: its data directory is shared by every
process that can write to the store, and so is the lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from zapomni_core.processes import process_alive
from zapomni_core.search.bm25 import MAX_COUNT, Bm25State, SavedIndex
from zapomni_db import Maintenance

log = structlog.get_logger(__name__)

# 2: chunk ids as bytes with their sorted order, counts as bytes (decision 0032). A file of format 1 (ids as
# JSON, counts as float32) is still read: a million-chunk store does not rebuild its index on upgrade.
FORMAT = 2
_READS = (1, FORMAT)


class KeywordIndexFiles:
    """The directory of saved keyword indexes of one data directory, its lock, and how often to save into it."""

    def __init__(self, directory: Path, *, save_after: int) -> None:
        self.directory = directory
        self.save_after = save_after  # chunks changed since a graph's file (or in an index without one)

    def for_graph(self, graph: str, maintenance: Maintenance) -> KeywordIndexFile:
        return KeywordIndexFile(self, graph, maintenance)

    def path(self, graph: str) -> Path:
        # A graph name is any string; the file is named by its digest and holds the name itself.
        return self.directory / f"{hashlib.sha256(graph.encode()).hexdigest()[:32]}.npz"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Private like every file of the data directory, whatever the umask (tests/e2e/test_file_modes.py).
        lock = os.open(self.directory / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
        finally:
            os.close(lock)  # closing the descriptor releases the lock

    async def discard(self, graph: str) -> None:
        """Remove the graph's saved index: chunks were removed from the store, their words go with it."""
        await asyncio.to_thread(self._discard, graph)

    def _discard(self, graph: str) -> None:
        with self.locked(), contextlib.suppress(FileNotFoundError):
            self.path(graph).unlink()


class KeywordIndexFile:
    """One graph's saved keyword index: read when the index is first built, written on close."""

    def __init__(self, files: KeywordIndexFiles, graph: str, maintenance: Maintenance) -> None:
        self._files = files
        self._graph = graph
        self._maintenance = maintenance

    @property
    def path(self) -> Path:
        return self._files.path(self._graph)

    @property
    def save_after(self) -> int:
        return self._files.save_after

    async def load(self, *, window: int, latest: int, pruned_upto: int) -> SavedIndex | None:
        """The saved index, if there is one this store can use (see the module's rules); None otherwise."""
        if not self.path.is_file():
            return None
        stamp = await self._maintenance.keyword_index_stamp()
        try:
            meta, state = await asyncio.to_thread(_read, self.path)
        except Exception as exc:  # truncated, foreign or of an older layout: rebuilt from the store instead
            log.warning("keyword_index.file_unreadable", path=str(self.path), error=str(exc))
            return None
        reason = _unusable(meta, graph=self._graph, stamp=stamp, window=window, latest=latest, pruned=pruned_upto)
        if reason:
            log.info("keyword_index.file_ignored", path=str(self.path), reason=reason)
            return None
        return SavedIndex(state, int(meta["seq"]))

    @contextlib.asynccontextmanager
    async def saving(self) -> AsyncIterator[None]:
        """Hold the directory's lock: removals wait until the file written inside is renamed into place."""
        lock = self._files.locked()
        await asyncio.to_thread(lock.__enter__)
        try:
            yield
        finally:
            lock.__exit__(None, None, None)

    async def write(self, state: Bm25State, seq: int) -> bool:
        """Write the file, then stamp the store with it (inside `saving`, after the index caught up to `seq`);
        False, with nothing written, when the graph was deleted (its workspace's deletion removes the file next)."""
        if not await self._maintenance.graph_exists():
            return False
        stamp = uuid.uuid4().hex
        meta = {"format": FORMAT, "graph": self._graph, "seq": seq, "stamp": stamp, "window": state.window}
        await asyncio.to_thread(_write, self.path, meta, state)
        await self._maintenance.stamp_keyword_index(stamp)
        return True

    async def discard(self) -> None:
        await self._files.discard(self._graph)


def _unusable(meta: dict[str, Any], *, graph: str, stamp: str | None, window: int, latest: int, pruned: int) -> str:
    if meta.get("format") not in _READS:
        return f"format {meta.get('format')!r}, this server reads {' and '.join(map(str, _READS))}"
    if meta.get("graph") != graph:
        return "saved for another graph"
    if stamp is None or meta.get("stamp") != stamp:
        return "the store's stamp differs (restored, re-created, or saved elsewhere since)"
    if meta.get("window") != window:
        return "another thread window"
    seq = int(meta["seq"])
    if seq > latest:
        return f"saved at change {seq}, past the store's {latest}"
    if seq < pruned:
        return f"saved at change {seq}; the change log was pruned to {pruned}"
    return ""


def _strings(values: list[str]) -> np.ndarray:
    return np.frombuffer(json.dumps(values, ensure_ascii=False).encode(), dtype=np.uint8)


def _from_strings(array: np.ndarray) -> list[Any]:
    values = json.loads(array.tobytes().decode())
    if not isinstance(values, list):
        raise ValueError("expected a list")
    return values


def _write(path: Path, meta: dict[str, Any], state: Bm25State) -> None:
    threads = state.threads
    arrays: dict[str, Any] = {
        "meta": _strings([json.dumps(meta)]),
        "chunk_ids": state.chunk_ids,
        "id_order": state.id_order,
        "lengths": state.lengths,
        "terms": _strings(state.terms),
        "offsets": state.offsets,
        "positions": state.positions,
        "counts": state.counts,
        "thread_positions": np.array([t[0] for t in threads], dtype=np.int64),
        "thread_names": _strings([t[1] for t in threads]),
        "thread_dates": np.array([t[2][0] for t in threads], dtype=np.float64),
        "thread_created": np.array([t[2][1] for t in threads], dtype=np.float64),
        "thread_idx": np.array([t[2][2] for t in threads], dtype=np.int64),
    }
    _remove_abandoned(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
            np.savez(out, **arrays)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _read(path: Path) -> tuple[dict[str, Any], Bm25State]:
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(_from_strings(data["meta"])[0])
        names = _from_strings(data["thread_names"])
        order = zip(
            data["thread_dates"].tolist(), data["thread_created"].tolist(), data["thread_idx"].tolist(), strict=True
        )
        threads = [
            (position, name, placed)
            for position, name, placed in zip(data["thread_positions"].tolist(), names, order, strict=True)
        ]
        if meta.get("format") == 1:
            chunk_ids = np.array([chunk_id.encode() for chunk_id in _from_strings(data["chunk_ids"])])
            id_order = np.argsort(chunk_ids, kind="stable")
        else:
            chunk_ids, id_order = data["chunk_ids"], data["id_order"].astype(np.intp, copy=False)
        state = Bm25State(
            window=int(meta["window"]),
            chunk_ids=chunk_ids,
            id_order=id_order,
            lengths=data["lengths"].astype(np.float32, copy=False),
            terms=_from_strings(data["terms"]),
            offsets=data["offsets"].astype(np.int64, copy=False),
            positions=data["positions"].astype(np.int32, copy=False),
            counts=np.minimum(data["counts"], MAX_COUNT).astype(np.uint8, copy=False),
            threads=threads,
        )
    _check(state)
    return meta, state


def _check(state: Bm25State) -> None:
    """A file that does not hang together is refused rather than searched."""
    size, entries = len(state.chunk_ids), len(state.positions)
    if state.chunk_ids.dtype.kind != "S":
        raise ValueError("chunk ids are not bytes")
    if len(state.id_order) != size or (size and not np.array_equal(np.sort(state.id_order), np.arange(size))):
        raise ValueError("the id order is not a permutation of the chunks")
    ordered = state.chunk_ids[state.id_order]
    if size > 1 and not np.all(ordered[1:] > ordered[:-1]):
        raise ValueError("the id order does not sort the ids, or a chunk id appears twice")
    if len(state.lengths) != size or len(state.counts) != entries or len(state.offsets) != len(state.terms) + 1:
        raise ValueError("array sizes disagree")
    if state.offsets[0] != 0 or state.offsets[-1] != entries or np.any(np.diff(state.offsets) < 0):
        raise ValueError("postings offsets are not ordered")
    if entries and (state.positions.min() < 0 or state.positions.max() >= size):
        raise ValueError("a posting names no chunk")
    if any(not 0 <= position < size for position, _, _ in state.threads):
        raise ValueError("a thread names no chunk")


def _remove_abandoned(path: Path) -> None:
    """Delete the half-written files of saves whose process was killed (each as large as the index)."""
    for temporary in path.parent.glob(f".{path.name}.*.tmp"):
        pid = temporary.name.removeprefix(f".{path.name}.").removesuffix(".tmp")
        if pid.isdigit() and not process_alive(int(pid)):
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()
