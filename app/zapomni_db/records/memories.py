"""What `MemoryWrites` and `MemoryReads` take and return: memories and their chunks. A memory's listed
fields are declared once, in `MemoryInfo`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from zapomni_db._cypher import KIND

# "indexed" (searchable), or for a large add indexed by a job: "indexing", then "indexed" or "failed".
MemoryStatus = Literal["indexed", "indexing", "failed"]
# note: added by an agent; document / code: a file read by ingest_path / index_codebase (`source` is its path).
MemoryKind = Literal["note", "document", "code"]
# A memory's kind as listed and filtered (`_cypher.KIND`): its stored kind, except that a note with a speaker or a
# thread is a conversation turn.
ListedKind = Literal["note", "turn", "document", "code"]


@dataclass(frozen=True)
class MemoryRecord:
    """A memory to write."""

    id: str
    text: str
    created_at: float
    content_hash: str
    tags: list[str] = field(default_factory=list)
    source: str | None = None
    date: str | None = None
    # Seconds since the epoch of `date` when given, else of `created_at`: what date filters use.
    date_ts: float = 0.0
    metadata_json: str = "{}"
    updated_at: float | None = None
    # "note" (what an agent adds), "document" or "code" (a file ingested from disk, `source` its path).
    kind: str = "note"
    # A file's memory: the sha256 of the file's bytes, what re-ingestion compares.
    file_hash: str | None = None
    # The conversation a turn belongs to: the keyword index reads a turn with the ones before it.
    thread: str | None = None
    # What the server inferred and the agent did not send (a speaker, a thread), as JSON; None: nothing.
    inferred_json: str | None = None
    # Who said a turn: the agent's speaker, else the inferred one; what the speaker filter reads.
    speaker: str | None = None


@dataclass(frozen=True)
class ChunkPlace:
    """Where a chunk sits in the file it came from: a PDF page, a heading path or symbol, a line range."""

    page: int | None = None
    section: str | None = None
    line_start: int | None = None
    line_end: int | None = None

    WIDTH = 4

    @staticmethod
    def projection(chunk: str) -> str:
        """The Cypher projection that `from_row` reads, for a chunk bound to the variable `chunk`."""
        return ", ".join(f"{chunk}.{name}" for name in ("page", "section", "line_start", "line_end"))

    @classmethod
    def from_row(cls, row: list[Any], start: int = 0) -> ChunkPlace:
        page, section, line_start, line_end = row[start : start + cls.WIDTH]
        return cls(page=page, section=section, line_start=line_start, line_end=line_end)


@dataclass(frozen=True)
class ChunkRow:
    id: str
    index: int
    text: str
    embedding: list[float]
    place: ChunkPlace = ChunkPlace()
    # Read before the text when embedding and counting terms, e.g. who said it and when
    # (zapomni_core.conversation); kept apart so the chunk's text stays what was stored.
    context: str | None = None


@dataclass(frozen=True)
class MemoryInfo:
    """The fields every listing of a memory carries (search hits, pages, details, exports)."""

    id: str
    tags: list[str]
    source: str | None
    date: str | None
    created_at: float
    updated_at: float
    chunk_count: int
    status: MemoryStatus = "indexed"
    job_id: str | None = None
    kind: ListedKind = "note"
    # A conversation turn's speaker and thread (the agent's, else the inferred ones).
    speaker: str | None = None
    thread: str | None = None
    # The database's number for the memory's node when it was read: what else a request reads of the memory is
    # found by it without an index (`UpdateLinks.of`), as fast while the indexes are built after a load.
    node: int | None = None

    # The Cypher projection that `from_row` reads, for a memory bound to `m`.
    PROJECTION = (
        "m.id, m.tags, m.source, m.date, m.created_at, coalesce(m.updated_at, m.created_at), m.chunk_count, "
        f"coalesce(m.status, 'indexed'), m.job_id, {KIND}, m.speaker, m.thread, ID(m)"
    )
    WIDTH = 13

    @classmethod
    def from_row(cls, row: list[Any], start: int = 0) -> MemoryInfo:
        r = row[start : start + cls.WIDTH]
        return cls(
            id=r[0],
            tags=list(r[1] or []),
            source=r[2],
            date=r[3],
            created_at=float(r[4]),
            updated_at=float(r[5]),
            chunk_count=int(r[6] or 0),
            status=r[7] or "indexed",
            job_id=r[8],
            kind=r[9] or "note",
            speaker=r[10],
            thread=r[11],
            node=r[12],
        )


@dataclass(frozen=True)
class StoredMemory:
    """A memory as stored, without its chunks: what get_memory and an export read."""

    info: MemoryInfo
    text: str
    metadata_json: str
    content_hash: str | None
    seq: int
    file_hash: str | None = None  # a file's memory (see MemoryRecord.file_hash)
    inferred_json: str | None = None  # as in MemoryRecord


@dataclass(frozen=True)
class StoredChunk:
    memory_id: str
    id: str
    index: int
    text: str
    embedding: list[float]
    place: ChunkPlace = ChunkPlace()
    context: str | None = None  # as in ChunkRow


@dataclass(frozen=True)
class SearchFilter:
    tags: list[str] | None = None
    source: str | None = None
    date_from_ts: float | None = None
    date_to_ts: float | None = None
    kind: str | None = None
    thread: str | None = None
    speaker: str | None = None
    # Only memories no newer memory replaced (zapomni_db.updates); not a selection of its own for a delete.
    current_only: bool = False

    @property
    def active(self) -> bool:
        return bool(self.tags) or any(
            v is not None
            for v in (self.source, self.date_from_ts, self.date_to_ts, self.kind, self.thread, self.speaker)
        )

    @property
    def narrows(self) -> bool:
        """Whether fewer memories pass than exist: a search leg then reads more candidates."""
        return self.active or self.current_only

    def as_params(self) -> dict[str, Any]:
        return {
            "tags": self.tags or None,
            "source": self.source,
            "date_from": self.date_from_ts,
            "date_to": self.date_to_ts,
            "kind": self.kind,
            "thread": self.thread,
            "speaker": self.speaker,
            "current": True if self.current_only else None,
        }


@dataclass(frozen=True)
class PageKey:
    """Where a page of memories continues: after this (creation time in microseconds, id) in the page's order."""

    created_us: int
    memory_id: str
