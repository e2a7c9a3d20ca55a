"""One memory's extracted chunk graphs, resolved against the workspace's entities, as the rows the store writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from zapomni_core.graph.merge import EntityIndex, merge_chunk_entities
from zapomni_core.graph.types import ChunkGraph
from zapomni_core.memories.writing import new_id
from zapomni_core.validation import parse_iso8601
from zapomni_db import EntityRow, MentionRow, RelationRow, StoredChunk, StoredMemory


@dataclass
class MemoryGraphRows:
    entities: list[EntityRow] = field(default_factory=list)
    mentions: list[MentionRow] = field(default_factory=list)
    relations: list[RelationRow] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what the extractor or the merge repaired or dropped


def valid_from(memory: StoredMemory) -> tuple[str, float]:
    """When the memory's facts hold from: its own date when it has one, else when it was added."""
    if memory.info.date:
        return memory.info.date, parse_iso8601(memory.info.date).timestamp()
    added = datetime.fromtimestamp(memory.info.created_at, UTC)
    return added.isoformat(timespec="seconds"), added.timestamp()


def memory_graph_rows(
    memory: StoredMemory, chunks: Sequence[StoredChunk], graphs: Sequence[ChunkGraph], index: EntityIndex
) -> MemoryGraphRows:
    """Resolve each chunk's graph into `index` (so later chunks and memories match these entities) and
    flatten them into entity, mention and relation rows; one relation row per chunk that states it."""
    since, since_ts = valid_from(memory)
    rows = MemoryGraphRows()
    entities: dict[str, EntityRow] = {}
    for chunk, graph in zip(chunks, graphs, strict=True):
        rows.problems.extend(graph.problems)
        merged = merge_chunk_entities(graph, index)
        rows.problems.extend(f"chunk {chunk.index + 1}: {problem}" for problem in merged.problems)
        for entity in merged.entities:
            before = entities.get(entity.key)
            aliases = list(before.aliases) if before else []
            aliases += [alias for alias in entity.aliases if alias not in aliases]
            entities[entity.key] = EntityRow(
                key=entity.key,
                id=before.id if before else new_id(),
                name=entity.name,  # the index keeps the winning display name; the latest chunk has it
                type=entity.type,
                aliases=aliases,
                description=entity.description or (before.description if before else None),
                confidence=entity.confidence,
            )
            rows.mentions.append(
                MentionRow(chunk.id, entity.key, entity.count, entity.confidence, memory_id=memory.info.id)
            )
        rows.relations.extend(
            RelationRow(
                **asdict(fact),
                id=new_id(),
                chunk_id=chunk.id,
                valid_from=since,
                valid_from_ts=since_ts,
                memory_id=memory.info.id,
            )
            for fact in merged.relations
        )
    rows.entities = list(entities.values())
    return rows
