"""How a memory and its chunks are turned into stored rows, shared by `add_memory` and import."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence

from zapomni_core.models import MemoryMetadata, parse_iso8601
from zapomni_core.search.analyzer import TermCounts
from zapomni_db import ChunkRow, MemoryRecord


def memory_record(memory_id: str, text: str, created_at: float, metadata: MemoryMetadata | None) -> MemoryRecord:
    """The stored form of a memory; `add_memory` and `import_memories` build it the same way."""
    date = metadata.date if metadata else None
    return MemoryRecord(
        id=memory_id,
        text=text,
        created_at=created_at,
        tags=list(metadata.tags) if metadata else [],
        source=metadata.source if metadata else None,
        date=date,
        date_ts=parse_iso8601(date).timestamp() if date else created_at,
        metadata_json=json.dumps(metadata.extra() if metadata else {}, sort_keys=True),
    )


def chunk_rows(
    pieces: Sequence[str],
    vectors: Sequence[list[float]],
    term_counts: Sequence[TermCounts],
    ids: Sequence[str] | None = None,
) -> list[ChunkRow]:
    """A memory's chunks in order; fresh ids unless `ids` are given (an import keeps the exported ones)."""
    chunk_ids = list(ids) if ids is not None else [str(uuid.uuid4()) for _ in pieces]
    return [
        ChunkRow(
            id=chunk_id,
            index=i,
            text=piece,
            embedding=vector,
            terms=counts.terms,
            counts=counts.counts,
            length=counts.length,
        )
        for i, (chunk_id, piece, vector, counts) in enumerate(zip(chunk_ids, pieces, vectors, term_counts, strict=True))
    ]
