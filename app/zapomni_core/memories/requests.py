"""The memory tools' requests: what may be stored, searched, listed, read, changed and deleted."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

# Declared once in content.metadata; the requests take them as they are (`as`: exported from here too).
from zapomni_core.content.metadata import MAX_METADATA_BYTES as MAX_METADATA_BYTES
from zapomni_core.content.metadata import MAX_TAGS as MAX_TAGS
from zapomni_core.content.metadata import MAX_TEXT_BYTES as MAX_TEXT_BYTES
from zapomni_core.content.metadata import MemoryMetadata as MemoryMetadata
from zapomni_core.content.metadata import MetadataValue as MetadataValue
from zapomni_core.content.metadata import Tag as Tag
from zapomni_core.search.types import SearchMode
from zapomni_core.validation import BLANK_RULE, UUID_PATTERN, ScopedRequest, StrictModel, is_blank, parse_iso8601
from zapomni_db import ListedKind, SearchFilter

MAX_QUERY_CHARS = 1000
MAX_LIMIT = 100
MAX_DELETE_IDS = 1000
MAX_PAGE = 100

MemoryId = Annotated[
    str, Field(pattern=UUID_PATTERN, description="A memory's id, as add_memory returned it (a lowercase UUID).")
]


def _text_field(description: str, **default: Any) -> Any:
    # The byte bound is checked by `_check_text`; the schema shows the (looser) character bound.
    return Field(**default, min_length=1, description=description, json_schema_extra={"maxLength": MAX_TEXT_BYTES})


def _check_text(value: str) -> str:
    if is_blank(value):
        raise ValueError(BLANK_RULE)
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise ValueError(f"must be at most {MAX_TEXT_BYTES} bytes of UTF-8 (got {size})")
    return value


def _replaces_field() -> Any:
    return Field(
        None,
        min_length=1,
        max_length=MAX_LIMIT,
        description="Ids of older memories this one replaces (it states their current value): linked as replaced "
        "(superseded_by) whatever their wording, kept through later changes, and undone with not_replaced_by.",
    )


class AddMemoryRequest(ScopedRequest):
    text: str = _text_field("The text to remember: 1 byte to 10 MB of UTF-8, not only whitespace.")
    metadata: MemoryMetadata | None = Field(
        None, description="Optional tags, source, date, speaker and thread (a conversation turn) and flat extra keys."
    )
    replaces: list[MemoryId] | None = _replaces_field()

    _text = field_validator("text")(_check_text)


class SearchFilters(StrictModel):
    tags: list[Tag] | None = Field(None, max_length=MAX_TAGS, description="Match memories with any of these tags.")
    source: str | None = Field(None, min_length=1, max_length=500, description="Match this source exactly.")
    date_from: str | None = Field(None, description="ISO 8601; memories dated at or after this.")
    date_to: str | None = Field(None, description="ISO 8601; memories dated at or before this.")
    kind: ListedKind | None = Field(
        None,
        description="note: added with add_memory, not a turn; turn: a conversation turn (a memory with a speaker "
        "or a thread, sent in metadata or inferred); document: read by ingest_path; code: read by index_codebase.",
    )
    thread: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Conversation turns of this thread (metadata.thread, else the inferred thread).",
    )
    speaker: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Conversation turns said by this speaker, exactly as stored (metadata.speaker, else the speaker "
        "inferred from a leading 'Name:').",
    )

    current_only: bool = Field(
        False,
        description="Only memories that are current: none that a newer memory replaced (see superseded_by).",
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

    def to_store(self) -> SearchFilter:
        """The same filters as the database applies them (dates as timestamps)."""
        return SearchFilter(
            tags=self.tags,
            source=self.source,
            date_from_ts=parse_iso8601(self.date_from).timestamp() if self.date_from else None,
            date_to_ts=parse_iso8601(self.date_to).timestamp() if self.date_to else None,
            kind=self.kind,
            thread=self.thread,
            speaker=self.speaker,
            current_only=self.current_only,
        )


class SearchRequest(ScopedRequest):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for (1-1000 characters).")
    limit: int = Field(10, ge=1, le=MAX_LIMIT, description="How many results (1-100).")
    filters: SearchFilters | None = Field(None, description="Narrow the search; all given filters must match.")
    mode: SearchMode = Field(
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
        if is_blank(value):
            raise ValueError(BLANK_RULE)
        return value


class DeleteMemoryRequest(ScopedRequest):
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
        if self.filters is not None and not self.filters.to_store().active:
            raise ValueError(
                "filters: give at least one of tags, source, date_from, date_to, kind, thread, speaker "
                "(an empty filter is refused)"
            )
        return self


class ListMemoriesRequest(ScopedRequest):
    filters: SearchFilters | None = Field(
        None, description="Only memories matching these filters (as in search_memory)."
    )
    limit: int = Field(20, ge=1, le=MAX_PAGE, description=f"Memories per page (1-{MAX_PAGE}).")
    cursor: str | None = Field(
        None, min_length=1, max_length=200, description="next_cursor of the previous page, to continue from there."
    )
    order: Literal["newest", "oldest"] = Field("newest", description="newest first (default) or oldest first.")


class GetMemoryRequest(ScopedRequest):
    memory_id: MemoryId


class FindUpdatesRequest(ScopedRequest):
    """Link the workspace's stored memories that newer ones replaced (a store filled before detection)."""


class UpdateMemoryRequest(ScopedRequest):
    memory_id: MemoryId
    text: str | None = _text_field(
        "The new text (replaces the old; only changed chunks are re-embedded).", default=None
    )
    metadata: MemoryMetadata | None = Field(
        None, description="The new metadata; replaces the old as a whole (tags, source, date, extra keys)."
    )
    not_replaced_by: list[MemoryId] | None = Field(
        None,
        min_length=1,
        max_length=MAX_LIMIT,
        description="Undo wrong update links: these newer memories do not replace this one. Their links "
        "(superseded_by) are removed and never made again.",
    )
    replaces: list[MemoryId] | None = _replaces_field()

    @field_validator("text")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        return None if value is None else _check_text(value)

    @model_validator(mode="after")
    def _something(self) -> UpdateMemoryRequest:
        if self.text is None and self.metadata is None and self.not_replaced_by is None and self.replaces is None:
            raise ValueError("give text, metadata, replaces or not_replaced_by: there is nothing to update")
        if both := set(self.replaces or ()) & set(self.not_replaced_by or ()):
            raise ValueError(f"replaces and not_replaced_by both name memory {sorted(both)[0]}: give it in one")
        return self
