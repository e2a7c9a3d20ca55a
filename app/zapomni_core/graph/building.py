"""`build_graph`: extract the entities and relations of memories into the workspace's graph, one memory a step.

A memory's chunk graphs are resolved against the workspace's entities (`merge`) into the rows the store
writes (`memory_graph_rows`).

Each memory's graph is written in one fenced write that also marks the memory processed, so a job
that dies resumes with the memories still pending and none is processed twice. A memory of more than
`SLICE` chunks is extracted and written a slice of chunks at a time, each slice in one fenced write
that records how far the memory got: a job stopped half way through a large memory (a server stopped
by its client) resumes after the last slice written instead of starting the memory over, so a large
memory gets done across short sessions. An extractor that cannot answer (the LLM unreachable) leaves
the memory pending and records it as a failed item; items an extractor repaired or dropped are
recorded too. Nothing is dropped silently.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

import structlog

from zapomni_core.errors import ExtractorUnavailable, ZapomniError
from zapomni_core.graph.extraction import EXCLUSIVE_RELATIONS, ChunkGraph, Extractor
from zapomni_core.graph.merge import EntityIndex, merge_chunk_entities
from zapomni_core.kernel.registry import Workspace
from zapomni_core.kernel.runner import JobOutcome, JobRun
from zapomni_core.kernel.writing import new_id
from zapomni_core.progress import Progress
from zapomni_core.validation import parse_iso8601
from zapomni_db import (
    EntityRow,
    JobRecord,
    JobRow,
    MentionRow,
    RelationRow,
    StoredChunk,
    StoredMemory,
    rewrite_append_only_file,
)

log = structlog.get_logger(__name__)

KIND = "build_graph"
# Memories asked of the database at a time.
PAGE = 50
# After this many memories in a row fail to extract (e.g. Ollama is down), the job stops: the rest stay pending.
MAX_UNAVAILABLE_IN_A_ROW = 3
# Graph writes replay ~7x slower than they run when the database restarts from its append-only log after a
# crash (measured: 400 writes, 11 s live, 73 s replayed): the job has the log compacted this often.
COMPACT_EVERY = 200
# Chunks of one large memory extracted and written per step: a second or two of spaCy (about 20 chunks/s
# on 2 cores), so a stopped job loses at most that, and its progress shows within the memory.
SLICE = 16


@dataclass
class _Tally:
    """What one memory's extraction wrote."""

    written: bool = False  # False: the memory changed or went meanwhile, nothing (more) was written
    mentions: int = 0
    relations: int = 0
    problems: int = 0
    self_loops: int = 0  # relations dropped because both ends are one entity: counted, not failed


def build_job(memory_ids: Sequence[str] | None, total: int) -> JobRecord:
    """A job over the given memories, or (None) over every memory not yet processed (`total` of them now)."""
    args = {"memory_ids": list(memory_ids) if memory_ids is not None else None, "queued": total}
    return JobRecord(
        id=new_id(), kind=KIND, created_at=time.time(), args_json=json.dumps(args), unit="memories", total=total
    )


class BuildGraph:
    kind = KIND

    def __init__(self, extractor: Extractor, match_threshold: float) -> None:
        self._extractor = extractor
        self._threshold = match_threshold

    def refuses(self, job: JobRow) -> ZapomniError | None:
        return None  # every server on the store can

    async def run(self, job: JobRow, run: JobRun[Workspace]) -> JobOutcome | None:
        graph = run.workspace.stores.graph
        explicit: list[str] | None = json.loads(job.args_json).get("memory_ids")
        index = EntityIndex(await graph.known_entities(), threshold=self._threshold)
        counts: Counter[str] = Counter(json.loads(job.counts_json or "{}"))
        done, failed_in_a_row = run.progress.done, 0
        skipped: set[str] = set()  # failed in this attempt: left pending, not retried in a loop
        while True:
            batch = [m for m in await self._next(job, run, explicit) if m not in skipped][:PAGE]
            if not batch:
                break
            total = done + len(batch) + (0 if explicit is not None else await graph.count_pending() - len(batch))
            for memory_id in batch:
                memory = await run.workspace.stores.reads.get(memory_id)
                if memory is None:  # deleted meanwhile: nothing to do
                    counts["deleted"] += 1
                    skipped.add(memory_id)
                    continue
                chunks = await run.workspace.stores.reads.chunks(memory_id)
                progress = Progress(done, max(total, done), "memories", f"extracting ({self._extractor.name})")
                try:
                    if len(chunks) > SLICE:
                        tally = await self._sliced(job, run, memory, chunks, index, progress)
                    else:
                        tally = await self._whole(job, run, memory, chunks, index)
                except ExtractorUnavailable as exc:
                    await run.fail_item(f"memory {memory_id}", str(exc))
                    counts["failed"] += 1
                    skipped.add(memory_id)
                    failed_in_a_row += 1
                    if failed_in_a_row >= MAX_UNAVAILABLE_IN_A_ROW:
                        return JobOutcome(
                            "failed",
                            done,
                            counts,
                            error=f"extraction stopped after {failed_in_a_row} memories in a row failed: {exc}; "
                            "the memories not processed stay pending (build_graph again once it is fixed)",
                        )
                    continue
                failed_in_a_row = 0
                counts["problems"] += tally.problems
                if tally.self_loops:
                    counts["relations_dropped_one_entity"] += tally.self_loops
                if not tally.written:
                    await run.report(run.progress)  # raises JobLost when the job is no longer ours
                    counts["changed"] += 1  # deleted or updated meanwhile; an update queued its own extraction
                    skipped.add(memory_id)
                    continue
                done += 1
                counts["memories"] += 1
                counts["entities"] += tally.mentions
                counts["relations"] += tally.relations
                await run.report(Progress(done, max(total, done), "memories", f"extracting ({self._extractor.name})"))
                if counts["memories"] % COMPACT_EVERY == 0:
                    await rewrite_append_only_file(run.workspace.stores.client, wait_s=0)
        state = "completed_with_errors" if job.failed or counts["failed"] or counts["problems"] else "completed"
        log.info("graph.built", workspace=run.workspace.name, job_id=job.id, **counts)
        return JobOutcome(state, done, counts, message=_done_elsewhere(job, explicit, done))

    async def _whole(
        self,
        job: JobRow,
        run: JobRun[Workspace],
        memory: StoredMemory,
        chunks: Sequence[StoredChunk],
        index: EntityIndex,
    ) -> _Tally:
        """A memory of a few chunks: extracted at once, written in one fenced write that marks it done."""
        graphs = await self._extractor.extract([chunk.text for chunk in chunks])
        rows = memory_graph_rows(memory, chunks, graphs, index)
        await self._record_problems(run, memory.info.id, rows.problems)
        written = await run.workspace.stores.graph.write_memory_graph(
            memory.info.id,
            job.id,
            run.owner,
            rows.entities,
            rows.mentions,
            rows.relations,
            exclusive_types=sorted(EXCLUSIVE_RELATIONS),
            chunk_ids=[chunk.id for chunk in chunks],  # unchanged since they were read, or nothing is written
        )
        if written:
            index.commit(rows.entities)
        return _Tally(written, len(rows.mentions), len(rows.relations), len(rows.problems), rows.self_loops)

    async def _sliced(
        self,
        job: JobRow,
        run: JobRun[Workspace],
        memory: StoredMemory,
        chunks: Sequence[StoredChunk],
        index: EntityIndex,
        progress: Progress,
    ) -> _Tally:
        """A large memory, `SLICE` chunks a step, resuming after the last slice an earlier attempt of this
        job wrote (the index was loaded from the graph, so it knows the entities those slices made)."""
        graph = run.workspace.stores.graph
        memory_id = memory.info.id
        start = await graph.sliced_progress(memory_id, job.id)
        if start is None or start > len(chunks):
            if not await graph.begin_sliced_graph(memory_id, job.id, run.owner, [chunk.id for chunk in chunks]):
                return _Tally()
            start = 0
        elif start:
            log.info("graph.memory_resumed", job_id=job.id, memory_id=memory_id, chunks_done=start, chunks=len(chunks))
        tally = _Tally()
        for begin in range(start, len(chunks), SLICE):
            piece = chunks[begin : begin + SLICE]
            await run.report(
                progress.with_message(f"{progress.message}: memory {memory_id}, chunk {begin}/{len(chunks)}")
            )
            graphs = await self._extractor.extract([chunk.text for chunk in piece])
            rows = memory_graph_rows(memory, piece, graphs, index)
            await self._record_problems(run, memory_id, rows.problems)
            if not await graph.write_graph_slice(
                memory_id,
                job.id,
                run.owner,
                rows.entities,
                rows.mentions,
                rows.relations,
                exclusive_types=sorted(EXCLUSIVE_RELATIONS),
                chunk_ids=[chunk.id for chunk in piece],
                start=begin,
                chunk_count=len(chunks),
            ):
                return tally
            index.commit(rows.entities)
            tally.mentions += len(rows.mentions)
            tally.relations += len(rows.relations)
            tally.problems += len(rows.problems)
            tally.self_loops += rows.self_loops
        tally.written = await graph.finish_sliced_graph(memory_id, job.id, run.owner, len(chunks))
        return tally

    @staticmethod
    async def _record_problems(run: JobRun[Workspace], memory_id: str, problems: Sequence[str]) -> None:
        if problems:
            shown = "; ".join(problems[:3])
            more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
            await run.fail_item(f"memory {memory_id}", f"{shown}{more}")

    async def _next(self, job: JobRow, run: JobRun[Workspace], explicit: list[str] | None) -> list[str]:
        graph = run.workspace.stores.graph
        if explicit is None:
            return await graph.pending_memories(PAGE * 2)
        return await graph.unprocessed_by(job.id, explicit, PAGE * 2)


def _done_elsewhere(job: JobRow, explicit: list[str] | None, done: int) -> str | None:
    """Why a job over every pending memory did fewer than were pending when it was queued: another job
    (the automatic extraction of new memories, or an earlier build_graph) took them, or they were deleted."""
    queued = json.loads(job.args_json).get("queued")
    if explicit is not None or not isinstance(queued, int) or done >= queued:
        return None
    if done == 0:
        return (
            f"nothing left to do: the {queued} memories pending when it was queued were processed by another "
            "job meanwhile (the automatic extraction of new memories, or an earlier build_graph) or deleted"
        )
    return (
        f"{queued - done} of the {queued} memories pending when it was queued were processed by another job "
        "meanwhile (the automatic extraction of new memories, or an earlier build_graph) or deleted"
    )


# -- one memory's extracted chunk graphs, resolved against the workspace's entities, as the rows the store writes


@dataclass
class MemoryGraphRows:
    entities: list[EntityRow] = field(default_factory=list)
    mentions: list[MentionRow] = field(default_factory=list)
    relations: list[RelationRow] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what the extractor or the merge repaired or dropped
    self_loops: int = 0  # relations whose ends merged into one entity (MergedChunk.self_loops)


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
        rows.self_loops += len(merged.self_loops)
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
