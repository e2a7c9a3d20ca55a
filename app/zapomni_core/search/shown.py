"""What the keyword index keeps of each chunk for its hits (decision 0045): the chunk's text and place and its
memory's fields, enough to answer a search before the database has loaded."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from zapomni_db import ChunkPlace, IndexedChunk, MemoryInfo


@dataclass(frozen=True)
class ShownChunk:
    text: str
    memory: MemoryInfo
    place: ChunkPlace


def shown(chunk: IndexedChunk) -> bytes:
    record = {"text": chunk.text, "memory": asdict(chunk.memory), "place": asdict(chunk.place)}
    return json.dumps(record, separators=(",", ":")).encode()


def read_shown(data: bytes) -> ShownChunk:
    record = json.loads(data)
    memory = record["memory"]
    return ShownChunk(
        text=record["text"],
        memory=MemoryInfo(**{**memory, "tags": list(memory["tags"])}),
        place=ChunkPlace(**record["place"]),
    )
