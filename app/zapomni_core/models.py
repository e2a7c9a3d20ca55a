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

Tag = Annotated[str, Field(min_length=1, max_length=100)]
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


class MemoryMetadata(BaseModel):
    """`tags`, `source`, `date`, plus any flat string/number/boolean keys."""

    model_config = ConfigDict(extra="allow", strict=True)
    __pydantic_extra__: dict[str, MetadataValue] = Field(init=False)

    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS, description="Labels to filter by.")
    source: str | None = Field(None, min_length=1, max_length=500, description="Where the text came from.")
    date: str | None = Field(
        None, description="ISO 8601 date or datetime the memory is about (default: when it was added)."
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
        return dict(self.model_extra or {})


class AddMemoryRequest(_Strict):
    text: str = Field(
        min_length=1,
        description="The text to remember: 1 byte to 10 MB of UTF-8, not only whitespace.",
        # The byte bound is checked below; the schema shows the (looser) character bound.
        json_schema_extra={"maxLength": MAX_TEXT_BYTES},
    )
    metadata: MemoryMetadata | None = Field(None, description="Optional tags, source, date and flat extra keys.")

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must contain something other than whitespace")
        size = len(value.encode("utf-8", errors="surrogatepass"))
        if size > MAX_TEXT_BYTES:
            raise ValueError(f"must be at most {MAX_TEXT_BYTES} bytes of UTF-8 (got {size})")
        return value


class SearchFilters(_Strict):
    tags: list[Tag] | None = Field(None, max_length=MAX_TAGS, description="Match memories with any of these tags.")
    source: str | None = Field(None, min_length=1, max_length=500, description="Match this source exactly.")
    date_from: str | None = Field(None, description="ISO 8601; memories dated at or after this.")
    date_to: str | None = Field(None, description="ISO 8601; memories dated at or before this.")

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


class SearchRequest(_Strict):
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

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must contain something other than whitespace")
        return value


class AddMemoryResult(BaseModel):
    memory_id: str = Field(description="UUID of the stored memory.")
    chunks_created: int
    text_preview: str = Field(description=f"The first {PREVIEW_CHARS} characters of the text.")


class SearchHit(BaseModel):
    memory_id: str
    chunk_id: str
    text: str = Field(description="The matching chunk.")
    similarity_score: float = Field(ge=0.0, le=1.0, description="Cosine similarity to the query, clamped to [0, 1].")
    rank_score: float = Field(description="Reciprocal-rank-fusion score the results are ordered by.")
    matched_by: list[Literal["vector", "keyword"]] = Field(description="Which retrieval legs found this chunk.")
    tags: list[str]
    source: str | None
    timestamp: str = Field(description="When the memory was added (ISO 8601, UTC).")
    date: str | None = Field(None, description="The memory's own date from its metadata, if any.")


class SearchResult(BaseModel):
    results: list[SearchHit]
    count: int


class Stats(BaseModel):
    total_memories: int
    total_chunks: int
    database_size_mb: float
    graph_name: str
    embedder: str
    embedding_dimension: int
    avg_query_latency_ms: float | None = Field(description="Mean search latency in this process; null before any.")
    cache_hit_rate: float | None = Field(description="Embedding cache hits / lookups in this process; null before any.")
    cache_backend: Literal["redis", "memory"] = Field(description="Where embeddings are cached.")
    uptime_s: float
