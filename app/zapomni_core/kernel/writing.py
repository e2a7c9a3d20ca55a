"""The one write pipeline — split → embed → rows — used by add, update and import."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace

import structlog

from zapomni_core.content.chunking import Chunker
from zapomni_core.content.conversation import indexed_text
from zapomni_core.content.metadata import MemoryMetadata
from zapomni_core.content.turns import NOTHING, Inferred, speaker_of
from zapomni_core.context import NO_CONTEXT, RequestContext, ShutdownGate
from zapomni_core.embedders import CachedEmbedder
from zapomni_core.errors import ShuttingDown
from zapomni_core.progress import Progress
from zapomni_core.threads import off_loop
from zapomni_core.validation import parse_iso8601
from zapomni_db import ChunkPlace, ChunkRow, MemoryRecord, StoredChunk, StoredMemory

log = structlog.get_logger(__name__)

# Chunks embedded per step: between two steps an add checks for cancellation and the shutdown
# deadline, and reports progress (a few seconds of work at most).
EMBED_SLICE = 64


def content_hash(text: str) -> str:
    """The identity of a text for deduplication: whitespace runs collapsed, ends trimmed."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8", errors="surrogatepass")).hexdigest()


def new_id() -> str:
    return str(uuid.uuid4())


def memory_record(
    memory_id: str,
    text: str,
    metadata: MemoryMetadata | None,
    *,
    created_at: float,
    updated_at: float | None = None,
    inferred: Inferred = NOTHING,
) -> MemoryRecord:
    """The stored form of a memory; add, update and import build it the same way.

    The thread the keyword index reads and the speaker filters read are the agent's, else the inferred ones
    (`inferred`, kept apart).
    """
    date = metadata.date if metadata else None
    return MemoryRecord(
        id=memory_id,
        text=text,
        created_at=created_at,
        updated_at=updated_at,
        content_hash=content_hash(text),
        tags=list(metadata.tags) if metadata else [],
        source=metadata.source if metadata else None,
        date=date,
        date_ts=parse_iso8601(date).timestamp() if date else created_at,
        metadata_json=json.dumps(metadata.extra() if metadata else {}, sort_keys=True),
        thread=(metadata.thread if metadata else None) or inferred.thread,
        inferred_json=inferred.to_json(),
        speaker=speaker_of(metadata.speaker if metadata else None, inferred),
    )


def metadata_of(stored: StoredMemory) -> MemoryMetadata:
    """A stored memory's metadata as the agent gave it."""
    return MemoryMetadata.model_validate(
        {
            "tags": stored.info.tags,
            "source": stored.info.source,
            "date": stored.info.date,
            **json.loads(stored.metadata_json),
        }
    )


@dataclass(frozen=True)
class Split:
    """A text cut into chunks, with what is embedded of each (`indexed_text`)."""

    pieces: list[str]
    indexed: list[str]
    context: str | None = None


@dataclass(frozen=True)
class UpdatePlan:
    keep: list[str]  # chunk ids left as they are
    drop: list[str]  # chunk ids removed
    new: list[ChunkRow]  # chunks created
    embedded: int  # of `new`, how many needed a fresh vector


class WritePipeline:
    def __init__(
        self,
        chunker: Chunker,
        embedder: CachedEmbedder,
        shutdown: ShutdownGate,
    ) -> None:
        self._chunker = chunker
        self._embedder = embedder
        self._shutdown = shutdown

    @property
    def chunker(self) -> Chunker:
        return self._chunker

    def split(self, text: str, context: str | None = None) -> Split:
        return self.prepare(self._chunker.split(text), context)

    def prepare(self, pieces: Sequence[str], context: str | None = None) -> Split:
        """Pieces already cut (a file's, an import's) with what is embedded of each."""
        return Split(list(pieces), [indexed_text(context, piece) for piece in pieces], context)

    async def split_async(self, text: str, context: str | None = None) -> Split:
        return await off_loop(self.split, text, context)

    async def embed(
        self, pieces: Sequence[str], ctx: RequestContext = NO_CONTEXT, *, slice_size: int = EMBED_SLICE
    ) -> list[list[float]]:
        """Vectors for `pieces`, `slice_size` at a time; raises ShuttingDown past the shutdown deadline. A bulk
        load passes its whole batch: the embedder groups texts of like length, which many texts do better."""
        vectors: list[list[float]] = []
        for start in range(0, len(pieces), slice_size):
            ctx.check_cancelled()
            if self._shutdown.expired():
                log.warning("memory.add_abandoned", reason="shutdown grace period over", chunks=len(pieces))
                raise ShuttingDown("the server shut down before this memory was embedded; nothing was stored")
            vectors.extend(
                await self._embedder.embed_documents(pieces[start : start + slice_size], background=ctx.background)
            )
            if len(pieces) > slice_size:
                await ctx.progress(Progress(len(vectors), len(pieces), "chunks", "embedding"))
        return vectors

    async def rows(self, text: str, ctx: RequestContext = NO_CONTEXT, context: str | None = None) -> list[ChunkRow]:
        """A new memory's chunks, embedded (with `context`, see zapomni_core.conversation)."""
        split = await self.split_async(text, context)
        vectors = await self.embed(split.indexed, ctx)
        return chunk_rows(split, vectors)

    async def placed_rows(
        self, pieces: Sequence[str], places: Sequence[ChunkPlace], ctx: RequestContext = NO_CONTEXT
    ) -> list[ChunkRow]:
        """A file's chunks, embedded, each with its place in the file (page, section, lines)."""
        split = await off_loop(self.prepare, pieces)
        vectors = await self.embed(split.indexed, ctx)
        rows = chunk_rows(split, vectors)
        return [replace(row, place=place) for row, place in zip(rows, places, strict=True)]

    async def plan_update(
        self,
        text: str,
        old: Sequence[StoredChunk],
        ctx: RequestContext = NO_CONTEXT,
        *,
        context: str | None = None,
        rewrite: bool = False,
    ) -> UpdatePlan:
        """Chunks for `text` given the memory's current ones: unchanged chunks stay, the rest are redone.

        A chunk whose text and context are unchanged at the same position is kept as it is, unless
        `rewrite` (the keyword index must read it again: its thread changed) or it was the memory's only
        chunk (the database keeps that chunk's text on the memory alone, see zapomni_db.memories, so it
        would read as the new text). Any other chunk is written anew (a Chunk is never modified in place,
        see zapomni_db._cypher), with its old vector when what was embedded is the same; only new text or
        context is embedded.
        """
        split = await self.split_async(text, context)
        by_position = {c.index: c for c in old}
        vectors_by_text = {indexed_text(c.context, c.text): c.embedding for c in old}
        keep: list[str] = []
        todo = [i for i, indexed in enumerate(split.indexed) if indexed not in vectors_by_text]
        fresh = dict(zip(todo, await self.embed([split.indexed[i] for i in todo], ctx), strict=True))
        new: list[ChunkRow] = []
        for i, piece in enumerate(split.pieces):
            current = by_position.get(i)
            if (
                not rewrite
                and len(old) > 1
                and current is not None
                and current.text == piece
                and current.context == context
            ):
                keep.append(current.id)
                continue
            vector = fresh[i] if i in fresh else vectors_by_text[split.indexed[i]]
            new.append(_row(new_id(), i, piece, vector, context))
        kept = set(keep)
        return UpdatePlan(keep=keep, drop=[c.id for c in old if c.id not in kept], new=new, embedded=len(todo))


def chunk_rows(
    split: Split,
    vectors: Sequence[list[float]],
    ids: Sequence[str] | None = None,
    indexes: Sequence[int] | None = None,
) -> list[ChunkRow]:
    """The chunks of `split` (all of them, or those at `indexes`: a job stores a large memory's chunks a
    slice at a time) with their `vectors`; fresh ids unless `ids` are given (an import keeps the exported ones)."""
    positions = list(indexes) if indexes is not None else list(range(len(split.pieces)))
    chunk_ids = list(ids) if ids is not None else [new_id() for _ in positions]
    return [
        _row(chunk_id, i, split.pieces[i], vector, split.context)
        for i, chunk_id, vector in zip(positions, chunk_ids, vectors, strict=True)
    ]


def _row(chunk_id: str, index: int, text: str, vector: list[float], context: str | None) -> ChunkRow:
    return ChunkRow(id=chunk_id, index=index, text=text, embedding=vector, context=context)
