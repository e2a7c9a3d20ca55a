"""Export: every memory in the store written as a JSONL export, a page at a time."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import IO, Any

import numpy as np
import structlog

from zapomni_core.progress import Progress, ProgressFn
from zapomni_core.transfer.format import EXPORTING, FORMAT_VERSION, HEADER_TYPE, UNIT, EmbedderInfo, TransferError
from zapomni_db import GraphStore, GraphStores, MemoryReads, StoredChunk, StoredMemory, UpdateLinks
from zapomni_db.version import package_version

log = structlog.get_logger(__name__)

# Export: memories read per query (a window of `seq` numbers, like the keyword index's sync) and
# chunks per query; a memory with more chunks than that is written piece by piece.
EXPORT_SEQ_WINDOW = 256
EXPORT_CHUNK_PAGE = 1000
# Knowledge graph: entities (with their mentions) and relations read per query.
EXPORT_ENTITY_PAGE = 500
EXPORT_RELATION_PAGE = 2000


@dataclass(frozen=True)
class ExportSource:
    """One workspace to export: its name and its stores."""

    workspace: str
    stores: GraphStores


@dataclass(frozen=True)
class ExportReport:
    memories: int
    chunks: int
    embedder: str
    duration_s: float
    entities: int = 0
    relations: int = 0
    updates: int = 0


async def export_memories(
    sources: list[ExportSource],
    embedder: EmbedderInfo,
    out: IO[str],
    progress: ProgressFn | None = None,
    *,
    graph_name: str,
) -> ExportReport:
    """Write every memory of every workspace in `sources` to `out`, streaming a page at a time.

    Per workspace, memories stored while it runs are left out (they have later sequence numbers),
    so each workspace's part is a consistent cut: exactly the first N memories it made visible.
    Its knowledge graph follows its memories, restricted to the chunks written: entity lines (each
    with its mentions), then relation lines (see `_write_graph`).
    """
    started = time.perf_counter()
    total = 0
    for source in sources:
        total += (await source.stores.maintenance.counts()).memories
    header = {
        "type": HEADER_TYPE,
        "format_version": FORMAT_VERSION,
        "exported_at": datetime.now(UTC).isoformat(),
        "zapomni_version": package_version(),
        "embedder": {"model": embedder.model, "dimension": embedder.dimension},
        "graph_name": graph_name,
        "schema_version": await sources[0].stores.maintenance.schema_version() if sources else 0,
    }
    out.write(_dumps(header) + "\n")
    memories = chunks = entities = relations = updates = 0
    for source in sources:
        reads, workspace = source.stores.reads, source.workspace
        written: dict[str, str] = {}  # chunk id -> memory id, of the chunks written
        exported: set[str] = set()  # the memory ids written
        latest = await reads.latest_sequence()
        after = 0
        while after < latest:
            upto = min(latest, after + EXPORT_SEQ_WINDOW)
            page = await reads.memories_between(after, upto)
            states = await source.stores.graph.graph_states([m.info.id for m in page])
            for group in _chunk_groups(page):
                if len(group) == 1 and group[0].info.chunk_count > EXPORT_CHUNK_PAGE:
                    memory = group[0]
                    prefix = _memory_prefix(memory, workspace, states.get(memory.info.id))
                    chunks += await _write_large_memory(reads, memory, prefix, written, out)
                else:
                    by_memory = _by_memory(await reads.chunks_of([m.info.id for m in group]))
                    for memory in group:
                        stored = by_memory.get(memory.info.id, [])
                        _check_chunks(memory, stored, 0)
                        prefix = _memory_prefix(memory, workspace, states.get(memory.info.id))
                        out.write(prefix + ",".join(_chunk_json(c) for c in stored) + "]}\n")
                        written.update((c.id, c.memory_id) for c in stored)
                        chunks += len(stored)
            memories += len(page)
            exported.update(m.info.id for m in page)
            after = upto
            if progress:
                progress(Progress(memories, max(total, memories), UNIT, EXPORTING))
        more_entities, more_relations = await _write_graph(source.stores.graph, workspace, written, out)
        entities += more_entities
        relations += more_relations
        updates += await _write_updates(source.stores.updates, workspace, exported, out)
    end = {
        "type": "end", "memories": memories, "chunks": chunks, "entities": entities, "relations": relations,
        "updates": updates,
    }  # fmt: skip
    out.write(_dumps(end) + "\n")
    out.flush()
    duration = time.perf_counter() - started
    log.info(
        "transfer.exported",
        memories=memories,
        chunks=chunks,
        entities=entities,
        relations=relations,
        updates=updates,
        duration_ms=round(duration * 1000, 1),
    )
    return ExportReport(
        memories=memories,
        chunks=chunks,
        embedder=str(embedder),
        duration_s=round(duration, 3),
        entities=entities,
        relations=relations,
        updates=updates,
    )


async def _write_updates(links: UpdateLinks, workspace: str, exported: set[str], out: IO[str]) -> int:
    """A workspace's update links between memories in the file (one replaced by a newer one)."""
    written = skip = 0
    while page := await links.page(skip, EXPORT_RELATION_PAGE):
        skip += len(page)
        for stored in page:
            link = stored.link
            if link.older not in exported or link.newer not in exported:
                continue  # stored after the export's cut
            line = {
                "type": "update", "workspace": workspace, "older": link.older, "newer": link.newer,
                "confidence": link.confidence, "attribute": link.attribute, "subject": link.subject,
                "cues": list(link.cues), "evidence": link.evidence, "method": link.method,
            }  # fmt: skip
            out.write(_dumps(line) + "\n")
            written += 1
    return written


async def _write_graph(graph: GraphStore, workspace: str, written: dict[str, str], out: IO[str]) -> tuple[int, int]:
    """A workspace's entity lines, then its relation lines, restricted to the chunks written.

    The graph may change while the export runs (a job processing a memory, an update, a delete):
    keeping only mentions and relations of chunks that are in the file keeps the file consistent
    (every chunk, memory and entity a line names is in it), whatever changed meanwhile.
    """
    entities: set[str] = set()
    after: str | None = None
    while True:
        page = await graph.entity_page(after, EXPORT_ENTITY_PAGE)
        if not page:
            break
        after = page[-1].key
        mentions: dict[str, list[dict[str, Any]]] = {}
        for m in await graph.mentions_of([e.key for e in page]):
            if m.chunk_id in written:
                mentions.setdefault(m.entity_key, []).append(
                    {"chunk_id": m.chunk_id, "count": m.count, "confidence": m.confidence}
                )
        for entity in page:
            if entity.key not in mentions:
                continue
            line = {
                "type": "entity",
                "workspace": workspace,
                "key": entity.key,
                "id": entity.id,
                "name": entity.name,
                "entity_type": entity.type,
                "aliases": entity.aliases,
                "description": entity.description,
                "confidence": entity.confidence,
                "mentions": mentions[entity.key],
            }
            out.write(_dumps(line) + "\n")
            entities.add(entity.key)
    relations = 0
    last: str | None = None
    while True:
        edges = await graph.relation_page(last, EXPORT_RELATION_PAGE)
        if not edges:
            break
        last = edges[-1].id
        for r in edges:
            if written.get(r.chunk_id) != r.memory_id or r.subject_key not in entities or r.object_key not in entities:
                continue
            line = {
                "type": "relation",
                "workspace": workspace,
                "id": r.id,
                "subject": r.subject_key,
                "object": r.object_key,
                "relation_type": r.type,
                "predicate": r.predicate,
                "strength": r.strength,
                "evidence": r.evidence,
                "method": r.method,
                "memory_id": r.memory_id,
                "chunk_id": r.chunk_id,
                "valid_from": r.valid_from,
                "valid_from_ts": r.valid_from_ts,
                "superseded_by": r.superseded_by,
            }
            out.write(_dumps(line) + "\n")
            relations += 1
    return len(entities), relations


def _chunk_groups(page: list[StoredMemory]) -> Iterator[list[StoredMemory]]:
    """Consecutive memories whose chunks fit one page; a memory bigger than a page goes alone."""
    group: list[StoredMemory] = []
    size = 0
    for memory in page:
        if group and size + memory.info.chunk_count > EXPORT_CHUNK_PAGE:
            yield group
            group, size = [], 0
        group.append(memory)
        size += memory.info.chunk_count
    if group:
        yield group


async def _write_large_memory(
    reads: MemoryReads, memory: StoredMemory, prefix: str, chunk_ids: dict[str, str], out: IO[str]
) -> int:
    """One memory line written a page of chunks at a time, so its vectors never sit in RAM together."""
    out.write(prefix)
    written = 0
    for start in range(0, memory.info.chunk_count, EXPORT_CHUNK_PAGE):
        page = await reads.chunk_range(memory.info.id, start, start + EXPORT_CHUNK_PAGE)
        _check_chunks(memory, page, start)
        out.write(("," if written else "") + ",".join(_chunk_json(c) for c in page))
        chunk_ids.update((c.id, c.memory_id) for c in page)
        written += len(page)
    out.write("]}\n")
    return written


def _check_chunks(memory: StoredMemory, chunks: list[StoredChunk], start: int) -> None:
    # A store whose chunks do not number 0..n-1 would produce a file no import accepts: say so now.
    expected = list(range(start, min(memory.info.chunk_count, start + EXPORT_CHUNK_PAGE)))
    if [c.index for c in chunks] != expected:
        raise TransferError(
            f"memory {memory.info.id} records {memory.info.chunk_count} chunks but the store holds indexes "
            f"{[c.index for c in chunks][:10]}: the store is inconsistent; nothing more was exported"
        )


def _by_memory(chunks: list[StoredChunk]) -> dict[str, list[StoredChunk]]:
    grouped: dict[str, list[StoredChunk]] = {}
    for chunk in chunks:
        grouped.setdefault(chunk.memory_id, []).append(chunk)
    return grouped


def _memory_prefix(memory: StoredMemory, workspace: str, graph_state: str | None) -> str:
    """The memory's line up to the opening bracket of its chunk list."""
    line = _dumps(
        {
            "type": "memory",
            "id": memory.info.id,
            "workspace": workspace,
            "text": memory.text,
            "created_at": _iso(memory.info.created_at),
            "tags": memory.info.tags,
            "source": memory.info.source,
            "date": memory.info.date,
            "metadata": json.loads(memory.metadata_json),
            "graph_state": "done" if graph_state == "done" else None,
            # The stored kind: a turn is stored as a note, and is one again by the speaker or thread it holds.
            "kind": "note" if memory.info.kind == "turn" else memory.info.kind,
            "file_hash": memory.file_hash,
        }
    )
    return line[:-1] + ',"chunks":['


def _chunk_json(chunk: StoredChunk) -> str:
    # float(np.float32) is the stored value exactly; json writes the shortest text that reads back to it.
    embedding = np.asarray(chunk.embedding, dtype=np.float32).tolist()
    place = {key: value for key, value in asdict(chunk.place).items() if value is not None}
    return _dumps({"id": chunk.id, "index": chunk.index, "text": chunk.text, "embedding": embedding, **place})


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="microseconds")
