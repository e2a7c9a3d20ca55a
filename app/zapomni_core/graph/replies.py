"""The graph tools' replies: a build started, the graph's status, and the entities related to one."""

from __future__ import annotations

from pydantic import BaseModel, Field

from zapomni_core.code.replies import CodeNeighbours
from zapomni_core.jobs.replies import JobInfo


class BuildGraphResult(BaseModel):
    job_id: str | None = Field(
        description="Follow it with graph_status(job_id) or job_status(job_id); an extraction already queued is "
        "returned rather than a second one; null when no memory was left to process."
    )
    workspace: str
    memories: int = Field(description="Memories the job will process: those not yet processed (now), or the given ids.")
    extractor: str = Field(description="spacy (NER and rules, no LLM) or ollama:<model>.")
    note: str | None = Field(
        None, description="Why no new job was queued (one already covers these memories, or none is pending)."
    )


class GraphCountsOut(BaseModel):
    entities: int
    entities_by_type: dict[str, int]
    relations: int = Field(description="Relation edges, one per chunk that states (or suggests) the relation.")
    memories_processed: int
    memories_pending: int = Field(description="Memories not yet processed: the extraction queue's depth.")


class GraphStatus(BaseModel):
    workspace: str
    job: JobInfo | None = Field(description="The build_graph job asked for, else the latest one; null if none ran.")
    graph: GraphCountsOut
    extractor: str


class EntityRef(BaseModel):
    name: str
    type: str
    aliases: list[str] = Field(default_factory=list, description="Other names it was mentioned by.")


class Evidence(BaseModel):
    memory_id: str
    text: str = Field(description="The chunk that states the relation.")
    valid_from: str | None = Field(description="The date of the memory it came from.")


class RelationOut(BaseModel):
    type: str = Field(description="A documented relation type; CO_OCCURS means only 'mentioned together'.")
    predicate: str = Field(description="The relation as stated, e.g. 'moved to'.")
    strength: float = Field(ge=0.0, le=1.0)
    method: str = Field(description="llm, pattern or dependency (stated), or cooccurrence (weakest).")
    direction: str = Field(description="out: the entity asked about is the subject; in: the object.")
    valid_from: str | None
    superseded: bool = Field(False, description="A newer fact replaced this one (both are kept, with their dates).")


class RelatedEntity(BaseModel):
    entity: EntityRef
    distance: int = Field(description="Hops from the entity asked about.")
    via: str | None = Field(None, description="The entity before it on the path (the one `relation` links it to).")
    path: list[str] = Field(description="Relation types along the way.")
    relation: RelationOut = Field(description="The strongest relation linking it (to the entity before it).")
    evidence: list[Evidence]


class RelatedResult(BaseModel):
    workspace: str
    matched: EntityRef | None = Field(description="The entity the name resolved to; null if none did.")
    match_score: float | None = Field(description="How closely the name matched (0-100).")
    candidates: list[EntityRef] = Field(description="Other close matches, when the name was ambiguous.")
    related: list[RelatedEntity]
    count: int
    code: list[CodeNeighbours] = Field(
        default_factory=list,
        description="When the name is a function, method or class of an indexed codebase: each such symbol with its "
        "callers, callees, members, bases and subclasses.",
    )


class ConnectedEntity(BaseModel):
    name: str
    type: str
    relations: int = Field(description="Relation edges touching it (current and superseded).")


class GraphOverview(BaseModel):
    workspace: str
    entities: list[ConnectedEntity] = Field(description="The most connected entities, most relations first.")
