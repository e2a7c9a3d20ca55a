"""What the graph tools ask of the engine: queue builds, report the graph, traverse it, and annotate search hits."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import structlog

from zapomni_core.code.service import CodeService
from zapomni_core.context import NO_CONTEXT, RequestContext
from zapomni_core.errors import NotFound
from zapomni_core.faults import storage_boundary
from zapomni_core.graph.building import KIND, build_job
from zapomni_core.graph.merge import EntityIndex, Lookup
from zapomni_core.graph.replies import (
    BuildGraphResult,
    ConnectedEntity,
    EntityRef,
    Evidence,
    GraphCountsOut,
    GraphOverview,
    GraphStatus,
    RelatedEntity,
    RelatedResult,
    RelationOut,
)
from zapomni_core.graph.requests import BuildGraphRequest, GetRelatedRequest, GraphOverviewRequest, GraphStatusRequest
from zapomni_core.jobs.requests import JobStatusRequest
from zapomni_core.jobs.service import JobService
from zapomni_core.kernel.registry import Workspace, Workspaces
from zapomni_core.memories.replies import HitEntity, HitRelation
from zapomni_db import GraphStores, JobRow, KnownEntity

log = structlog.get_logger(__name__)

# Entities and relations attached to each search hit with graph_context.
HIT_ENTITIES = 8
HIT_RELATIONS = 3
# Other close matches get_related offers for an ambiguous name.
MAX_CANDIDATES = 5
# How many build_graph jobs graph_status looks through for the latest.
RECENT_JOBS = 100


@storage_boundary
class GraphService:
    def __init__(
        self,
        workspaces: Workspaces,
        jobs: JobService,
        *,
        extractor: str,
        match_threshold: float,
        auto: bool,
        wake_jobs: Callable[[], None],
        code: CodeService | None = None,
    ) -> None:
        self._workspaces = workspaces
        self._code = code  # get_related also reaches the code graph of indexed codebases
        self._jobs = jobs
        self.extractor = extractor
        self._threshold = match_threshold
        self._auto = auto
        self._wake_jobs = wake_jobs

    async def build(self, request: BuildGraphRequest) -> BuildGraphResult:
        workspace = await self._workspaces.require(request.workspace)
        stores = workspace.stores
        ids: list[str] | None = None
        if request.memory_ids is not None:
            ids = list(dict.fromkeys(request.memory_ids))
            present = await stores.reads.existing_ids(ids)
            missing = [i for i in ids if i not in present]
            if missing:
                raise NotFound(f"memory_ids: no memory {', '.join(missing[:5])} in workspace {workspace.name!r}")
        total = len(ids) if ids is not None else await stores.graph.count_pending()
        result = BuildGraphResult(job_id=None, workspace=workspace.name, memories=total, extractor=self.extractor)
        if ids is None:
            # What is really pending: a job over every pending memory already queued or running (the automatic
            # extraction of new memories, usually) will do them all; a second would find nothing left.
            active = await _whole_workspace_job(stores, states=("pending", "running"))
            if active is not None:
                log.info("graph.already_queued", workspace=workspace.name, job_id=active.id, memories=total)
                return result.model_copy(
                    update={
                        "job_id": active.id,
                        "note": f"no new job: job {active.id} ({active.state}) already extracts every memory not "
                        f"yet processed ({total} now)",
                    }
                )
            if total == 0:
                processed = (await stores.graph.counts()).memories_done
                return result.model_copy(
                    update={
                        "note": f"nothing to do: all {processed} memories are processed already (new memories are "
                        "extracted as they are added when ZAPOMNI_GRAPH_AUTO is on); pass memory_ids to rebuild some"
                    }
                )
        job = build_job(ids, total)
        await stores.jobs.create(job)
        self._wake_jobs()
        log.info("graph.queued", workspace=workspace.name, job_id=job.id, memories=total)
        return result.model_copy(update={"job_id": job.id})

    async def queue_new_memories(self, workspace: Workspace) -> None:
        """After an add: make sure a job will pick the new memory up (one waiting job per workspace is enough)."""
        if not self._auto:
            return
        stores = workspace.stores
        if await _whole_workspace_job(stores, states=("pending",)) is not None:
            return
        await stores.jobs.create(build_job(None, await stores.graph.count_pending()))
        self._wake_jobs()

    async def status(self, request: GraphStatusRequest, ctx: RequestContext = NO_CONTEXT) -> GraphStatus:
        name = self._workspaces.resolve(request.workspace)
        stores = self._workspaces.stores(name)
        job = None
        if request.job_id is not None:
            job = await self._jobs.status(JobStatusRequest(job_id=request.job_id, wait_s=request.wait_s), ctx)
            if job.kind != KIND:
                raise NotFound(f"job_id: job {request.job_id} is a {job.kind} job, not build_graph (see job_status)")
            name, stores = job.workspace, self._workspaces.stores(job.workspace)
        else:
            latest = [row for row in await stores.jobs.list(None, RECENT_JOBS) if row.kind == KIND]
            if latest:
                job = await self._jobs.status(JobStatusRequest(job_id=latest[0].id, wait_s=request.wait_s), ctx)
        counts = await stores.graph.counts()
        return GraphStatus(
            workspace=name,
            job=job,
            graph=GraphCountsOut(
                entities=sum(counts.entities_by_type.values()),
                entities_by_type=counts.entities_by_type,
                relations=counts.relations,
                memories_processed=counts.memories_done,
                memories_pending=counts.memories_pending,
            ),
            extractor=self.extractor,
        )

    async def related(self, request: GetRelatedRequest) -> RelatedResult:
        name = self._workspaces.resolve(request.workspace)
        stores = self._workspaces.stores(name)
        found = await self._resolve(stores, request.entity)
        code = await self._code.neighbours(stores, request.entity, request.limit) if self._code else []
        if found.entity is None:
            return RelatedResult(
                workspace=name,
                matched=None,
                match_score=None,
                candidates=_refs(found.candidates),
                related=[],
                count=0,
                code=code,
            )
        rows = await stores.graph.related(
            found.entity.key, depth=request.depth, limit=request.limit, relation_types=request.relation_types
        )
        names = {found.entity.key: found.entity.name} | {row.entity.key: row.entity.name for row in rows}
        related = [
            RelatedEntity(
                entity=EntityRef(name=row.entity.name, type=row.entity.type, aliases=list(row.entity.aliases)),
                distance=row.distance,
                via=names.get(row.via_key),
                path=list(row.path),
                relation=RelationOut(
                    type=row.relation.type,
                    predicate=row.relation.predicate,
                    strength=row.relation.strength,
                    method=row.relation.method,
                    direction=row.relation.direction,
                    valid_from=row.relation.valid_from,
                    superseded=row.relation.superseded_by is not None,
                ),
                evidence=[
                    Evidence(memory_id=e.memory_id, text=e.chunk_text or e.evidence, valid_from=e.valid_from)
                    for e in row.evidence
                ],
            )
            for row in rows
        ]
        return RelatedResult(
            workspace=name,
            matched=_refs([found.entity])[0],
            match_score=round(found.score, 1),
            candidates=_refs(found.candidates),
            related=related,
            count=len(related),
            code=code,
        )

    async def overview(self, request: GraphOverviewRequest) -> GraphOverview:
        """The workspace's most connected entities: where a person starts looking at its graph."""
        name = self._workspaces.resolve(request.workspace)
        workspace = await self._workspaces.get(name, create=False)
        if workspace is None:
            return GraphOverview(workspace=name, entities=[])
        rows = await workspace.stores.graph.most_connected(request.limit)
        entities = [ConnectedEntity(name=entity, type=etype, relations=degree) for entity, etype, degree in rows]
        return GraphOverview(workspace=name, entities=entities)

    async def _resolve(self, stores: GraphStores, name: str) -> Lookup:
        """The entity a name means: an exact name or alias (one indexed read) before a fuzzy match, which
        needs every entity of the workspace read and indexed."""
        exact = await stores.graph.entities_named([name], limit=1 + MAX_CANDIDATES)
        if exact:
            known = [KnownEntity(e.key, e.name, e.type, tuple(e.aliases), e.confidence) for e in exact]
            return Lookup(known[0], 100.0, tuple(known[1:]))
        index = EntityIndex(await stores.graph.known_entities(), threshold=self._threshold)
        return index.lookup(name, limit=MAX_CANDIDATES)

    async def hit_context(self, stores: GraphStores, chunk_ids: Sequence[str]) -> dict[str, list[HitEntity]]:
        """For search's graph_context: each chunk's entities and their strongest 1-hop relations."""
        by_chunk = await stores.graph.entities_of_chunks(
            list(chunk_ids), per_chunk=HIT_ENTITIES, relations_per_entity=HIT_RELATIONS
        )
        return {
            chunk_id: [
                HitEntity(
                    name=entity.name,
                    type=entity.type,
                    relations=[
                        HitRelation(
                            type=r.type,
                            predicate=r.predicate,
                            other=r.other,
                            direction=r.direction,
                            strength=r.strength,
                            method=r.method,
                            valid_from=r.valid_from,
                            superseded=r.superseded_by is not None,
                        )
                        for r in entity.relations
                    ],
                )
                for entity in entities
            ]
            for chunk_id, entities in by_chunk.items()
        }

    async def counts(self, workspace: str) -> tuple[int, int, int]:
        """Entities, relations and memories waiting for extraction, for get_stats."""
        return await self._workspaces.stores(workspace).graph.totals()


def _refs(entities: Sequence[KnownEntity]) -> list[EntityRef]:
    return [EntityRef(name=e.name, type=e.type, aliases=list(e.aliases)) for e in entities]


async def _whole_workspace_job(stores: GraphStores, states: Sequence[str]) -> JobRow | None:
    """A build_graph job over every pending memory of the workspace, in one of `states`."""
    for job in await stores.jobs.active():
        if job.kind == KIND and job.state in states and json.loads(job.args_json).get("memory_ids") is None:
            return job
    return None
