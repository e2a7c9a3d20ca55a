"""The graph tools' requests: build_graph, graph_status and get_related."""

from __future__ import annotations

from pydantic import Field

from zapomni_core.graph.extraction import RelationType
from zapomni_core.jobs.requests import JobId, WaitSeconds
from zapomni_core.memories.requests import MAX_DELETE_IDS, MemoryId
from zapomni_core.validation import ScopedRequest

MAX_DEPTH = 3
MAX_RELATED = 100
MAX_ENTITY_CHARS = 200


class BuildGraphRequest(ScopedRequest):
    memory_ids: list[MemoryId] | None = Field(
        None,
        min_length=1,
        max_length=MAX_DELETE_IDS,
        description=f"(Re)build the graph of these memories (1-{MAX_DELETE_IDS} ids); by default every memory "
        "not yet processed.",
    )


class GraphOverviewRequest(ScopedRequest):
    limit: int = Field(30, ge=1, le=MAX_RELATED, description=f"The most connected entities (1-{MAX_RELATED}).")


class GraphStatusRequest(ScopedRequest):
    job_id: JobId | None = Field(None, description="A build_graph job to report on; by default the latest one.")
    wait_s: WaitSeconds = 0


class GetRelatedRequest(ScopedRequest):
    entity: str = Field(
        min_length=1,
        max_length=MAX_ENTITY_CHARS,
        description="An entity's name as written anywhere (matched fuzzily: 'apple inc' finds Apple Inc.).",
    )
    depth: int = Field(1, ge=1, le=MAX_DEPTH, description=f"Hops to follow (1-{MAX_DEPTH}).")
    limit: int = Field(20, ge=1, le=MAX_RELATED, description=f"At most this many related entities (1-{MAX_RELATED}).")
    relation_types: list[RelationType] | None = Field(
        None, min_length=1, description="Follow only these relation types (e.g. ['WORKS_FOR', 'LIVES_IN'])."
    )
