"""What the stores take and return. A memory's listed fields are declared once, in `MemoryInfo`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class MemoryRecord:
    """A memory to write."""

    id: str
    text: str
    created_at: float
    content_hash: str
    tags: list[str] = field(default_factory=list)
    source: str | None = None
    date: str | None = None
    # Seconds since the epoch of `date` when given, else of `created_at`: what date filters use.
    date_ts: float = 0.0
    metadata_json: str = "{}"
    updated_at: float | None = None
    # "note" (what an agent adds), "document" or "code" (a file ingested from disk, `source` its path).
    kind: str = "note"
    # A file's memory: the sha256 of the file's bytes, what re-ingestion compares.
    file_hash: str | None = None
    # The conversation a turn belongs to: the keyword index reads a turn with the ones before it.
    thread: str | None = None


@dataclass(frozen=True)
class ChunkPlace:
    """Where a chunk sits in the file it came from: a PDF page, a heading path or symbol, a line range."""

    page: int | None = None
    section: str | None = None
    line_start: int | None = None
    line_end: int | None = None

    WIDTH = 4

    @staticmethod
    def projection(chunk: str) -> str:
        """The Cypher projection that `from_row` reads, for a chunk bound to the variable `chunk`."""
        return ", ".join(f"{chunk}.{name}" for name in ("page", "section", "line_start", "line_end"))

    @classmethod
    def from_row(cls, row: list[Any], start: int = 0) -> ChunkPlace:
        page, section, line_start, line_end = row[start : start + cls.WIDTH]
        return cls(page=page, section=section, line_start=line_start, line_end=line_end)


@dataclass(frozen=True)
class ChunkRow:
    id: str
    index: int
    text: str
    embedding: list[float]
    # Keyword-index statistics, computed once at write time: distinct terms, their counts, length.
    terms: list[str] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    length: int = 0
    place: ChunkPlace = ChunkPlace()
    # Read before the text when embedding and counting terms, e.g. who said it and when
    # (zapomni_core.conversation); kept apart so the chunk's text stays what was stored.
    context: str | None = None


@dataclass(frozen=True)
class MemoryInfo:
    """The fields every listing of a memory carries (search hits, pages, details, exports)."""

    id: str
    tags: list[str]
    source: str | None
    date: str | None
    created_at: float
    updated_at: float
    chunk_count: int
    # "indexed" (searchable), or for a large add indexed by a job: "indexing", then "indexed" or "failed".
    status: str = "indexed"
    job_id: str | None = None
    kind: str = "note"

    # The Cypher projection that `from_row` reads, for a memory bound to `m`.
    PROJECTION = (
        "m.id, m.tags, m.source, m.date, m.created_at, coalesce(m.updated_at, m.created_at), m.chunk_count, "
        "coalesce(m.status, 'indexed'), m.job_id, coalesce(m.kind, 'note')"
    )
    WIDTH = 10

    @classmethod
    def from_row(cls, row: list[Any], start: int = 0) -> MemoryInfo:
        r = row[start : start + cls.WIDTH]
        return cls(
            id=r[0],
            tags=list(r[1] or []),
            source=r[2],
            date=r[3],
            created_at=float(r[4]),
            updated_at=float(r[5]),
            chunk_count=int(r[6] or 0),
            status=r[7] or "indexed",
            job_id=r[8],
            kind=r[9] or "note",
        )


@dataclass(frozen=True)
class StoredMemory:
    """A memory as stored, without its chunks: what get_memory and an export read."""

    info: MemoryInfo
    text: str
    metadata_json: str
    content_hash: str | None
    seq: int
    file_hash: str | None = None  # a file's memory (see MemoryRecord.file_hash)


@dataclass(frozen=True)
class StoredChunk:
    memory_id: str
    id: str
    index: int
    text: str
    embedding: list[float]
    place: ChunkPlace = ChunkPlace()
    context: str | None = None  # as in ChunkRow


@dataclass(frozen=True)
class ChunkHit:
    """A chunk found by either search leg, with its memory and its cosine distance to the query vector."""

    memory: MemoryInfo
    chunk_id: str
    text: str
    distance: float
    place: ChunkPlace = ChunkPlace()


@dataclass(frozen=True)
class ChunkTerms:
    chunk_id: str
    terms: list[str]
    counts: list[int]
    length: int
    thread: str | None = None
    # Where the chunk sits in its thread: (memory date, memory created_at, chunk index).
    order: tuple[float, float, int] = (0.0, 0.0, 0)


@dataclass(frozen=True)
class IndexChanges:
    """What the keyword index must apply to catch up with the store between two sequence numbers."""

    added: list[ChunkTerms]
    removed: list[str]


@dataclass(frozen=True)
class SearchFilter:
    tags: list[str] | None = None
    source: str | None = None
    date_from_ts: float | None = None
    date_to_ts: float | None = None
    kind: str | None = None

    @property
    def active(self) -> bool:
        return bool(self.tags) or any(
            v is not None for v in (self.source, self.date_from_ts, self.date_to_ts, self.kind)
        )

    def as_params(self) -> dict[str, Any]:
        return {
            "tags": self.tags or None,
            "source": self.source,
            "date_from": self.date_from_ts,
            "date_to": self.date_to_ts,
            "kind": self.kind,
        }


@dataclass(frozen=True)
class PageKey:
    """Where a page of memories continues: after this (creation time in microseconds, id) in the page's order."""

    created_us: int
    memory_id: str


@dataclass(frozen=True)
class Counts:
    memories: int
    chunks: int


@dataclass(frozen=True)
class EmbedderClaim:
    """The `(:EmbedderInfo)` record: which embedder's vectors the graph holds."""

    model: str
    dimension: int


@dataclass(frozen=True)
class ReembedState:
    """The `(:Reembed)` record of a re-embed that started and has not finished."""

    model: str
    dimension: int
    started_at: float


@dataclass(frozen=True)
class JobRecord:
    """A job to create: what to do (`kind`, `args_json`) and, for a job about one memory, which."""

    id: str
    kind: str
    created_at: float
    args_json: str = "{}"
    memory_id: str | None = None
    unit: str = "items"
    total: int | None = None


@dataclass(frozen=True)
class JobRow:
    """A job as stored. `failures` holds the first failed items' "item: reason" lines; `failed` counts all."""

    id: str
    kind: str
    state: str
    memory_id: str | None
    args_json: str
    done: int
    total: int | None
    unit: str
    counts_json: str
    failed: int
    failures: list[str]
    error: str | None
    message: str | None
    attempts: int
    owner: str | None
    lease_until: float | None
    created_at: float
    started_at: float | None
    updated_at: float
    finished_at: float | None

    # The Cypher projection that `from_row` reads, for a job bound to `j`.
    PROJECTION = (
        "j.id, j.kind, j.state, j.memory_id, j.args, j.done, j.total, j.unit, j.counts, j.failed, j.failures, "
        "j.error, j.message, j.attempts, j.owner, j.lease_until, j.created_at, j.started_at, j.updated_at, "
        "j.finished_at"
    )

    @classmethod
    def from_row(cls, r: list[Any]) -> JobRow:
        return cls(
            id=r[0],
            kind=r[1],
            state=r[2],
            memory_id=r[3],
            args_json=r[4] or "{}",
            done=int(r[5] or 0),
            total=None if r[6] is None else int(r[6]),
            unit=r[7] or "items",
            counts_json=r[8] or "{}",
            failed=int(r[9] or 0),
            failures=list(r[10] or []),
            error=r[11],
            message=r[12],
            attempts=int(r[13] or 0),
            owner=r[14],
            lease_until=None if r[15] is None else float(r[15]),
            created_at=float(r[16]),
            started_at=None if r[17] is None else float(r[17]),
            updated_at=float(r[18] or r[16]),
            finished_at=None if r[19] is None else float(r[19]),
        )


# -- the knowledge graph (`zapomni_db.graph.GraphStore`) ------------------------------------------


@dataclass(frozen=True)
class EntityRow:
    """An entity to write. `key` (canonical name + "|" + type family, computed by the engine) is what
    writes merge on; `id` is used only when the entity is created."""

    key: str
    id: str
    name: str
    type: str
    aliases: list[str] = field(default_factory=list)
    description: str | None = None
    confidence: float = 1.0


@dataclass(frozen=True)
class MentionRow:
    """A chunk mentioning an entity `count` times. `memory_id` is filled in by reads (exports); writes ignore it."""

    chunk_id: str
    entity_key: str
    count: int = 1
    confidence: float = 1.0
    memory_id: str | None = None


@dataclass(frozen=True)
class RelationRow:
    """One piece of evidence for a relation: the chunk `chunk_id` states `subject -[type]-> object`."""

    id: str
    subject_key: str
    object_key: str
    type: str
    predicate: str
    strength: float
    evidence: str
    method: str
    chunk_id: str
    valid_from: str
    valid_from_ts: float


@dataclass(frozen=True)
class KnownEntity:
    """What the engine's in-memory fuzzy index of entity names holds."""

    key: str
    name: str
    type: str
    aliases: list[str]
    confidence: float


@dataclass(frozen=True)
class EntityInfo:
    """An entity as stored; `mentions` counts the chunks that mention it."""

    key: str
    id: str
    name: str
    type: str
    aliases: list[str]
    description: str | None
    confidence: float
    created_at: float
    updated_at: float
    mentions: int = 0

    # The Cypher projection that `from_row` reads, for an entity bound to `e`.
    PROJECTION = "e.key, e.id, e.name, e.type, e.aliases, e.description, e.confidence, e.created_at, e.updated_at"
    WIDTH = 9

    @classmethod
    def from_row(cls, row: list[Any], start: int = 0, mentions: int = 0) -> EntityInfo:
        r = row[start : start + cls.WIDTH]
        return cls(
            key=r[0],
            id=r[1],
            name=r[2],
            type=r[3],
            aliases=list(r[4] or []),
            description=r[5],
            confidence=float(r[6] or 0.0),
            created_at=float(r[7] or 0.0),
            updated_at=float(r[8] or r[7] or 0.0),
            mentions=mentions,
        )


@dataclass(frozen=True)
class RelationEvidence:
    """A stored relation edge (one piece of evidence) with its endpoints' names and, on traversal
    reads, the text of the chunk that states it. `support` counts the edges stating the same fact
    (same endpoints, direction and type) where a read folds them into one; 1 otherwise.

    Reads about one entity (`related`, `entities_of_chunks`) also say how the edge looks from it:
    `direction` "out" when that entity is the subject, "in" when it is the object, and `other`, the
    name of the entity at the other end.
    """

    id: str
    type: str
    predicate: str
    strength: float
    method: str
    subject_key: str
    subject_name: str
    object_key: str
    object_name: str
    valid_from: str | None
    valid_from_ts: float | None
    superseded_by: str | None
    memory_id: str
    chunk_id: str
    evidence: str
    chunk_text: str | None = None
    support: int = 1
    direction: str = "out"
    other: str = ""

    # The Cypher projection that `from_row` reads, for an edge `r` from `s` to `o`.
    PROJECTION = (
        "r.id, r.type, r.predicate, r.strength, r.method, s.key, s.name, o.key, o.name, r.valid_from, "
        "r.valid_from_ts, r.superseded_by, r.memory_id, r.chunk_id, r.evidence"
    )
    WIDTH = 15

    @classmethod
    def from_row(cls, row: list[Any], start: int = 0, *, support: int = 1, side: str | None = None) -> RelationEvidence:
        """`side`: the key of the entity the edge is read from (sets `direction` and `other`)."""
        r = row[start : start + cls.WIDTH]
        incoming = side is not None and side != r[5]
        return cls(
            id=r[0],
            type=r[1],
            predicate=r[2] or r[1],
            strength=float(r[3] or 0.0),
            method=r[4],
            subject_key=r[5],
            subject_name=r[6],
            object_key=r[7],
            object_name=r[8],
            valid_from=r[9],
            valid_from_ts=None if r[10] is None else float(r[10]),
            superseded_by=r[11],
            memory_id=r[12],
            chunk_id=r[13],
            evidence=r[14] or "",
            support=support,
            direction="in" if incoming else "out",
            other=r[6] if incoming else r[8],
        )

    @property
    def current(self) -> bool:
        return self.superseded_by is None

    @property
    def text(self) -> str:
        """The text of the chunk that states it (traversal reads), else the evidence span."""
        return self.chunk_text if self.chunk_text is not None else self.evidence


@dataclass(frozen=True)
class RelatedEntity:
    """An entity reached from another within `distance` hops (either direction).

    `path` holds the relation types along the shortest path found, from the start; `relation` is the
    strongest relation connecting it to the previous hop (current facts before superseded ones), and
    `evidence` the strongest few of those relations (the first is `relation`), with their chunk texts.
    """

    entity: EntityInfo
    distance: int
    path: list[str]
    via_key: str
    relation: RelationEvidence
    evidence: list[RelationEvidence]

    @property
    def name(self) -> str:
        return self.entity.name

    @property
    def type(self) -> str:
        return self.entity.type

    @property
    def aliases(self) -> list[str]:
        return self.entity.aliases


@dataclass(frozen=True)
class MentionedEntity:
    """An entity a chunk mentions, with its strongest 1-hop relations (current facts first)."""

    key: str
    name: str
    type: str
    count: int
    confidence: float
    relations: list[RelationEvidence]


@dataclass(frozen=True)
class GraphCounts:
    entities_by_type: dict[str, int]
    relations: int
    memories_done: int
    memories_pending: int  # searchable memories not yet processed by graph extraction
    relations_by_type: dict[str, int] = field(default_factory=dict)
    superseded: int = 0

    @property
    def entities(self) -> int:
        return sum(self.entities_by_type.values())


@dataclass(frozen=True)
class StoredFile:
    """A file's memory as the last ingestion left it (`file_hash` None: its write did not finish)."""

    path: str
    memory_id: str
    file_hash: str | None
    kind: str
    codebase: str | None  # a code file's: the directory it was indexed under


@dataclass(frozen=True)
class CodeFileRow:
    """A code file's `File` node to write."""

    id: str
    path: str  # absolute
    relative: str  # inside the codebase, POSIX
    codebase: str  # the codebase's root directory
    language: str
    module: str
    file_hash: str
    parsed_json: str  # the parse, kept so the codebase's links can be re-resolved without re-reading the file


@dataclass(frozen=True)
class SymbolRow:
    """A `Function`, `Method` or `Class` node to write."""

    id: str
    kind: str
    name: str
    qualified_name: str
    signature: str
    docstring: str | None
    line_start: int
    line_end: int
    parent: str | None  # the enclosing symbol's qualified name
    parent_id: str | None  # and its id (None: the file contains it)


@dataclass(frozen=True)
class SymbolInfo:
    """A symbol as found by a code lookup."""

    kind: str
    name: str
    qualified_name: str
    signature: str
    docstring: str | None
    language: str
    path: str
    line_start: int
    line_end: int
    codebase: str
