"""What `SearchReads` returns: chunks found by a search leg, and the keyword index's statistics."""

from __future__ import annotations

from dataclasses import dataclass, field

from zapomni_db.records.memories import ChunkPlace, MemoryInfo


@dataclass(frozen=True)
class ChunkHit:
    """A chunk found by either search leg, with its memory and its cosine distance to the query vector."""

    memory: MemoryInfo
    chunk_id: str
    text: str
    distance: float
    place: ChunkPlace = field(default_factory=ChunkPlace)


@dataclass(frozen=True)
class Comparable:
    """A short note or turn as update detection reads it, with its cosine distance to the memory compared."""

    memory_id: str
    text: str
    speaker: str | None
    date: str | None
    created_at: float
    distance: float


@dataclass(frozen=True)
class Candidates:
    """The memories an added one is compared with for update detection, by how each was found."""

    nearest: list[Comparable]  # by the vector index
    ranked: list[Comparable]  # by the keyword index
    unread: list[Comparable]  # made visible since the keyword index last caught up


@dataclass(frozen=True)
class IndexedChunk:
    """What the keyword index reads of a chunk: the text it counts terms in (with its context), where it sits, and
    what a hit on it shows (its memory's fields and its place), which the index keeps to answer before the database
    has loaded."""

    chunk_id: str
    # The database's own number for the chunk's node: found by it without an index (`SearchReads.fetch_chunks`).
    node: int
    text: str
    memory: MemoryInfo
    context: str | None = None
    thread: str | None = None
    # Where the chunk sits in its thread: (memory date, memory created_at, chunk index).
    order: tuple[float, float, int] = (0.0, 0.0, 0)
    place: ChunkPlace = field(default_factory=ChunkPlace)


@dataclass(frozen=True)
class IndexChanges:
    """What the keyword index must apply to catch up with the store between two sequence numbers."""

    added: list[IndexedChunk]
    removed: list[str]
