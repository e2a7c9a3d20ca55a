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
class RelationFact:
    """A relation one chunk states between two entities, by key: what merging a chunk's extracted graph
    yields (`zapomni_core.graph.merge`), and what every relation edge carries."""

    subject_key: str
    object_key: str
    type: str
    predicate: str  # as stated ("moved to"); the type's name when there is none
    strength: float
    evidence: str  # the span of the chunk's text that states it
    method: str


@dataclass(frozen=True, kw_only=True)
class RelationRow(RelationFact):
    """A RELATED_TO edge: one piece of evidence for a fact, the chunk `chunk_id` stating it, from `valid_from`.

    A build writes it (the store fills in `memory_id`, and `superseded_by` by the supersession rule);
    an export reads it, and an import writes it back as it was.
    """

    id: str
    chunk_id: str
    valid_from: str | None
    valid_from_ts: float | None
    memory_id: str | None = None
    superseded_by: str | None = None  # the id of the newer fact that replaced this one

    # The Cypher projection that `from_row` reads, for an edge `r` from `s` to `o`.
    PROJECTION = (
        "r.id, r.type, r.predicate, r.strength, r.method, s.key, o.key, r.valid_from, r.valid_from_ts, "
        "r.superseded_by, r.memory_id, r.chunk_id, r.evidence"
    )
    WIDTH = 13

    @classmethod
    def from_row(cls, row: list[Any], start: int = 0) -> RelationRow:
        return cls(**cls._fields_of(row, start))

    @classmethod
    def _fields_of(cls, row: list[Any], start: int) -> dict[str, Any]:
        r = row[start : start + RelationRow.WIDTH]
        return {
            "id": r[0],
            "type": r[1],
            "predicate": r[2] or r[1],
            "strength": float(r[3] or 0.0),
            "method": r[4],
            "subject_key": r[5],
            "object_key": r[6],
            "valid_from": r[7],
            "valid_from_ts": None if r[8] is None else float(r[8]),
            "superseded_by": r[9],
            "memory_id": r[10],
            "chunk_id": r[11],
            "evidence": r[12] or "",
        }

    @property
    def current(self) -> bool:
        return self.superseded_by is None


@dataclass(frozen=True)
class KnownEntity:
    """An entity as name resolution needs it: what the engine's in-memory index of entity names holds
    (`zapomni_core.graph.merge.EntityIndex`), built from `GraphStore.known_entities`."""

    key: str
    name: str
    type: str
    aliases: tuple[str, ...]
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


@dataclass(frozen=True, kw_only=True)
class RelationEvidence(RelationRow):
    """A relation edge as the traversals read it: with its endpoints' names and the text of the chunk
    that states it. `support` counts the edges stating the same fact (same endpoints, direction and
    type) where a read folds them into one; 1 otherwise.

    Reads about one entity (`related`, `entities_of_chunks`) also say how the edge looks from it:
    `direction` "out" when that entity is the subject, "in" when it is the object, and `other`, the
    name of the entity at the other end.
    """

    memory_id: str  # a stored edge always has one: the store writes it with the edge
    subject_name: str
    object_name: str
    chunk_text: str | None = None
    support: int = 1
    direction: str = "out"
    other: str = ""

    PROJECTION = f"{RelationRow.PROJECTION}, s.name, o.name"
    WIDTH = RelationRow.WIDTH + 2

    @classmethod
    def from_row(cls, row: list[Any], start: int = 0, *, support: int = 1, side: str | None = None) -> RelationEvidence:
        """`side`: the key of the entity the edge is read from (sets `direction` and `other`)."""
        fields = cls._fields_of(row, start)
        subject_name, object_name = row[start + RelationRow.WIDTH : start + cls.WIDTH]
        incoming = side is not None and side != fields["subject_key"]
        return cls(
            **fields,
            subject_name=subject_name,
            object_name=object_name,
            support=support,
            direction="in" if incoming else "out",
            other=subject_name if incoming else object_name,
        )

    @property
    def text(self) -> str:
        """The text of the chunk that states it (traversal reads), else the evidence span."""
        return self.chunk_text if self.chunk_text is not None else self.evidence


@dataclass(frozen=True)
class ReachedEntity:
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
