"""The engine's public contract: validated requests and typed results.

The MCP tools expose these models as their input and output schemas and the CLI builds the same
requests, so every adapter enforces one set of constraints.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_TEXT_BYTES = 10 * 1024 * 1024
MAX_METADATA_BYTES = 10 * 1024
MAX_QUERY_CHARS = 1000
MAX_LIMIT = 100
MAX_TAGS = 50
PREVIEW_CHARS = 200
MAX_DELETE_IDS = 1000
MAX_PAGE = 100
DEFAULT_WORKSPACE = "default"
WORKSPACE_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"
WORKSPACE_RULE = "1-63 lowercase letters, digits, '-' or '_', starting with a letter or digit"
UUID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"

Tag = Annotated[str, Field(min_length=1, max_length=100)]
WorkspaceName = Annotated[str, Field(pattern=WORKSPACE_PATTERN, description=f"Workspace name: {WORKSPACE_RULE}.")]
MemoryId = Annotated[
    str, Field(pattern=UUID_PATTERN, description="A memory's id, as add_memory returned it (a lowercase UUID).")
]
MemoryStatus = Literal["indexed", "indexing", "failed"]
# note: added by an agent; document / code: a file read by ingest_path / index_codebase (`source` is its path).
MemoryKind = Literal["note", "document", "code"]
# Flat metadata values: FalkorDB properties hold primitives only.
MetadataValue = str | int | float | bool


def parse_iso8601(value: str) -> datetime:
    """Parse an ISO 8601 date or datetime; naive values are taken as UTC."""
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        raise ValueError(
            f"must be an ISO 8601 date or datetime such as 2024-05-01 or 2024-05-01T13:45:00Z (got {value!r:.40})"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class _Strict(BaseModel):
    # strict: "5" is not a number and true is not 1; agents get told instead of silently coerced.
    model_config = ConfigDict(extra="forbid", strict=True)


class _Scoped(_Strict):
    """A request that acts on one workspace; None means the server's default (ZAPOMNI_WORKSPACE)."""

    workspace: WorkspaceName | None = Field(
        None,
        description=f"Which workspace ({WORKSPACE_RULE}); default: the server's, normally 'default'. "
        "Workspaces are fully isolated from each other.",
    )


def _text_field(description: str, **default: Any) -> Any:
    # The byte bound is checked by `_check_text`; the schema shows the (looser) character bound.
    return Field(**default, min_length=1, description=description, json_schema_extra={"maxLength": MAX_TEXT_BYTES})


def _check_text(value: str) -> str:
    if not value.strip():
        raise ValueError("must contain something other than whitespace")
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise ValueError(f"must be at most {MAX_TEXT_BYTES} bytes of UTF-8 (got {size})")
    return value


class MemoryMetadata(BaseModel):
    """`tags`, `source`, `date`, a conversation turn's `speaker` and `thread`, and flat string/number/boolean keys."""

    model_config = ConfigDict(extra="allow", strict=True)
    __pydantic_extra__: dict[str, MetadataValue] = Field(init=False)

    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS, description="Labels to filter by.")
    source: str | None = Field(None, min_length=1, max_length=500, description="Where the text came from.")
    date: str | None = Field(
        None, description="ISO 8601 date or datetime the memory is about (default: when it was added)."
    )
    # A conversation turn: stored one turn per memory, it is read with who said it, when, and the
    # turns before it (zapomni_core.conversation).
    speaker: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="For a conversation turn: who said it. Indexed with the text as 'speaker (date): text'.",
    )
    thread: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="For a conversation turn: the conversation it belongs to (one id per chat session). "
        "Search reads each turn together with the turns before it in the same thread, so add a "
        "thread's turns in the order they were said.",
    )

    @field_validator("date")
    @classmethod
    def _iso_date(cls, value: str | None) -> str | None:
        return None if value is None else parse_iso8601(value).isoformat()

    @model_validator(mode="after")
    def _bounded(self) -> MemoryMetadata:
        for key in self.model_extra or {}:
            if not key or len(key) > 64:
                raise ValueError("keys must be 1 to 64 characters long")
        size = len(json.dumps(self.model_dump(exclude_none=True)).encode())
        if size > MAX_METADATA_BYTES:
            raise ValueError(f"must be at most {MAX_METADATA_BYTES} bytes as JSON (got {size})")
        return self

    def extra(self) -> dict[str, Any]:
        """What is stored as the memory's extra metadata: the flat keys, and a turn's speaker and thread."""
        turn = {key: value for key, value in (("speaker", self.speaker), ("thread", self.thread)) if value is not None}
        return dict(self.model_extra or {}) | turn


class AddMemoryRequest(_Scoped):
    text: str = _text_field("The text to remember: 1 byte to 10 MB of UTF-8, not only whitespace.")
    metadata: MemoryMetadata | None = Field(
        None, description="Optional tags, source, date, speaker and thread (a conversation turn) and flat extra keys."
    )

    _text = field_validator("text")(_check_text)


class SearchFilters(_Strict):
    tags: list[Tag] | None = Field(None, max_length=MAX_TAGS, description="Match memories with any of these tags.")
    source: str | None = Field(None, min_length=1, max_length=500, description="Match this source exactly.")
    date_from: str | None = Field(None, description="ISO 8601; memories dated at or after this.")
    date_to: str | None = Field(None, description="ISO 8601; memories dated at or before this.")
    kind: MemoryKind | None = Field(
        None, description="note: added with add_memory; document: read by ingest_path; code: read by index_codebase."
    )

    @field_validator("date_from", "date_to")
    @classmethod
    def _iso(cls, value: str | None, info: Any) -> str | None:
        if value is None:
            return None
        parsed = parse_iso8601(value)
        if info.field_name == "date_to" and len(value.strip()) == len("2024-05-01"):
            parsed = parsed.replace(hour=23, minute=59, second=59, microsecond=999_999)  # a whole day is inclusive
        return parsed.isoformat()

    @model_validator(mode="after")
    def _ordered(self) -> SearchFilters:
        if self.date_from and self.date_to and self.date_from > self.date_to:
            raise ValueError("date_from must not be later than date_to")
        return self

    @property
    def empty(self) -> bool:
        return not self.tags and all(v is None for v in (self.source, self.date_from, self.date_to, self.kind))


class SearchRequest(_Scoped):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for (1-1000 characters).")
    limit: int = Field(10, ge=1, le=MAX_LIMIT, description="How many results (1-100).")
    filters: SearchFilters | None = Field(None, description="Narrow the search; all given filters must match.")
    mode: Literal["hybrid", "vector", "keyword"] = Field(
        "hybrid",
        description="hybrid: meaning and exact words, fused (default); vector: meaning only; "
        "keyword: exact words only (names, identifiers, error codes).",
    )
    min_score: float | None = Field(
        None, ge=0.0, le=1.0, description="Drop results whose similarity_score is below this (0-1)."
    )
    all_chunks: bool = Field(
        False, description="Return every matching chunk; by default only the best chunk of each memory."
    )
    include_unrelated: bool = Field(
        False,
        description="Also return memories neither leg finds relevant (no query word in common and low "
        "similarity); by default they are left out instead of padding the results.",
    )
    graph_context: bool = Field(
        False,
        description="Attach to each result the knowledge-graph entities its chunk mentions, with their strongest "
        "1-hop relations (build_graph/graph_status tell whether the graph is built).",
    )

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must contain something other than whitespace")
        return value


class DeleteMemoryRequest(_Scoped):
    memory_ids: list[MemoryId] | None = Field(
        None, min_length=1, max_length=MAX_DELETE_IDS, description=f"Delete these memories (1-{MAX_DELETE_IDS} ids)."
    )
    filters: SearchFilters | None = Field(
        None, description="Or delete every memory matching these filters (at least one filter; as in search_memory)."
    )
    dry_run: bool = Field(False, description="Only report what would be deleted.")

    @model_validator(mode="after")
    def _one_selector(self) -> DeleteMemoryRequest:
        if (self.memory_ids is None) == (self.filters is None):
            raise ValueError("give either memory_ids or filters (exactly one of them)")
        if self.filters is not None and self.filters.empty:
            raise ValueError(
                "filters: give at least one of tags, source, date_from, date_to, kind (an empty filter is refused)"
            )
        return self


class ListMemoriesRequest(_Scoped):
    filters: SearchFilters | None = Field(
        None, description="Only memories matching these filters (as in search_memory)."
    )
    limit: int = Field(20, ge=1, le=MAX_PAGE, description=f"Memories per page (1-{MAX_PAGE}).")
    cursor: str | None = Field(
        None, min_length=1, max_length=200, description="next_cursor of the previous page, to continue from there."
    )
    order: Literal["newest", "oldest"] = Field("newest", description="newest first (default) or oldest first.")


class GetMemoryRequest(_Scoped):
    memory_id: MemoryId


class UpdateMemoryRequest(_Scoped):
    memory_id: MemoryId
    text: str | None = _text_field(
        "The new text (replaces the old; only changed chunks are re-embedded).", default=None
    )
    metadata: MemoryMetadata | None = Field(
        None, description="The new metadata; replaces the old as a whole (tags, source, date, extra keys)."
    )

    @field_validator("text")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        return None if value is None else _check_text(value)

    @model_validator(mode="after")
    def _something(self) -> UpdateMemoryRequest:
        if self.text is None and self.metadata is None:
            raise ValueError("give text, metadata or both: there is nothing to update")
        return self


class StatsRequest(_Scoped):
    pass


class NoArguments(_Strict):
    pass


class DeleteWorkspaceRequest(_Strict):
    name: WorkspaceName
    confirm: str = Field(description="The workspace's name again, to confirm: everything in it is deleted.")

    @model_validator(mode="after")
    def _confirmed(self) -> DeleteWorkspaceRequest:
        if self.confirm != self.name:
            raise ValueError(f"confirm must repeat the workspace name exactly ({self.name!r}); nothing was deleted")
        return self


# --- results ------------------------------------------------------------------------------------


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
    kind: MemoryKind = Field(
        "note", description="note (add_memory), document (ingest_path) or code (index_codebase); source is the file."
    )


class MemorySummary(MemoryFields):
    preview: str = Field(description=f"The first {PREVIEW_CHARS} characters of the text, whitespace collapsed.")


class MemoryDetail(MemoryFields):
    text: str
    metadata: dict[str, MetadataValue] = Field(description="The extra metadata keys (besides tags, source, date).")


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


class UpdateMemoryResult(BaseModel):
    memory_id: str
    workspace: str
    text_changed: bool
    metadata_changed: bool
    chunk_count: int
    chunks_embedded: int = Field(description="Chunks whose text changed and were embedded again.")
    chunks_kept: int = Field(description="Chunks whose text was unchanged and kept their vectors.")


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
    similarity_score: float = Field(ge=0.0, le=1.0, description="Cosine similarity to the query, clamped to [0, 1].")
    rank_score: float = Field(description="Reciprocal-rank-fusion score the results are ordered by.")
    page: int | None = Field(None, description="A document's chunk: the PDF page it is on.")
    section: str | None = Field(
        None, description="A document's chunk: its heading path ('Install > From source'); code: its symbol."
    )
    line_start: int | None = Field(None, description="A code chunk: its first line in the file (source).")
    line_end: int | None = Field(None, description="A code chunk: its last line.")
    matched_by: list[Literal["vector", "keyword", "graph"]] = Field(
        description="Which retrieval legs found this chunk (graph: linked by shared entities, when expansion is on)."
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


class WorkspaceInfo(BaseModel):
    name: str
    memories: int
    chunks: int


class WorkspaceList(BaseModel):
    workspaces: list[WorkspaceInfo]
    default: str = Field(description="The workspace tools use when none is given.")


class DeleteWorkspaceResult(BaseModel):
    name: str
    deleted_memories: int
    deleted_chunks: int


class Stats(BaseModel):
    workspace: str
    total_memories: int
    total_chunks: int
    workspaces: int = Field(description="Workspaces in this store.")
    database_size_mb: float = Field(description="Memory used by the whole database (every workspace).")
    graph_name: str
    embedder: str
    embedding_dimension: int
    avg_query_latency_ms: float | None = Field(description="Mean search latency in this process; null before any.")
    cache_hit_rate: float | None = Field(description="Embedding cache hits / lookups in this process; null before any.")
    cache_backend: Literal["redis", "memory"] = Field(description="Where embeddings are cached.")
    jobs: dict[str, int] = Field(
        default_factory=dict,
        description="This workspace's background jobs by state (pending, running, completed, completed_with_errors, "
        "failed, cancelled); list_jobs shows them.",
    )
    entities: int = Field(0, description="Knowledge-graph entities in this workspace.")
    relations: int = Field(0, description="Knowledge-graph relation edges (one per chunk stating a relation).")
    extraction_pending: int = Field(
        0, description="Memories waiting for entity extraction (the graph's queue); graph_status has more."
    )
    uptime_s: float
    disk_free_mb: float | None = Field(
        None, description="Free space on the disk of the data directory (embedded database); null in server mode."
    )
    disk_warning: str | None = Field(
        None, description="Set while free space is below ZAPOMNI_MIN_FREE_MB: writes are refused, reads go on."
    )
