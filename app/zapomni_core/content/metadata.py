"""A memory's metadata: tags, source, date, a conversation turn's speaker and thread, and flat keys of its own.

Declared once, here: the tools take it as it is (zapomni_core.memories.requests), the write pipeline reads it
(zapomni_core.kernel.writing), and the conversation helpers beside this file read a turn from it.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from zapomni_core.validation import parse_iso8601

MAX_TEXT_BYTES = 10 * 1024 * 1024  # the largest text a memory holds
MAX_METADATA_BYTES = 10 * 1024
MAX_TAGS = 50
MAX_TAG_CHARS = 100

Tag = Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS)]
# Flat metadata values: FalkorDB properties hold primitives only.
MetadataValue = str | int | float | bool


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
