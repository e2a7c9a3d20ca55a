"""The export file's lines (header, memory, entity, relation, end) and the types both directions share; see
`zapomni_core.transfer`."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from zapomni_core.errors import ZapomniError
from zapomni_core.memories.requests import MetadataValue
from zapomni_core.validation import DEFAULT_WORKSPACE, WorkspaceName, parse_iso8601
from zapomni_db import MemoryKind

# 2 added `workspace` to memory lines; a version 1 file is read as all in the default workspace.
# 3 added the knowledge graph: entity and relation lines, `graph_state` on memory lines, and their
# counts on the end line; a version 1 or 2 file imports with its memories pending for the graph.
# 4 added files: `kind` and `file_hash` on memory lines, `page`, `section`, `line_start`, `line_end` on
# chunks; an older file's memories are notes.
# 5 added update lines (which memory replaced which) and their count on the end line.
FORMAT_VERSION = 5
READABLE_VERSIONS = (1, 2, 3, 4, 5)
GRAPH_VERSION = 3
UPDATES_VERSION = 5
HEADER_TYPE = "zapomni-export"

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _uuid(value: str) -> str:
    # Ids are kept as they are, so they must already be in the form the engine writes.
    if not _UUID.fullmatch(value):
        raise ValueError(
            f"must be a UUID in lowercase hex, like 0f8e3a52-6c1d-4b7a-9e2f-5d4c3b2a1908 (got {value!r:.50})"
        )
    return value


Uuid = Annotated[str, AfterValidator(_uuid)]


def _flat(value: Any) -> MetadataValue:
    # Checked by hand rather than typed as a union, whose errors would name each member type.
    if not isinstance(value, str | int | float | bool):
        raise ValueError(f"must be a string, number or boolean (got {type(value).__name__})")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


FlatValue = Annotated[Any, AfterValidator(_flat)]
# Metadata keys a memory line carries as fields of its own, never inside `metadata`.
TOP_LEVEL_FIELDS = frozenset({"tags", "source", "date"})


class TransferError(ZapomniError):
    """An export or import that cannot go on. An import's message names the line and field of the problem."""


@dataclass(frozen=True)
class EmbedderInfo:
    """Which embedder's vectors a store (or a file) holds."""

    model: str
    dimension: int

    def __str__(self) -> str:
        return f"{self.model} ({self.dimension}-d)"


# Progress (`zapomni_core.progress.Progress`) counts memories; its message says which pass it is.
UNIT = "memories"
EXPORTING = "exporting"
VALIDATING = "validating (nothing written yet)"
IMPORTING = "importing (skipping those already stored)"


# --- the line formats ---------------------------------------------------------------------------


class _Line(BaseModel):
    # strict and closed: a wrong type or an unknown field is an error, not a silent coercion or loss.
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class EmbedderLine(_Line):
    model: str = Field(min_length=1)
    dimension: int = Field(ge=1, le=65_536)


class HeaderLine(_Line):
    type: Literal["zapomni-export"]
    format_version: Literal[1, 2, 3, 4, 5]
    exported_at: str
    zapomni_version: str
    embedder: EmbedderLine
    graph_name: str
    schema_version: int = Field(ge=0)

    @field_validator("exported_at")
    @classmethod
    def _iso(cls, value: str) -> str:
        parse_iso8601(value)
        return value


class ChunkLine(_Line):
    id: Uuid | None = None
    index: int = Field(ge=0)
    text: str = Field(min_length=1)
    embedding: list[float] | None = None
    # Where a file's chunk sits in it (ingest_path, index_codebase); absent for a note's.
    page: int | None = Field(None, ge=1)
    section: str | None = None
    line_start: int | None = Field(None, ge=1)
    line_end: int | None = Field(None, ge=1)

    @field_validator("embedding")
    @classmethod
    def _dimension(cls, value: list[float] | None, info: Any) -> list[float] | None:
        dimension = (info.context or {}).get("dimension")
        if value is not None and dimension is not None and len(value) != dimension:
            raise ValueError(f"must hold {dimension} numbers, the header's embedder dimension (got {len(value)})")
        return value


class MemoryLine(_Line):
    type: Literal["memory"]
    id: Uuid
    workspace: WorkspaceName = DEFAULT_WORKSPACE
    text: str
    created_at: str
    tags: list[str] = Field(default_factory=list)
    source: str | None = None
    date: str | None = None
    metadata: dict[str, FlatValue] = Field(default_factory=dict)
    # Empty or left out: the text is chunked on import, as `add` would.
    chunks: list[ChunkLine] = Field(default_factory=list)
    # "done": its knowledge graph is in the file's entity and relation lines; null: not built yet.
    graph_state: Literal["done"] | None = None
    # A file read by ingest_path (document) or index_codebase (code), with the hash of its bytes: a later
    # run finds it unchanged. A code file's graph is not in the file: the next index_codebase rebuilds it.
    kind: MemoryKind = "note"
    file_hash: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")

    @field_validator("created_at")
    @classmethod
    def _iso(cls, value: str) -> str:
        parse_iso8601(value)
        return value

    @field_validator("metadata")
    @classmethod
    def _flat_extra(cls, value: dict[str, MetadataValue]) -> dict[str, MetadataValue]:
        clash = sorted(TOP_LEVEL_FIELDS & value.keys())
        if clash:
            raise ValueError(f"{', '.join(clash)} belong at the top level of the line, not in metadata")
        return value

    @field_validator("chunks")
    @classmethod
    def _ordered(cls, value: list[ChunkLine]) -> list[ChunkLine]:
        for position, chunk in enumerate(value):
            if chunk.index != position:
                raise ValueError(f"must be listed by index 0, 1, 2, …; position {position} has index {chunk.index}")
        return value


class MentionLine(_Line):
    chunk_id: Uuid
    count: int = Field(ge=1)
    confidence: float = Field(ge=0.0, le=1.0)


class EntityLine(_Line):
    """An entity with the chunks that mention it (chunks of memory lines above it, same workspace)."""

    type: Literal["entity"]
    workspace: WorkspaceName = DEFAULT_WORKSPACE
    key: str = Field(min_length=1)
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    entity_type: str = Field(min_length=1)
    aliases: list[str] = Field(default_factory=list)
    description: str | None = None
    confidence: float = Field(ge=0.0, le=1.0)
    mentions: list[MentionLine] = Field(min_length=1)


class RelationLine(_Line):
    """One piece of evidence for a relation between two entities of entity lines above it."""

    type: Literal["relation"]
    workspace: WorkspaceName = DEFAULT_WORKSPACE
    id: str = Field(min_length=1)
    subject: str = Field(min_length=1)  # an entity key
    object: str = Field(min_length=1)  # an entity key
    relation_type: str = Field(min_length=1)
    predicate: str
    strength: float = Field(ge=0.0, le=1.0)
    evidence: str
    method: str = Field(min_length=1)
    memory_id: Uuid
    chunk_id: Uuid
    valid_from: str | None = None
    valid_from_ts: float | None = None
    superseded_by: str | None = None


class UpdateLine(_Line):
    """Memory `older` was replaced by memory `newer` (both memory lines above it, in its workspace)."""

    type: Literal["update"]
    workspace: WorkspaceName = DEFAULT_WORKSPACE
    older: Uuid
    newer: Uuid
    confidence: float = Field(ge=0.0, le=1.0)
    attribute: str
    subject: str
    cues: list[str] = Field(default_factory=list)
    evidence: str
    method: str = Field(min_length=1)


class EndLine(_Line):
    type: Literal["end"]
    memories: int = Field(ge=0)
    chunks: int = Field(ge=0)
    entities: int = Field(default=0, ge=0)
    relations: int = Field(default=0, ge=0)
    updates: int = Field(default=0, ge=0)


BodyLine = MemoryLine | EntityLine | RelationLine | UpdateLine | EndLine
# Any line after the header, told apart by `type`.
BODY_LINE: TypeAdapter[BodyLine] = TypeAdapter(Annotated[BodyLine, Field(discriminator="type")])
