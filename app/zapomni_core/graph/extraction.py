"""What extraction produces and the graph stores: the vocabulary every graph stage shares.

Extractors (spaCy NER + rules, or a local LLM through Ollama) turn each chunk's text into a
`ChunkGraph`: the entities it mentions and the relations it states between them. Relation
subjects and objects are always names of entities in the same `ChunkGraph`. How certain a
relation is shows in its `method` and `strength`: a co-occurrence is never presented as a typed
fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

# Entity types. spaCy's labels are kept where they exist (GPE/LOC/FAC fold into PLACE); CONCEPT is a
# noun-phrase concept, IDENTIFIER a code identifier (`ERR_CONN_RESET`, `foo.bar()`).
EntityType = Literal[
    "PERSON",
    "ORG",
    "PLACE",
    "PRODUCT",
    "EVENT",
    "WORK_OF_ART",
    "DATE",
    "GROUP",  # spaCy NORP: nationalities, religious and political groups
    "LANGUAGE",
    "LAW",
    "CONCEPT",
    "IDENTIFIER",
    "OTHER",
]
ENTITY_TYPES: tuple[str, ...] = get_args(EntityType)

# Relation types: a documented set, plus OTHER (with the free-text predicate) and CO_OCCURS (no typed
# evidence: the two entities were only mentioned in the same chunk).
RelationType = Literal[
    "IS_A",
    "PART_OF",
    "USES",
    "DEPENDS_ON",
    "CREATED",
    "OWNS",
    "WORKS_FOR",
    "MEMBER_OF",
    "LIVES_IN",
    "LOCATED_IN",
    "FAMILY_OF",
    "KNOWS",
    "LIKES",
    "CAUSES",
    "HAPPENED_ON",
    "OTHER",
    "CO_OCCURS",
]
RELATION_TYPES: tuple[str, ...] = get_args(RelationType)

# A subject holds one of these at a time: a newer fact with another object supersedes the older one
# ("Maria lives in Berlin", later "Maria moved to Lisbon").
EXCLUSIVE_RELATIONS: frozenset[str] = frozenset({"LIVES_IN", "WORKS_FOR", "LOCATED_IN"})

# How a relation was found, most to least certain.
Method = Literal["llm", "pattern", "dependency", "cooccurrence"]


@dataclass(frozen=True)
class Mention:
    """An entity mentioned in one chunk."""

    name: str  # as written in the text (the first form seen, when mentioned several times)
    type: str  # one of ENTITY_TYPES
    confidence: float  # 0..1
    count: int = 1  # mentions in the chunk
    description: str | None = None  # the LLM path gives one; NER does not


@dataclass(frozen=True)
class Relation:
    """A relation a chunk states (or, for CO_OCCURS, merely suggests) between two of its entities."""

    subject: str  # a Mention.name of the same ChunkGraph
    object: str  # a Mention.name of the same ChunkGraph
    type: str  # one of RELATION_TYPES
    predicate: str  # free text as stated ("moved to", "is part of"); the type's name when there is none
    strength: float  # 0..1; co-occurrence stays below every typed method's
    evidence: str  # the span of the chunk's text that supports it
    method: str  # one of Method


@dataclass(frozen=True)
class ChunkGraph:
    entities: tuple[Mention, ...] = ()
    relations: tuple[Relation, ...] = ()
    # Items repaired or dropped ("relation 3: object 'X' is not an entity of the chunk"): recorded on
    # the job, never silently lost.
    problems: tuple[str, ...] = ()


class Extractor(Protocol):
    """Turns chunk texts into their graphs. Built once at start-up; safe to call concurrently."""

    name: str  # "spacy" | "ollama:<model>"

    async def extract(self, texts: Sequence[str]) -> list[ChunkGraph]:
        """One ChunkGraph per text, in order. Raises ExtractorUnavailable when the extractor is (the LLM
        unreachable after its retries, the model missing): then none of the texts counts as processed.
        A bad answer for one chunk is a `problem`, never an exception."""
        ...

    async def aclose(self) -> None:
        """Release what it holds (an HTTP client, a worker thread)."""
        ...
