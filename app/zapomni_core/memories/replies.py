"""The memory tools' replies, and how stored records become them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, Protocol, Self

from pydantic import BaseModel, Field

from zapomni_core.content.metadata import MetadataValue
from zapomni_core.search import Ranked
from zapomni_core.validation import iso
from zapomni_db import ListedKind, MemoryInfo, MemoryStatus, StoredChunk, StoredMemory

PREVIEW_CHARS = 200


class LinkedMemory(BaseModel):
    """The other side of an update link: a memory that replaced this one, or one this one replaced."""

    memory_id: str
    date: str = Field(description="That memory's date (metadata.date, else when it was added).")
    preview: str
    attribute: str = Field(
        description="What changed: home, work, phone, name, favourite, schedule, ...; stated: the client said so "
        "(add_memory or update_memory replaces)."
    )
    subject: str = Field(description="Whose: a speaker or a name ('self': the workspace's owner).")
    cues: list[str] = Field(description="The words in the newer memory that say the value changed.")
    confidence: float
    evidence: str = Field(description="The newer memory's sentence that states the change.")


def _superseded_by() -> Any:
    """A memory's update links (zapomni_core.memories.supersession), on every result that names a memory."""
    return Field(
        default_factory=list,
        description="Newer memories that state a new value of what this one says (newest first): this one is no "
        "longer current, and kept as history. Empty: nothing replaced it.",
    )


def _supersedes() -> Any:
    return Field(default_factory=list, description="Older memories this one replaced (newest first).")


class Linked(Protocol):
    """A result that carries a memory's update links."""

    memory_id: str
    superseded_by: list[LinkedMemory]
    supersedes: list[LinkedMemory]

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self: ...


class MemoryFields(BaseModel):
    """What every result says about a memory: declared here once, shared by hits, pages and details."""

    memory_id: str
    workspace: str
    tags: list[str]
    source: str | None
    date: str | None = Field(None, description="The memory's own date from its metadata, if any.")
    created_at: str = Field(description="When the memory was added (ISO 8601, UTC).")
    updated_at: str = Field(description="When it last changed (ISO 8601, UTC); created_at if never.")
    chunk_count: int
    status: MemoryStatus = Field(
        "indexed",
        description="indexed: searchable. A large add is stored at once and indexed by a background job: "
        "indexing until its chunks are searchable, failed if that job failed (job_status says why).",
    )
    job_id: str | None = Field(None, description="The job that indexes (or indexed) this memory, for a large add.")
    kind: ListedKind = Field(
        "note",
        description="note (add_memory), turn (a conversation turn: a memory with a speaker or a thread, sent or "
        "inferred), document (ingest_path) or code (index_codebase); for a file, source is its path.",
    )
    speaker: str | None = Field(
        None, description="A conversation turn's speaker: metadata.speaker, else the one inferred from 'Name:'."
    )
    thread: str | None = Field(
        None, description="A conversation turn's thread: metadata.thread, else the inferred one."
    )
    superseded_by: list[LinkedMemory] = _superseded_by()
    supersedes: list[LinkedMemory] = _supersedes()

    @classmethod
    def of(cls, info: MemoryInfo, workspace: str, **fields: Any) -> Self:
        """This result for a stored memory: the shared fields from `info`, the result's own from `fields`."""
        return cls(
            memory_id=info.id,
            workspace=workspace,
            tags=info.tags,
            source=info.source,
            date=info.date,
            created_at=iso(info.created_at),
            updated_at=iso(info.updated_at),
            chunk_count=info.chunk_count,
            status=info.status,
            job_id=info.job_id,
            kind=info.kind,
            speaker=info.speaker,
            thread=info.thread,
            **fields,
        )


class MemorySummary(MemoryFields):
    preview: str = Field(description=f"The first {PREVIEW_CHARS} characters of the text, whitespace collapsed.")


class MemoryDetail(MemoryFields):
    text: str
    metadata: dict[str, MetadataValue] = Field(description="The extra metadata keys (besides tags, source, date).")
    inferred: dict[str, str] = Field(
        default_factory=dict,
        description="What the server read into the memory that was not sent: a speaker from a leading 'Name:', "
        "a thread from the client session and the time between its turns. Metadata stays as sent.",
    )


class ChunkOut(BaseModel):
    """One chunk of a memory, where it sits in the file it came from (page, section or symbol, lines)."""

    chunk_id: str
    index: int
    text: str
    page: int | None = None
    section: str | None = None
    line_start: int | None = None
    line_end: int | None = None


class MemoryChunks(BaseModel):
    memory_id: str
    workspace: str
    chunks: list[ChunkOut] = Field(description="In order; a large add still indexing has none yet.")


class MemoryPage(BaseModel):
    workspace: str
    memories: list[MemorySummary]
    count: int
    next_cursor: str | None = Field(description="Pass as cursor for the next page; null on the last page.")


class AddMemoryResult(BaseModel):
    memory_id: str = Field(description="UUID of the stored memory (the existing one when deduplicated).")
    workspace: str
    chunks_created: int
    deduplicated: bool = Field(
        False,
        description="True when the same text (whitespace aside) was already stored in this workspace: its id is "
        "returned, its tags gain the new ones and empty source/date/extra keys are filled in.",
    )
    text_preview: str = Field(description=f"The first {PREVIEW_CHARS} characters of the text.")
    status: MemoryStatus = Field(
        "indexed",
        description="indexed: searchable now. indexing: a large text, stored durably and answered at once; a "
        "background job (job_id) makes it searchable — follow it with job_status.",
    )
    job_id: str | None = Field(None, description="The job indexing this memory, when status is indexing.")
    superseded_by: list[LinkedMemory] = _superseded_by()
    supersedes: list[LinkedMemory] = _supersedes()


class UpdateMemoryResult(BaseModel):
    memory_id: str
    workspace: str
    text_changed: bool
    metadata_changed: bool
    chunk_count: int
    chunks_embedded: int = Field(description="Chunks whose text changed and were embedded again.")
    chunks_kept: int = Field(description="Chunks whose text was unchanged and kept their vectors.")
    unlinked: list[str] = Field(
        default_factory=list, description="With not_replaced_by: the newer memories no longer linked as replacing it."
    )
    stated: list[str] = Field(
        default_factory=list, description="With replaces: the older memories now linked as replaced by it."
    )
    superseded_by: list[LinkedMemory] = _superseded_by()
    supersedes: list[LinkedMemory] = _supersedes()


class FindUpdatesResult(BaseModel):
    job_id: str = Field(description="Follow it with job_status; one already queued or running is returned instead.")
    workspace: str
    memories: int = Field(description="Memories the job reads (every memory of the workspace, oldest first).")
    queued: bool = Field(description="False when a find_updates job of this workspace was already pending or running.")


class DeleteMemoryResult(BaseModel):
    workspace: str
    dry_run: bool
    deleted_count: int = Field(description="Memories deleted (or, in a dry run, that would be).")
    memory_ids: list[str]
    not_found: list[str] = Field(default_factory=list, description="Requested ids that are not in this workspace.")


class HitRelation(BaseModel):
    type: str
    predicate: str
    other: str = Field(description="The entity at the other end.")
    direction: str
    strength: float
    method: str
    valid_from: str | None
    superseded: bool = False


class HitEntity(BaseModel):
    name: str
    type: str
    relations: list[HitRelation] = Field(description="Its strongest 1-hop relations.")


class SearchHit(MemoryFields):
    chunk_id: str
    text: str = Field(description="The matching chunk.")
    similarity_score: float | None = Field(
        ge=0.0,
        le=1.0,
        description="Cosine similarity to the query, clamped to [0, 1]; null only in an answer given before the "
        "database had loaded (see the result's note).",
    )
    rank_score: float = Field(description="The fused score the results are ordered by (on RRF's scale).")
    page: int | None = Field(None, description="A document's chunk: the PDF page it is on.")
    section: str | None = Field(
        None, description="A document's chunk: its heading path ('Install > From source'); code: its symbol."
    )
    line_start: int | None = Field(None, description="A code chunk: its first line in the file (source).")
    line_end: int | None = Field(None, description="A code chunk: its last line.")
    matched_by: list[Literal["vector", "keyword", "graph", "update"]] = Field(
        description="Which retrieval legs found this chunk (graph: linked by shared entities, when expansion is on; "
        "update: none, it is the newer memory of a hit it replaced, shown with it)."
    )
    entities: list[HitEntity] | None = Field(
        None, description="With graph_context: the entities this chunk mentions and their strongest relations."
    )

    def location(self) -> str | None:
        """The source with the chunk's place in it: path:12-40 Class.method, path p. 3, path § Install > Linux."""
        if self.source is None:
            return None
        if self.line_start is not None:
            return f"{self.source}:{self.line_start}-{self.line_end}" + (f" {self.section}" if self.section else "")
        page = f" p. {self.page}" if self.page is not None else ""
        section = f" § {self.section}" if self.section else ""
        return f"{self.source}{page}{section}"


class SearchResult(BaseModel):
    workspace: str
    results: list[SearchHit]
    count: int
    legs: list[Literal["vector", "keyword", "graph"]] = Field(
        default_factory=list, description="the retrieval legs that answered"
    )
    note: str | None = Field(None, description="why a leg the mode asks for did not answer (results come without it)")


def preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def summary(info: MemoryInfo, text_start: str, workspace: str) -> MemorySummary:
    return MemorySummary.of(info, workspace, preview=preview(text_start))


def detail(memory: StoredMemory, workspace: str) -> MemoryDetail:
    return MemoryDetail.of(
        memory.info,
        workspace,
        text=memory.text,
        metadata=json.loads(memory.metadata_json),
        inferred=json.loads(memory.inferred_json or "{}"),
    )


def chunk_out(chunk: StoredChunk) -> ChunkOut:
    place = chunk.place
    return ChunkOut(
        chunk_id=chunk.id,
        index=chunk.index,
        text=chunk.text,
        page=place.page,
        section=place.section,
        line_start=place.line_start,
        line_end=place.line_end,
    )


def hit(ranked: Ranked, workspace: str) -> SearchHit:
    candidate = ranked.candidate
    place = candidate.hit.place
    return SearchHit.of(
        candidate.hit.memory,
        workspace,
        chunk_id=candidate.chunk_id,
        text=candidate.hit.text,
        similarity_score=round(candidate.similarity, 6),
        page=place.page,
        section=place.section,
        line_start=place.line_start,
        line_end=place.line_end,
        rank_score=ranked.rank_score,
        matched_by=ranked.legs,
    )
