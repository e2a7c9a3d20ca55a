"""The keyword leg's index: BM25 over chunk terms in tantivy, derived from the database (decision 0044).

FalkorDB is the store of record; this index follows it. A database-wide sequence number orders every change
(chunks made visible, chunks removed); before answering, the index applies what changed since the last number
it recorded, so every process sharing the database sees every other's writes. With the embedded database the
index lives in a directory per graph beside the data (`KeywordIndexDirs`), shared by the processes that use it:
a catch-up takes the directory's lock, applies the changes, commits once, then records the number it reached in
`zapomni.json`. A crash between the commit and that record re-applies a few changes next time, which is harmless:
a chunk is added by deleting its id first. With a database server the index is held in memory and built at start.

The directory is used only when it is provably this store's past, as the saved file was before it (decision
0028): its format, graph and thread window are this server's, the stamp the store holds is the one written when
the directory was made (a restored or re-created store carries another), and its number is neither past the
store's nor before the point the change log was pruned to. Otherwise, or when tantivy cannot open it, it is made
again from every stored chunk.

Each chunk's entry also keeps what a hit on it shows (its text, place and memory's fields), and the processes
that use the embedded database say so beside the indexes (`arrive`, `leave`): the last to leave catches its indexes
up and records that they hold every change of the store. Until the next process arrives, that proof lets a search
be answered from an index alone, before the database has loaded the store (`KeywordIndexAlone`, decision 0045).

Analysis is Zapomni's own (`Analyzer`: stopwords, Snowball stems), run once per text; tantivy indexes the terms
with its whitespace tokenizer, so queries and documents agree on what a word is. A turn of a conversation thread
is indexed with the terms of the `THREAD_WINDOW` turns before it, so a reply is found by the words of the
question it answers; a turn added or removed re-indexes the turns after it whose window changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import math
import os
import shutil
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeVar, cast

import structlog
import tantivy

from zapomni_core.content.conversation import THREAD_WINDOW, indexed_text
from zapomni_core.search.analyzer import Analyzer
from zapomni_core.search.index_files import Presence, others_present, unlink_durably, write_durably
from zapomni_core.search.shown import ShownChunk, read_shown, shown
from zapomni_core.search.types import LegUnavailable
from zapomni_db import IndexChanges, IndexedChunk, Maintenance, SearchReads

log = structlog.get_logger(__name__)
T = TypeVar("T")

FORMAT = 3  # 3: what a hit shows is kept; 2: each chunk's node number. An older format is made again from the store
_RECORD = "zapomni.json"
# Beside the graphs' directories: an entry per process that may write to the store, and the proof that none has
# since the indexes named in it were caught up (decision 0045).
_PRESENT = ".present"
_PROOF = "closed.json"
# Sequence numbers read per round trip while catching up (one per memory, so pages stay whole).
_SYNC_WINDOW = 2000
# A long catch-up (a rebuild) commits and records how far it got this often, so a killed one resumes there.
_COMMIT_EVERY = 50_000
# Chunks whose terms a catch-up counts in the event loop; more go to a worker thread.
_COUNT_INLINE = 200
# The writer's indexing memory (tantivy's floor is 15 MB a thread): flushed to a segment when full.
_WRITER_HEAP = 48_000_000
# An opening that finds the index further behind than this many changes (or to be made again) catches up in the
# background: searches answer meanwhile from the vector leg and say so (a million chunks take minutes to read).
INLINE_CATCH_UP = 20_000
_LOCK_POLL_S = 0.005


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw")
    # The database's number for the chunk's node: its hits are fetched by it, without the database's indexes.
    builder.add_unsigned_field("node", stored=True)
    builder.add_text_field("thread", stored=False, tokenizer_name="raw")
    # Term frequencies without positions: BM25 needs no phrase queries, and positions were a third of the disk.
    builder.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="freq")
    # A turn's own terms, place and window, to index its neighbours again when the thread changes.
    builder.add_bytes_field("turn", stored=True, indexed=False)
    # What a hit on the chunk shows (its text, place and memory's fields): an answer before the database has loaded.
    builder.add_bytes_field("shown", stored=True, indexed=False)
    return builder.build()


_SCHEMA = _schema()


class KeywordIndexDirs:
    """The keyword indexes of one embedded data directory: a directory per graph, and the lock they share."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def beside(cls, data_dir: Path) -> KeywordIndexDirs:
        """The keyword indexes of the embedded database in `data_dir`."""
        return cls(data_dir / "keyword-index")

    def path(self, graph: str) -> Path:
        # A graph name is any string; the directory is named by its digest and its record holds the name itself.
        return self.root / hashlib.sha256(graph.encode()).hexdigest()[:32]

    @contextlib.asynccontextmanager
    async def locked(self) -> AsyncIterator[None]:
        """The lock every process takes to change an index here. Polled, not waited for in a thread: a task
        cancelled while waiting must not leave a thread to take the lock later and hold it for ever."""
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Private like every file of the data directory, whatever the umask (tests/e2e/test_file_modes.py).
        lock = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await asyncio.sleep(_LOCK_POLL_S)
            yield
        finally:
            os.close(lock)  # closing the descriptor releases the lock

    async def arrive(self) -> Presence:
        """Say this process may write to the store, before it does: until it leaves, no index here is proven the
        store's (`proven`). Its entry stays locked while it lives, so one it left behind by dying is seen gone."""
        async with self.locked():
            entries = self.root / _PRESENT
            entries.mkdir(mode=0o700, exist_ok=True)
            path = entries / f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
            entry = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(entry, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new file: nobody else holds it
            await _to_the_end(lambda: unlink_durably(self.root / _PROOF))
        return Presence(path, entry)

    async def leave(self, presence: Presence, indexes: Sequence[KeywordIndex] = ()) -> None:
        """End this process's presence. When no other process is present, catch each of `indexes` up and record
        those that then hold every change of the store: the proof a later start reads before the database has
        loaded. All under the lock, so no process arrives (and writes) in between."""
        async with self.locked():
            presence.end()
            if not indexes or await _to_the_end(lambda: others_present(self.root / _PRESENT)):
                return
            proven: dict[str, int] = {}
            for index in indexes:
                if index.building:  # made again in the background: not complete, and its catch-up wants this lock
                    continue
                try:
                    await index.sync(dirs_locked=True)
                    seq = await index.complete_to()
                except Exception as exc:  # not proven, that is all: the next start waits for the database
                    log.warning("keyword_index.not_proven", graph=index.graph, error=str(exc))
                    continue
                if seq is not None:
                    proven[index.graph] = seq
            if proven:
                await _to_the_end(lambda: write_durably(self.root, _PROOF, {"graphs": proven}))

    def proven(self, graph: str) -> int | None:
        """The change number up to which the proof says `graph`'s index holds every change of the store (no process
        has opened the store since it was recorded); None without such a proof."""
        try:
            proof = json.loads((self.root / _PROOF).read_text())
        except (OSError, ValueError):
            return None
        seq = proof.get("graphs", {}).get(graph) if isinstance(proof, dict) else None
        return seq if isinstance(seq, int) else None

    def forget_proof(self) -> None:
        """For what replaces the store under the indexes (a restore): nothing here is proven any more."""
        unlink_durably(self.root / _PROOF)

    async def discard(self, graph: str) -> None:
        """Remove a deleted graph's index (after the graph: a catch-up under the lock then finds no graph)."""
        async with self.locked():
            await _to_the_end(lambda: shutil.rmtree(self.path(graph), ignore_errors=True))


class KeywordHit(NamedTuple):
    chunk_id: str
    node: int  # the chunk's node number in the database, when it was indexed
    score: float


@dataclass
class _Turn:
    order: tuple[float, float, int]
    own: str  # its terms, space-joined
    window: tuple[str, ...] | None  # the ids of the turns before it it was indexed with; None: not indexed yet
    node: int
    shown: bytes


@dataclass
class _Threads:
    """The threads a catch-up touched, read from the index once and changed in memory until its commit."""

    members: dict[str, dict[str, _Turn]] = field(default_factory=dict)
    thread_of: dict[str, str] = field(default_factory=dict)


class KeywordIndex:
    """The keyword index of one graph, caught up with the database before every search."""

    def __init__(
        self, reads: SearchReads, maintenance: Maintenance, graph: str, dirs: KeywordIndexDirs | None = None
    ) -> None:
        self._reads = reads
        self._maintenance = maintenance
        self._graph = graph
        self._dirs = dirs
        self._directory = dirs.path(graph) if dirs else None
        self._analyzer = Analyzer()  # its own: counting may run in a worker thread, and a stemmer is not thread-safe
        self._index: tantivy.Index | None = None
        self._searcher: tantivy.Searcher | None = None
        self._seq = 0  # every change up to this number is in the index
        self._synced_at = -math.inf  # when the index was last brought up to date (time.monotonic())
        self._lock = asyncio.Lock()
        self._building: asyncio.Task[None] | None = None  # a long catch-up searches do not wait for
        self._refreshing: asyncio.Task[None] | None = None  # one a search that allowed a lag did not wait for
        self._progress = (0, 0)  # changes read, of how many, by the catch-up going on

    def __len__(self) -> int:
        return self._searcher.num_docs if self._searcher is not None else 0

    async def sync(self, *, dirs_locked: bool = False) -> int:
        """Apply every change stored since the last sync (by any process); return how many chunks changed.
        `dirs_locked`: the caller holds the directories' lock already."""
        async with self._lock:
            return await self._sync(dirs_locked=dirs_locked)

    @property
    def graph(self) -> str:
        return self._graph

    async def complete_to(self) -> int | None:
        """The store's latest change number when this index, as committed in its directory, holds every change up
        to it; else None. The caller holds the directory's lock."""
        if self._directory is None or self.building:
            return None
        latest, _ = await self._reads.sequence()
        record = await asyncio.to_thread(_read_record, self._directory)
        return latest if record.get("format") == FORMAT and record.get("seq") == latest else None

    @property
    def building(self) -> bool:
        return self._building is not None and not self._building.done()

    async def open(self) -> None:
        """Open the index and catch it up; when that means reading more than INLINE_CATCH_UP changes (or making
        it again), start doing so in the background and return at once."""
        latest, pruned_upto = await self._reads.sequence()
        behind = latest
        if self._directory is not None:
            record, reason = await self._judged_record(latest, pruned_upto)
            if not reason:
                behind = latest - int(record["seq"])
        if behind <= INLINE_CATCH_UP:
            try:
                await self.sync()
            except (OSError, ValueError) as exc:  # a full disk: served without the leg until a search catches up
                log.warning("keyword_index.catch_up_failed", error=str(exc))
            return
        log.info("keyword_index.building", behind=behind, latest=latest)
        self._building = asyncio.create_task(self._build(), name=f"zapomni-keyword-index-{self._graph}")

    async def _build(self) -> None:
        started = time.perf_counter()
        try:
            await self.sync()
        except Exception as exc:  # the next search tries again, in its own catch-up
            log.warning("keyword_index.build_failed", error=str(exc))
            return
        log.info("keyword_index.built", chunks=len(self), duration_ms=round((time.perf_counter() - started) * 1000, 1))

    @property
    def caught_up_to(self) -> int:
        """The number of the last change the index has read (the store's changes after it are not in it yet)."""
        return self._seq

    async def search(self, terms: list[str], k: int, *, stale_ok_s: float = 0.0) -> list[KeywordHit]:
        """The `k` best chunks for `terms` by BM25, best first, with their scores; chunks matching none left out.

        `stale_ok_s`: the index may be that many seconds behind the store. Such a search answers at once from what
        is committed and, when the index last caught up longer ago, starts a catch-up without waiting for it: a
        catch-up commits, 25 to 49 ms measured, mostly CPU (decision 0043).
        LegUnavailable while the index is being made in the background, or when it cannot be written."""
        if self.building:
            done, total = self._progress
            raise LegUnavailable(f"its index is being made from the store ({done:,} of {total:,} changes read)")
        due = self._searcher is None or time.monotonic() - self._synced_at >= stale_ok_s
        if due and stale_ok_s > 0 and self._searcher is not None:
            self._refresh()
        elif due:
            async with self._lock:
                try:
                    await self._sync()
                except (OSError, ValueError) as exc:  # a full disk, a damaged file: tantivy's errors are ValueErrors
                    log.warning("keyword_index.catch_up_failed", error=str(exc))
                    raise LegUnavailable(f"its index could not be brought up to date ({exc})") from exc
        if self._searcher is None:
            return []
        best = _best(self._searcher, terms, k)
        return [KeywordHit(str(doc["chunk_id"][0]), int(doc["node"][0]), score) for score, doc in best]

    def _refresh(self) -> None:
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.create_task(self._refresh_now(), name=f"zapomni-keyword-catch-up-{self._graph}")

    async def _refresh_now(self) -> None:
        try:
            await self.sync()
        except Exception as exc:  # the next search tries again
            log.warning("keyword_index.catch_up_failed", error=str(exc))

    async def close(self) -> None:
        """Stop a background catch-up (what it committed stays) and let the index's files go: nothing is left to
        save, every catch-up commits."""
        for task in (self._building, self._refreshing):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        async with self._lock:
            self._index = self._searcher = None

    async def _sync(self, *, dirs_locked: bool = False) -> int:
        self._synced_at = time.monotonic()  # what was written before this is read now
        latest, pruned_upto = await self._reads.sequence()
        if self._index is not None and latest == self._seq:
            return 0
        if self._dirs is None or dirs_locked:
            return await self._catch_up(latest, pruned_upto)
        async with self._dirs.locked():
            return await self._catch_up(latest, pruned_upto)

    async def _catch_up(self, latest: int, pruned_upto: int) -> int:
        """Open (or make) the index, then apply the changes up to `latest`: under the directory's lock, if any."""
        started = time.perf_counter()
        if self._directory is not None and not await self._maintenance.graph_exists():
            return 0  # its workspace was deleted: nothing to index, nothing to write beside the data
        record = await self._open(latest, pruned_upto)
        seq = int(record.get("seq", 0))
        assert self._index is not None
        if seq >= latest:
            self._seq = seq
            return 0
        # A writer per catch-up: the processes sharing the directory take turns (tantivy allows one writer).
        writer = self._index.writer(heap_size=_WRITER_HEAP, num_threads=1)
        changed = uncommitted = 0
        threads = _Threads()
        try:
            while seq < latest:
                self._progress = (seq, latest)
                upto = min(latest, seq + _SYNC_WINDOW)
                changes = await self._reads.changes_between(seq, upto)
                uncommitted += await self._apply(writer, changes, threads)
                seq = upto
                if uncommitted >= _COMMIT_EVERY or seq == latest:
                    self._reindex_turns(writer, threads)
                    await _to_the_end(writer.commit)
                    self._record({**record, "seq": seq})
                    self._private()
                    self._index.reload()
                    self._searcher, self._seq = self._index.searcher(), seq
                    changed, uncommitted, threads = changed + uncommitted, 0, _Threads()
        except BaseException:
            del writer  # now, not with the traceback: uncommitted changes go with it (the log still has them)
            raise
        # The merges this commit started finish before the writer goes (dropped, it abandons them, and every
        # catch-up would leave a segment more); a merge also drops removed chunks' terms from the files.
        await _to_the_end(writer.wait_merging_threads)
        self._index.reload()
        self._searcher = self._index.searcher()
        if changed > 1000:
            log.info("keyword_index.synced", chunks=changed, total=len(self),
                     duration_ms=round((time.perf_counter() - started) * 1000, 1))  # fmt: skip
        return changed

    async def _open(self, latest: int, pruned_upto: int) -> dict[str, Any]:
        """The record of an index this store can use, opened (and reloaded if another process wrote since);
        otherwise a new empty index with a new stamp, and its record."""
        if self._directory is None:
            if self._index is None or latest < self._seq or 0 < self._seq < pruned_upto:
                self._index, self._seq = tantivy.Index(_SCHEMA), 0
                self._searcher = self._index.searcher()
            return {"seq": self._seq}
        record, reason = await self._judged_record(latest, pruned_upto)
        if not reason and (self._index is None or record.get("seq") != self._seq):
            try:
                started = time.perf_counter()
                self._index = self._index or tantivy.Index(_SCHEMA, path=str(self._directory), reuse=True)
                self._index.reload()
                self._searcher = self._index.searcher()
                if self._seq == 0:
                    log.info("keyword_index.opened", chunks=len(self), seq=record["seq"], latest=latest,
                             duration_ms=round((time.perf_counter() - started) * 1000, 1))  # fmt: skip
            except ValueError as exc:  # missing or damaged files: made again from the store
                reason = f"tantivy cannot open it: {exc}"
        if not reason:
            return record
        log.info("keyword_index.rebuild", path=str(self._directory), reason=reason)
        self._index = self._searcher = None
        await asyncio.to_thread(shutil.rmtree, self._directory, True)
        # The file the hand-written index kept under the same name before decision 0044 (168 MB at 1M chunks).
        self._directory.with_suffix(".npz").unlink(missing_ok=True)
        self._directory.mkdir(mode=0o700, parents=True)
        self._index = tantivy.Index(_SCHEMA, path=str(self._directory))
        self._private()
        self._searcher, self._seq = self._index.searcher(), 0
        record = {"format": FORMAT, "graph": self._graph, "window": THREAD_WINDOW, "stamp": uuid.uuid4().hex, "seq": 0}
        self._record(record)
        await self._maintenance.stamp_keyword_index(record["stamp"])
        return record

    async def _judged_record(self, latest: int, pruned_upto: int) -> tuple[dict[str, Any], str]:
        """The directory's record, and why it cannot be used ("" when it can)."""
        assert self._directory is not None
        record = await asyncio.to_thread(_read_record, self._directory)
        stamp = await self._maintenance.keyword_index_stamp()
        return record, _unusable(record, graph=self._graph, stamp=stamp, latest=latest, pruned=pruned_upto)

    def _record(self, record: dict[str, Any]) -> None:
        if self._directory is not None:
            _write_record(self._directory, record)

    def _private(self) -> None:
        """tantivy creates files with the modes the umask leaves (0644 under the usual one): made this user's
        only, like every file of the data directory (tests/e2e/test_file_modes.py)."""
        if self._directory is None:
            return
        for path in self._directory.iterdir():
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_mode & 0o077:
                    path.chmod(0o600)

    async def _apply(self, writer: tantivy.IndexWriter, changes: IndexChanges, threads: _Threads) -> int:
        """Add, then remove, what one window of the change log says (chunk ids are never reused)."""
        chunks = changes.added
        counted = await asyncio.to_thread(self._terms, chunks) if len(chunks) > _COUNT_INLINE else self._terms(chunks)
        for chunk, terms in zip(chunks, counted, strict=True):
            if chunk.thread is None or THREAD_WINDOW == 0:
                writer.delete_documents_by_term("chunk_id", chunk.chunk_id)
                document = tantivy.Document(chunk_id=chunk.chunk_id, node=chunk.node, body=terms, shown=shown(chunk))
                writer.add_document(document)
            else:
                turn = _Turn(chunk.order, terms, None, chunk.node, shown(chunk))
                self._thread(threads, chunk.thread)[chunk.chunk_id] = turn
                threads.thread_of[chunk.chunk_id] = chunk.thread
        for chunk_id in changes.removed:
            writer.delete_documents_by_term("chunk_id", chunk_id)
            thread = threads.thread_of.get(chunk_id) or self._stored_thread(chunk_id)
            if thread is not None:
                self._thread(threads, thread).pop(chunk_id, None)
        return len(chunks) + len(changes.removed)

    def _terms(self, chunks: list[IndexedChunk]) -> list[str]:
        return [" ".join(self._analyzer.terms(indexed_text(chunk.context, chunk.text))) for chunk in chunks]

    def _thread(self, threads: _Threads, thread: str) -> dict[str, _Turn]:
        """A thread's turns: as the index holds them, then as this catch-up changed them."""
        members = threads.members.get(thread)
        if members is None:
            members = threads.members[thread] = {}
            for chunk_id, _, turn in self._stored_turns(tantivy.Query.term_query(_SCHEMA, "thread", thread)):
                members[chunk_id] = turn
                threads.thread_of[chunk_id] = thread
        return members

    def _stored_thread(self, chunk_id: str) -> str | None:
        for _, thread, _ in self._stored_turns(tantivy.Query.term_query(_SCHEMA, "chunk_id", chunk_id)):
            return thread
        return None

    def _stored_turns(self, query: tantivy.Query) -> Iterator[tuple[str, str, _Turn]]:
        """The turns the query matches in the committed index: chunk id, thread, turn (other chunks skipped)."""
        searcher = self._searcher
        if searcher is None:
            return
        # How many match, then all of them (a limit of the index's size would allocate for that many).
        count = int(cast(Any, searcher.search(query, limit=1, count=True)).count or 0)
        for _, address in searcher.search(query, limit=count).hits if count else []:
            doc = searcher.doc(address)
            if not doc["turn"]:
                continue
            stored = json.loads(bytes(doc["turn"][0]))
            window, node, seen = tuple(stored["window"]), int(doc["node"][0]), bytes(doc["shown"][0])
            turn = _Turn(tuple(stored["order"]), stored["own"], window, node, seen)
            yield str(doc["chunk_id"][0]), str(stored["thread"]), turn

    def _reindex_turns(self, writer: tantivy.IndexWriter, threads: _Threads) -> None:
        """Index every turn of the touched threads whose window of turns before it changed (or that is new)."""
        for thread, members in threads.members.items():
            ordered = sorted(members.items(), key=lambda item: (item[1].order, item[0]))
            for i, (chunk_id, turn) in enumerate(ordered):
                before = ordered[max(0, i - THREAD_WINDOW) : i]
                window = tuple(other_id for other_id, _ in before)
                if turn.window == window:
                    continue
                stored = {"thread": thread, "order": list(turn.order), "own": turn.own, "window": list(window)}
                body = " ".join([turn.own, *(other.own for _, other in before)])
                writer.delete_documents_by_term("chunk_id", chunk_id)
                writer.add_document(
                    tantivy.Document(
                        chunk_id=chunk_id,
                        node=turn.node,
                        thread=thread,
                        body=body,
                        turn=json.dumps(stored).encode(),
                        shown=turn.shown,
                    )
                )
                turn.window = window


class KeywordIndexAlone:
    """A graph's keyword index read without the database, while the proof its last writer left holds (decision
    0045): what answers a search before the database has loaded."""

    def __init__(self, dirs: KeywordIndexDirs, graph: str, seq: int, index: tantivy.Index) -> None:
        self._dirs = dirs
        self._graph = graph
        self._seq = seq
        self._searcher = index.searcher()

    @classmethod
    def open(cls, dirs: KeywordIndexDirs, graph: str) -> KeywordIndexAlone | None:
        """`graph`'s index when a proof says it holds every change of the store; None otherwise."""
        seq = dirs.proven(graph)
        if seq is None:
            return None
        directory = dirs.path(graph)
        record = _read_record(directory)
        if _unusable(record, graph=graph, stamp=record.get("stamp"), latest=seq, pruned=0) or record["seq"] != seq:
            return None
        try:
            return cls(dirs, graph, seq, tantivy.Index(_SCHEMA, path=str(directory), reuse=True))
        except ValueError:  # missing or damaged files
            return None

    def search(self, terms: list[str], k: int) -> list[tuple[str, float, ShownChunk]] | None:
        """The `k` best chunks for `terms` by BM25 (id, score, what a hit shows), best first. None once the proof is
        gone: a process has opened the store since, and may have written to it."""
        if self._dirs.proven(self._graph) != self._seq:
            return None
        return [
            (str(doc["chunk_id"][0]), score, read_shown(bytes(doc["shown"][0])))
            for score, doc in _best(self._searcher, terms, k)
        ]


def _best(searcher: tantivy.Searcher, terms: list[str], k: int) -> list[tuple[float, tantivy.Document]]:
    """The `k` chunks BM25 ranks best for `terms` (any of them), best first, with their scores."""
    unique = list(dict.fromkeys(terms))
    if not unique or k <= 0:
        return []
    query = tantivy.Query.boolean_query(
        [(tantivy.Occur.Should, tantivy.Query.term_query(_SCHEMA, "body", term)) for term in unique]
    )
    return [(float(score), searcher.doc(address)) for score, address in searcher.search(query, limit=k).hits]


async def _to_the_end(work: Callable[[], T]) -> T:
    """`work()` in a worker thread, finished even when the awaiting task is cancelled (then cancelled after it):
    a commit or a merge left running would still hold tantivy's writer lock when the next catch-up wants it."""
    task = asyncio.ensure_future(asyncio.to_thread(work))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await task
        raise


def _unusable(record: dict[str, Any], *, graph: str, stamp: str | None, latest: int, pruned: int) -> str:
    if not record:
        return "no index yet"
    if record.get("format") != FORMAT:
        return f"format {record.get('format')!r}, this server reads {FORMAT}"
    if record.get("graph") != graph:
        return "made for another graph"
    if stamp is None or record.get("stamp") != stamp:
        return "the store's stamp differs (restored, re-created, or indexed elsewhere since)"
    if record.get("window") != THREAD_WINDOW:
        return "another thread window"
    seq = int(record.get("seq", 0))
    if seq > latest:
        return f"indexed up to change {seq}, past the store's {latest}"
    if seq < pruned:
        return f"indexed up to change {seq}; the change log was pruned to {pruned}"
    return ""


def _read_record(directory: Path) -> dict[str, Any]:
    try:
        record = json.loads((directory / _RECORD).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _write_record(directory: Path, record: dict[str, Any]) -> None:
    """Replace the record atomically and durably (it says how far the committed index goes)."""
    write_durably(directory, _RECORD, record)
