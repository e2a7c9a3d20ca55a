"""Import: a JSONL export validated whole in a first pass, then written in batches in a second."""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from typing import BinaryIO

import structlog
from pydantic import ValidationError

from zapomni_core.content.conversation import reading_context
from zapomni_core.content.turns import inferred_speaker
from zapomni_core.embedders import CachedEmbedder
from zapomni_core.kernel.registry import Workspace, Workspaces
from zapomni_core.kernel.writing import Split, WritePipeline, chunk_rows, memory_record, new_id
from zapomni_core.memories.requests import AddMemoryRequest
from zapomni_core.progress import Progress, ProgressFn
from zapomni_core.transfer.format import (
    BODY_LINE,
    FORMAT_VERSION,
    GRAPH_VERSION,
    HEADER_TYPE,
    IMPORTING,
    READABLE_VERSIONS,
    TOP_LEVEL_FIELDS,
    UNIT,
    UPDATES_VERSION,
    VALIDATING,
    ChunkLine,
    EmbedderInfo,
    EndLine,
    EntityLine,
    HeaderLine,
    MemoryLine,
    RelationLine,
    TransferError,
    UpdateLine,
)
from zapomni_core.validation import parse_iso8601
from zapomni_db import ChunkPlace, ChunkRow, EntityRow, LinkRow, MemoryRecord, MentionRow, RelationRow

log = structlog.get_logger(__name__)

# Import: a batch is written once it holds this many memories, chunks or bytes of JSON.
# Larger batches embed better (texts of like length are grouped, decision 0047), and one batch is embedded while
# the one before it is written.
IMPORT_BATCH_MEMORIES = 2000
IMPORT_BATCH_CHUNKS = 4096
IMPORT_BATCH_BYTES = 8 * 1024 * 1024
# Small memories written per query.
IMPORT_WRITE_GROUP = 100
# First pass: ids looked up in the store per round trip.
CHECK_BATCH_IDS = 2000
# Knowledge graph: entity lines, mentions and relation lines written per query; memories marked done per query.
IMPORT_GRAPH_ROWS = 2000
IMPORT_GRAPH_DONE = 1000


@dataclass(frozen=True)
class ImportReport:
    memories_in_file: int
    chunks_in_file: int
    imported: int  # memories written
    skipped: int  # memories whose id, or text, was already in their workspace
    chunks_written: int
    re_embedded: bool  # whether any vector was computed with the configured embedder
    chunks_embedded: int  # vectors computed now
    chunks_from_file: int  # vectors taken from the file
    rechunked: int  # memories split again because the file's embedder is not the configured one
    file_embedder: str
    embedder: str
    duration_s: float
    entities_imported: int = 0  # entity lines written (merged into an entity of the same key if there was one)
    relations_imported: int = 0
    graph_memories: int = 0  # memories imported with their knowledge graph (the rest are pending for it)
    updates_imported: int = 0  # update links made (those already stored, or undone by a user, are not)


@dataclass(frozen=True)
class ImportTarget:
    """What an import writes with: the engine's workspaces, embedder and write pipeline."""

    workspaces: Workspaces
    embedder: CachedEmbedder
    writer: WritePipeline


@dataclass(frozen=True)
class _Parsed:
    """A validated memory line, with its text and metadata checked as `add` checks them."""

    line: int
    memory: MemoryLine
    request: AddMemoryRequest
    size: int


@dataclass(frozen=True)
class _IdCheck:
    """What the first pass keeps of a memory line until its ids are looked up in the store."""

    line: int
    workspace: str
    memory_id: str
    chunk_ids: list[str | None]


@dataclass(frozen=True)
class _Scan:
    header: HeaderLine
    memories: int
    chunks: int
    entities: int = 0
    relations: int = 0
    updates: int = 0
    stored: int = 0  # memories whose id is already in their workspace


@dataclass(frozen=True)
class ImportPreview:
    """What an import would do, found by its first pass alone (nothing written)."""

    memories_in_file: int
    chunks_in_file: int
    already_stored: int  # memories whose id is in the store: skipped (others may be, for a text stored already)
    entities_in_file: int
    relations_in_file: int


async def preview_import(target: ImportTarget, src: BinaryIO) -> ImportPreview:
    """Validate the whole of `src` and count what it holds and what the store has; raises `TransferError` as
    `import_memories` does."""
    source = _Source(src)
    try:
        scan = await _validate(source, target.workspaces, None)
    finally:
        source.close()
    return ImportPreview(scan.memories, scan.chunks, scan.stored, scan.entities, scan.relations)


async def import_memories(target: ImportTarget, src: BinaryIO, progress: ProgressFn | None = None) -> ImportReport:
    """Validate the whole of `src`, then store the memories it holds that the store does not have.

    Raises `TransferError` naming the line (and field) of the first problem; then nothing was written.
    """
    started = time.perf_counter()
    source = _Source(src)
    writer: _Writer | None = None
    try:
        try:
            scan = await _validate(source, target.workspaces, progress)
        except TransferError as exc:
            raise TransferError(f"{exc}; nothing was imported") from None
        configured = EmbedderInfo(target.embedder.name, target.embedder.dimension)
        from_file = EmbedderInfo(scan.header.embedder.model, scan.header.embedder.dimension)
        reuse = from_file == configured
        log.info(
            "transfer.import_validated",
            memories=scan.memories,
            chunks=scan.chunks,
            file_embedder=str(from_file),
            embeddings="from the file where present" if reuse else f"re-embedded with {configured}",
        )
        writer = _Writer(target, reuse_vectors=reuse, total=scan.memories, progress=progress)
        batch: list[_Parsed] = []
        for number, raw in source.second_pass():
            if number == 1:
                continue
            item = _parse_body(number, raw, scan.header)
            if isinstance(item, EndLine):
                break
            if isinstance(item, UpdateLine):
                await writer.write(batch)  # the memories it names are above it
                batch = []
                await writer.update_line(item)
                continue
            if isinstance(item, EntityLine | RelationLine):
                # Graph lines name chunks of the memory lines above them: those are written first.
                await writer.write(batch)
                batch = []
                await writer.graph_line(item)
                continue
            batch.append(item)
            if _full(batch):
                await writer.write(batch)
                batch = []
        await writer.write(batch)
        await writer.settle()
        await writer.finish_graph()
        await writer.finish_updates()
    except BaseException:
        if writer is not None:
            await writer.abandon()
        raise
    finally:
        source.close()
    duration = time.perf_counter() - started
    report = ImportReport(
        memories_in_file=scan.memories,
        chunks_in_file=scan.chunks,
        imported=writer.imported,
        skipped=writer.skipped,
        chunks_written=writer.chunks_written,
        re_embedded=writer.chunks_embedded > 0,
        chunks_embedded=writer.chunks_embedded,
        chunks_from_file=writer.chunks_from_file,
        rechunked=writer.rechunked,
        file_embedder=str(from_file),
        embedder=str(configured),
        duration_s=round(duration, 3),
        entities_imported=writer.entities_imported,
        relations_imported=writer.relations_imported,
        graph_memories=writer.graph_memories,
        updates_imported=writer.updates_imported,
    )
    log.info("transfer.imported", **asdict(report))
    return report


class _Source:
    """The import file, read twice; a stream that cannot seek is copied aside on the first read."""

    def __init__(self, src: BinaryIO) -> None:
        self._src = src
        self._start: int | None = None
        try:
            if src.seekable():
                self._start = src.tell()
        except OSError:
            self._start = None
        # Closed by `close()`, which the import calls in a `finally`.
        self._spool = tempfile.TemporaryFile(prefix="zapomni-import-") if self._start is None else None  # noqa: SIM115

    def first_pass(self) -> Iterator[tuple[int, bytes]]:
        for number, raw in enumerate(self._src, start=1):
            if self._spool is not None:
                self._spool.write(raw)
            yield number, raw

    def second_pass(self) -> Iterator[tuple[int, bytes]]:
        stream: BinaryIO = self._spool if self._spool is not None else self._src
        stream.seek(self._start or 0)
        yield from enumerate(stream, start=1)

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()


async def _validate(source: _Source, workspaces: Workspaces, progress: ProgressFn | None) -> _Scan:
    """The first pass: every line, the counts, the ids; raises on the first problem, writes nothing."""
    header: HeaderLine | None = None
    end: tuple[int, EndLine] | None = None
    memory_ids: set[str] = set()
    chunk_ids: set[str] = set()
    graph = _GraphCheck()
    pending: list[_IdCheck] = []
    memories = chunks = last = pending_ids = stored = 0
    for number, raw in source.first_pass():
        last = number
        if header is None:
            header = _parse_header(raw)
            continue
        if end is not None:
            raise TransferError(f"line {number}: more lines follow the end line (line {end[0]})")
        item = _parse_body(number, raw, header)
        if isinstance(item, EndLine):
            end = (number, item)
            continue
        if isinstance(item, EntityLine):
            graph.entity(number, item)
            continue
        if isinstance(item, RelationLine):
            graph.relation(number, item)
            continue
        if isinstance(item, UpdateLine):
            graph.update(number, item)
            continue
        if item.memory.id in memory_ids:
            raise TransferError(f"line {number}: id: memory {item.memory.id} appears twice in the file")
        memory_ids.add(item.memory.id)
        for position, chunk in enumerate(item.memory.chunks):
            if chunk.id is not None:
                if chunk.id in chunk_ids:
                    raise TransferError(f"line {number}: chunks.{position}.id: chunk {chunk.id} appears twice")
                chunk_ids.add(chunk.id)
        graph.memory(item.memory)
        memories += 1
        chunks += len(item.memory.chunks)
        pending.append(_IdCheck(number, item.memory.workspace, item.memory.id, [c.id for c in item.memory.chunks]))
        pending_ids += 1 + len(item.memory.chunks)
        if pending_ids >= CHECK_BATCH_IDS:
            stored += await _check_against_store(workspaces, pending)
            pending, pending_ids = [], 0
            if progress:
                progress(Progress(memories, None, UNIT, VALIDATING))
    stored += await _check_against_store(workspaces, pending)
    if header is None:
        raise TransferError("the file is empty: a Zapomni export starts with a header line")
    if end is None:
        raise TransferError(
            f'the file ends at line {last} without its end line ({{"type":"end",...}}): it is truncated or incomplete'
        )
    end_line, trailer = end
    if (trailer.memories, trailer.chunks) != (memories, chunks):
        raise TransferError(
            f"line {end_line}: the end line counts {trailer.memories} memories and {trailer.chunks} chunks, "
            f"but the file holds {memories} memories and {chunks} chunks"
        )
    if (trailer.entities, trailer.relations) != (graph.entities, graph.relations):
        raise TransferError(
            f"line {end_line}: the end line counts {trailer.entities} entities and {trailer.relations} relations, "
            f"but the file holds {graph.entities} entities and {graph.relations} relations"
        )
    if trailer.updates != graph.updates:
        raise TransferError(
            f"line {end_line}: the end line counts {trailer.updates} updates, but the file holds {graph.updates}"
        )
    if progress:
        progress(Progress(memories, memories, UNIT, VALIDATING))
    return _Scan(
        header=header,
        memories=memories,
        chunks=chunks,
        entities=graph.entities,
        relations=graph.relations,
        stored=stored,
    )


class _GraphCheck:
    """What the first pass checks of the graph lines: each names only memories, chunks and entities of
    lines above it in its own workspace, and no entity key (per workspace) or relation id repeats.
    Holds the file's chunk ids and entity keys while it runs (not their texts or vectors)."""

    def __init__(self) -> None:
        self.chunks: dict[str, tuple[str, str]] = {}  # chunk id -> (workspace, memory id)
        self.memories: dict[str, str] = {}  # memory id -> workspace
        self.keys: set[tuple[str, str]] = set()  # (workspace, entity key)
        self.relation_ids: set[str] = set()
        self.entities = self.relations = self.updates = 0

    def memory(self, memory: MemoryLine) -> None:
        self.memories[memory.id] = memory.workspace
        for chunk in memory.chunks:
            if chunk.id is not None:
                self.chunks[chunk.id] = (memory.workspace, memory.id)

    def entity(self, number: int, line: EntityLine) -> None:
        if (line.workspace, line.key) in self.keys:
            raise TransferError(
                f"line {number}: key: entity {line.key!r} appears twice in workspace {line.workspace!r}"
            )
        for position, mention in enumerate(line.mentions):
            owner = self.chunks.get(mention.chunk_id)
            if owner is None or owner[0] != line.workspace:
                raise TransferError(
                    f"line {number}: mentions.{position}.chunk_id: chunk {mention.chunk_id} is not a chunk of a "
                    f"memory line above it in workspace {line.workspace!r}"
                )
        self.keys.add((line.workspace, line.key))
        self.entities += 1

    def relation(self, number: int, line: RelationLine) -> None:
        if line.id in self.relation_ids:
            raise TransferError(f"line {number}: id: relation {line.id} appears twice in the file")
        if self.memories.get(line.memory_id) != line.workspace:
            raise TransferError(
                f"line {number}: memory_id: memory {line.memory_id} is not a memory line above it "
                f"in workspace {line.workspace!r}"
            )
        if self.chunks.get(line.chunk_id) != (line.workspace, line.memory_id):
            raise TransferError(
                f"line {number}: chunk_id: chunk {line.chunk_id} is not a chunk of memory {line.memory_id} in the file"
            )
        for field in ("subject", "object"):
            key = getattr(line, field)
            if (line.workspace, key) not in self.keys:
                raise TransferError(
                    f"line {number}: {field}: entity {key!r} is not an entity line above it "
                    f"in workspace {line.workspace!r}"
                )
        self.relation_ids.add(line.id)
        self.relations += 1

    def update(self, number: int, line: UpdateLine) -> None:
        for field in ("older", "newer"):
            memory_id = getattr(line, field)
            if self.memories.get(memory_id) != line.workspace:
                raise TransferError(
                    f"line {number}: {field}: memory {memory_id} is not a memory line above it "
                    f"in workspace {line.workspace!r}"
                )
        if line.older == line.newer:
            raise TransferError(f"line {number}: newer: a memory cannot replace itself ({line.older})")
        self.updates += 1


async def _check_against_store(workspaces: Workspaces, checks: list[_IdCheck]) -> int:
    """A chunk id of a memory to import must not already belong to a stored memory of its workspace; the number
    of those memories already stored."""
    stored = 0
    for name in sorted({c.workspace for c in checks}):
        workspace = await workspaces.get(name, create=False)  # validation creates nothing
        if workspace is None:
            continue
        mine = [c for c in checks if c.workspace == name]
        present = await workspace.stores.reads.existing_ids([c.memory_id for c in mine])
        stored += len(present)
        owners = {cid: c for c in mine if c.memory_id not in present for cid in c.chunk_ids if cid is not None}
        if not owners:
            continue
        taken = await workspace.stores.reads.linked_chunk_ids(list(owners))
        if taken:
            first = min(taken, key=lambda cid: owners[cid].line)
            item = owners[first]
            position = item.chunk_ids.index(first)
            raise TransferError(
                f"line {item.line}: chunks.{position}.id: chunk {first} already belongs to another memory "
                f"in workspace {name!r}"
            )
    return stored


def _parse_header(raw: bytes) -> HeaderLine:
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        hint = "; the file looks truncated" if not raw.endswith(b"\n") else ""
        raise TransferError(f"line 1: not a Zapomni export (the header is not valid JSON: {exc}){hint}") from None
    if not isinstance(value, dict) or value.get("type") != HEADER_TYPE:
        raise TransferError(f'line 1: not a Zapomni export (expected a header line with "type": "{HEADER_TYPE}")')
    found = value.get("format_version")
    if type(found) is not int or found not in READABLE_VERSIONS:
        raise TransferError(
            f"line 1: format_version: this Zapomni reads format_version {FORMAT_VERSION}, the file has {found!r}; "
            "a newer version may be needed to import it"
        )
    try:
        return HeaderLine.model_validate(value)
    except ValidationError as exc:
        raise TransferError(_describe(1, exc)) from None


def _parse_body(
    number: int, raw: bytes, header: HeaderLine
) -> _Parsed | EntityLine | RelationLine | UpdateLine | EndLine:
    if not raw.strip():
        raise TransferError(f"line {number}: blank line (an export has one JSON object on every line)")
    try:
        item = BODY_LINE.validate_json(raw, context={"dimension": header.embedder.dimension})
    except ValidationError as exc:
        raise TransferError(_describe(number, exc, truncated=not raw.endswith(b"\n"))) from None
    if isinstance(item, EntityLine | RelationLine):
        if header.format_version < GRAPH_VERSION:
            raise TransferError(
                f"line {number}: type: {item.type} lines need format_version {GRAPH_VERSION} "
                f"(the header says {header.format_version})"
            )
        return item
    if isinstance(item, UpdateLine):
        if header.format_version < UPDATES_VERSION:
            raise TransferError(
                f"line {number}: type: update lines need format_version {UPDATES_VERSION} "
                f"(the header says {header.format_version})"
            )
        return item
    if isinstance(item, EndLine):
        return item
    try:
        request = AddMemoryRequest.model_validate(
            {
                "text": item.text,
                "metadata": {"tags": item.tags, "source": item.source, "date": item.date, **item.metadata},
            }
        )
    except ValidationError as exc:
        raise TransferError(_describe(number, exc, relocate=True)) from None
    return _Parsed(line=number, memory=item, request=request, size=len(raw))


def _describe(number: int, exc: ValidationError, *, truncated: bool = False, relocate: bool = False) -> str:
    """`line N: field.path: message` for the first error pydantic found."""
    error = exc.errors(include_url=False)[0]
    kind, loc = error["type"], list(error["loc"])
    if kind == "json_invalid":
        hint = "; the file looks truncated" if truncated else ""
        return f"line {number}: not valid JSON ({error['ctx']['error']}){hint}"
    if kind == "union_tag_invalid":
        tag = error["ctx"]["tag"]
        if tag == HEADER_TYPE:
            return f"line {number}: a second header line (two exports joined together?)"
        return (
            f"line {number}: type: unknown line type {tag!r}; a format_version {FORMAT_VERSION} file holds only "
            "memory, entity, relation and update lines between its header and end line (a newer Zapomni may be needed "
            "for this file)"
        )
    if kind == "union_tag_not_found":
        return (
            f'line {number}: type: missing (each line needs "type": "memory", "entity", "relation", "update" or "end")'
        )
    if not loc and kind.endswith("_type"):
        return f"line {number}: not a JSON object"
    if relocate:
        # The line's tags, source and date were checked inside the `metadata` of an add request.
        if len(loc) > 1 and loc[0] == "metadata" and loc[1] in TOP_LEVEL_FIELDS:
            loc = loc[1:]
    elif loc and loc[0] in ("memory", "entity", "relation", "update", "end"):
        loc = loc[1:]  # the union's tag
    field = ".".join(str(part) for part in loc) or "line"
    return f"line {number}: {field}: {error['msg'].removeprefix('Value error, ')}"


def _full(batch: list[_Parsed]) -> bool:
    return (
        len(batch) >= IMPORT_BATCH_MEMORIES
        or sum(len(p.memory.chunks) for p in batch) >= IMPORT_BATCH_CHUNKS
        or sum(p.size for p in batch) >= IMPORT_BATCH_BYTES
    )


@dataclass
class _Planned:
    """A memory about to be written: its chunks, their statistics and vectors (None: embed now)."""

    parsed: _Parsed
    ids: list[str] | None
    split: Split
    vectors: list[list[float] | None]


class _Writer:
    """The second pass: writes batches of validated memories through `MemoryWrites.insert`, workspace by
    workspace, then their knowledge graph (`graph_line`, `finish_graph`).

    A memory's graph is imported only when the memory was written now with the file's chunk ids (same
    embedder, chunks in the file): its mentions and relations name those chunks. Every other memory
    (skipped, chunked again for another embedder) keeps or gets its graph from extraction: pending.
    Memories whose graph the file holds are marked done only at the end, so an import that stops half
    way leaves them pending (extraction replaces whatever part of their graph was written).
    """

    def __init__(self, target: ImportTarget, *, reuse_vectors: bool, total: int, progress: ProgressFn | None) -> None:
        self._target = target
        self._reuse = reuse_vectors
        self._total = total
        self._progress = progress
        self.imported = self.skipped = self.chunks_written = 0
        self.chunks_embedded = self.chunks_from_file = self.rechunked = 0
        self.entities_imported = self.relations_imported = self.graph_memories = 0
        # Per workspace: chunk id -> memory id of the chunks written now with the file's ids; the memories
        # among them whose graph is done in the file and those whose is not; entity keys written.
        self._graph_chunks: dict[str, dict[str, str]] = {}
        self._graph_memories: dict[str, dict[str, bool]] = {}
        self._entity_keys: dict[str, set[str]] = {}
        self._buffer: list[EntityLine | RelationLine] = []  # one kind and one workspace at a time
        self._buffered_rows = 0
        self._updates: dict[str, list[LinkRow]] = {}  # per workspace, linked once every memory is written
        self.updates_imported = 0
        self._inserting: asyncio.Future[None] | None = None  # the batch being written (see `write`)

    async def update_line(self, line: UpdateLine) -> None:
        await self.settle()  # the memories it names are written
        # An update line is the stored row's fields, with where it goes.
        fields = line.model_dump(exclude={"type", "workspace"})
        self._updates.setdefault(line.workspace, []).append(LinkRow(**fields | {"cues": tuple(line.cues)}))

    async def finish_updates(self) -> None:
        """Link the memories the file says replaced others (a link already stored, or undone, stays as it is)."""
        for name, links in self._updates.items():
            workspace = await self._target.workspaces.get(name, create=True)
            assert workspace is not None
            for start in range(0, len(links), IMPORT_GRAPH_ROWS):
                self.updates_imported += await workspace.stores.updates.link(links[start : start + IMPORT_GRAPH_ROWS])

    async def graph_line(self, line: EntityLine | RelationLine) -> None:
        await self.settle()  # the chunks it names are written
        if self._buffer and (type(self._buffer[0]) is not type(line) or self._buffer[0].workspace != line.workspace):
            await self._flush_graph()
        self._buffer.append(line)
        self._buffered_rows += 1 + (len(line.mentions) if isinstance(line, EntityLine) else 0)
        if self._buffered_rows >= IMPORT_GRAPH_ROWS:
            await self._flush_graph()

    async def finish_graph(self) -> None:
        """Settle supersession and mark done the memories whose graph came from the file."""
        # Imported here: the graph package brings the extractors with it, which an import does not need.
        from zapomni_core.graph.extraction import EXCLUSIVE_RELATIONS

        await self._flush_graph()
        for name, memories in self._graph_memories.items():
            workspace = await self._target.workspaces.get(name, create=True)
            assert workspace is not None
            for done in (True, False):
                ids = [mid for mid, state in memories.items() if state is done]
                for start in range(0, len(ids), IMPORT_GRAPH_DONE):
                    await workspace.stores.graph.finish_import(
                        ids[start : start + IMPORT_GRAPH_DONE],
                        sorted(EXCLUSIVE_RELATIONS),
                        now=time.time(),
                        mark_done=done,
                    )
                if done:
                    self.graph_memories += len(ids)

    async def _flush_graph(self) -> None:
        lines, self._buffer, self._buffered_rows = self._buffer, [], 0
        if not lines:
            return
        name = lines[0].workspace
        chunks = self._graph_chunks.get(name, {})
        if not chunks:
            return
        workspace = await self._target.workspaces.get(name, create=True)
        assert workspace is not None
        keys = self._entity_keys.setdefault(name, set())
        if isinstance(lines[0], EntityLine):
            rows: list[EntityRow] = []
            mentions: list[MentionRow] = []
            for line in lines:
                assert isinstance(line, EntityLine)
                mine = [
                    MentionRow(m.chunk_id, line.key, m.count, m.confidence)
                    for m in line.mentions
                    if m.chunk_id in chunks
                ]
                if not mine:
                    continue
                rows.append(
                    EntityRow(
                        line.key, line.id, line.name, line.entity_type, line.aliases, line.description, line.confidence
                    )
                )
                mentions.extend(mine)
                keys.add(line.key)
            await workspace.stores.graph.import_entities(rows, mentions, now=time.time())
            self.entities_imported += len(rows)
            return
        relations = [
            _relation(line)
            for line in lines
            if isinstance(line, RelationLine)
            and chunks.get(line.chunk_id) == line.memory_id
            and line.subject in keys
            and line.object in keys
        ]
        self.relations_imported += await workspace.stores.graph.import_relations(relations)

    async def write(self, batch: list[_Parsed]) -> None:
        """Embed `batch` while the batch before it is written: the database's writes (an fsync each, with
        appendfsync always) overlap the embedder's work instead of following it. Written in order: a batch's
        inserts begin once the previous batch's have ended (`settle`)."""
        if not batch:
            return
        for name in dict.fromkeys(p.memory.workspace for p in batch):
            workspace = await self._target.workspaces.get(name, create=True)
            assert workspace is not None
            planned = await self._prepare(workspace, [p for p in batch if p.memory.workspace == name])
            await self.settle()
            self._inserting = asyncio.ensure_future(self._insert(workspace, planned))

    async def settle(self) -> None:
        """Wait for the batch being written (its failure is raised here)."""
        inserting, self._inserting = self._inserting, None
        if inserting is not None:
            await inserting

    async def abandon(self) -> None:
        """Stop the batch being written (the import failed or was cancelled); each memory is written whole."""
        inserting, self._inserting = self._inserting, None
        if inserting is not None and not inserting.done():
            inserting.cancel()
        if inserting is not None:
            with contextlib.suppress(BaseException):
                await inserting

    async def _prepare(self, workspace: Workspace, batch: list[_Parsed]) -> list[_Planned]:
        # Checked again here: another process may have stored some of them since the first pass.
        present = await workspace.stores.reads.existing_ids([p.memory.id for p in batch])
        todo = [p for p in batch if p.memory.id not in present]
        self.skipped += len(batch) - len(todo)
        planned = await asyncio.to_thread(self._plan, todo)
        await self._embed_missing(planned)
        return planned

    async def _insert(self, workspace: Workspace, planned: list[_Planned]) -> None:
        """Write the batch in order: memories that fit one write go many to a query (`insert_new`: an fsync per
        group, not per memory), a large one on its own."""
        writes = workspace.stores.writes
        group: list[tuple[_Planned, MemoryRecord, list[ChunkRow]]] = []
        for plan in planned:
            record, rows = self._rows(plan)
            if writes.fits_one_write(rows):
                group.append((plan, record, rows))
                if len(group) >= IMPORT_WRITE_GROUP:
                    await self._insert_group(workspace, group)
                    group = []
                continue
            await self._insert_group(workspace, group)
            group = []
            self._stored(workspace, plan, await writes.insert(record, rows))
            self._report()
        await self._insert_group(workspace, group)

    def _report(self) -> None:
        if self._progress:
            self._progress(Progress(self.imported + self.skipped, self._total, UNIT, IMPORTING))

    async def _insert_group(
        self, workspace: Workspace, group: list[tuple[_Planned, MemoryRecord, list[ChunkRow]]]
    ) -> None:
        if not group:
            return
        first: dict[str, str] = {}  # content hash -> the id of the group's first memory with it
        for _plan, record, _rows in group:
            first.setdefault(record.content_hash, record.id)
        stored = await workspace.stores.writes.insert_new(
            [(record, rows) for _plan, record, rows in group if first[record.content_hash] == record.id]
        )
        for plan, record, _rows in group:
            self._stored(workspace, plan, record.id in stored)
        self._report()

    def _rows(self, plan: _Planned) -> tuple[MemoryRecord, list[ChunkRow]]:
        memory = plan.parsed.memory
        created_at = parse_iso8601(memory.created_at).timestamp()
        metadata = plan.parsed.request.metadata
        # A file holds what the agent sent; a speaker read from a `Name:` lead is read again, as `add` reads it
        # (an import has no client, so no thread is inferred: decision 0023).
        inferred = inferred_speaker(memory.text, metadata)
        record = memory_record(memory.id, memory.text, metadata, created_at=created_at, inferred=inferred)
        record = replace(record, kind=memory.kind, file_hash=memory.file_hash)
        vectors = [v for v in plan.vectors if v is not None]
        rows = chunk_rows(plan.split, vectors, plan.ids)
        if plan.ids is not None:  # the file's own chunks: they keep their place in their file
            rows = [replace(row, place=_place(c)) for row, c in zip(rows, memory.chunks, strict=True)]
        return record, rows

    def _stored(self, workspace: Workspace, plan: _Planned, stored: bool) -> None:
        memory = plan.parsed.memory
        if not stored:  # the same text is already stored in this workspace under another id
            self.skipped += 1
            return
        self.imported += 1
        self.chunks_written += len(plan.split.pieces)
        if plan.ids is not None:  # the file's chunks, and ids, were kept: its graph fits
            chunks = self._graph_chunks.setdefault(workspace.name, {})
            chunks.update((c.id, memory.id) for c in memory.chunks if c.id is not None)
            self._graph_memories.setdefault(workspace.name, {})[memory.id] = memory.graph_state == "done"

    def _plan(self, todo: list[_Parsed]) -> list[_Planned]:
        """Keyword statistics from the chunk texts; the file's chunks and vectors when they fit this store."""
        plans = []
        for parsed in todo:
            chunks = parsed.memory.chunks
            metadata = parsed.request.metadata
            context = reading_context(metadata, inferred_speaker(parsed.memory.text, metadata).speaker)
            if self._reuse and chunks:
                split = self._target.writer.prepare([c.text for c in chunks], context)
                ids = [c.id or new_id() for c in chunks]
                plans.append(_Planned(parsed, ids=ids, split=split, vectors=[c.embedding for c in chunks]))
            else:
                # Another embedder's chunks may not fit this one's window: split as `add` would here.
                split = self._target.writer.split(parsed.memory.text, context)
                self.rechunked += bool(chunks)
                plans.append(_Planned(parsed, ids=None, split=split, vectors=[None] * len(split.pieces)))
        return plans

    async def _embed_missing(self, planned: list[_Planned]) -> None:
        missing = [(plan, i) for plan in planned for i, v in enumerate(plan.vectors) if v is None]
        self.chunks_from_file += sum(len(plan.vectors) for plan in planned) - len(missing)
        texts = [plan.split.indexed[i] for plan, i in missing]
        vectors = await self._target.writer.embed(texts, slice_size=max(len(texts), 1))
        for (plan, i), vector in zip(missing, vectors, strict=True):
            plan.vectors[i] = vector
        self.chunks_embedded += len(missing)


def _relation(line: RelationLine) -> RelationRow:
    return RelationRow(
        id=line.id,
        type=line.relation_type,
        predicate=line.predicate,
        strength=line.strength,
        method=line.method,
        subject_key=line.subject,
        object_key=line.object,
        valid_from=line.valid_from,
        valid_from_ts=line.valid_from_ts,
        superseded_by=line.superseded_by,
        memory_id=line.memory_id,
        chunk_id=line.chunk_id,
        evidence=line.evidence,
    )


def _place(chunk: ChunkLine) -> ChunkPlace:
    return ChunkPlace(page=chunk.page, section=chunk.section, line_start=chunk.line_start, line_end=chunk.line_end)
