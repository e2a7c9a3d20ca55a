"""What `GraphStore` takes and returns: the knowledge graph's entities, mentions and relations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
