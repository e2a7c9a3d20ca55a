"""Stored records → the result models users see; page cursors."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime

from zapomni_core.errors import InvalidRequest
from zapomni_core.models import PREVIEW_CHARS, MemoryDetail, MemorySummary, SearchHit
from zapomni_core.search import Ranked
from zapomni_db import MemoryInfo, PageKey, StoredMemory


def iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat()


def preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def memory_fields(info: MemoryInfo, workspace: str) -> dict[str, object]:
    """The `MemoryFields` of a stored memory, for any result model that extends it."""
    fields = {
        "memory_id": info.id,
        "workspace": workspace,
        "tags": info.tags,
        "source": info.source,
        "date": info.date,
        "created_at": iso(info.created_at),
        "updated_at": iso(info.updated_at),
        "chunk_count": info.chunk_count,
        "status": info.status,
        "job_id": info.job_id,
        "kind": info.kind,
    }
    return fields


def summary(info: MemoryInfo, text_start: str, workspace: str) -> MemorySummary:
    return MemorySummary(**memory_fields(info, workspace), preview=preview(text_start))  # type: ignore[arg-type]


def detail(memory: StoredMemory, workspace: str) -> MemoryDetail:
    return MemoryDetail(
        **memory_fields(memory.info, workspace),  # type: ignore[arg-type]
        text=memory.text,
        metadata=json.loads(memory.metadata_json),
    )


def hit(ranked: Ranked, workspace: str) -> SearchHit:
    candidate = ranked.candidate
    return SearchHit(
        **memory_fields(candidate.hit.memory, workspace),  # type: ignore[arg-type]
        chunk_id=candidate.chunk_id,
        text=candidate.hit.text,
        similarity_score=round(candidate.similarity, 6),
        page=candidate.hit.place.page,
        section=candidate.hit.place.section,
        line_start=candidate.hit.place.line_start,
        line_end=candidate.hit.place.line_end,
        rank_score=ranked.rank_score,
        matched_by=ranked.legs,
    )


def encode_cursor(key: PageKey, order: str) -> str:
    raw = json.dumps([order, key.created_us, key.memory_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, order: str) -> PageKey:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        cursor_order, created_us, memory_id = json.loads(raw)
        key = PageKey(created_us=int(created_us), memory_id=str(memory_id))
    except (binascii.Error, ValueError, TypeError) as exc:
        raise InvalidRequest("cursor: not a cursor this server made (pass next_cursor back unchanged)") from exc
    if cursor_order != order:
        raise InvalidRequest(f"cursor: it continues an order={cursor_order!r} listing; ask with that order")
    return key
