"""Re-embedding: recompute every stored chunk's vector with the configured embedder.

`zapomni migrate reembed` moves a store to another embedder (e.g. MiniLM 384-d to Ollama's
nomic-embed-text 768-d) without re-adding its memories. The chunks, their text and their keyword
statistics stay; only the vectors, the vector index and the embedder claim change.

Safe to interrupt and to run again:
- a `(:Reembed)` node records the target while the run is in progress; the engine refuses to
  open meanwhile, because its vector index is gone and half the vectors are from another model;
- every chunk gets its new vector and an `embedding_model` tag in one SET, so a resumed run
  skips exactly the chunks already done;
- the vector index is dropped before the first SET (a SET on an indexed chunk leaves a stale
  HNSW entry behind) and built again, with the new dimension, after the last one;
- the claim moves to the new embedder and the `(:Reembed)` node goes, in one query, at the end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import structlog

from zapomni_core.content.conversation import indexed_text
from zapomni_core.database import OpenDatabase
from zapomni_core.embedders import Embedder
from zapomni_core.errors import ConfigurationError, EmbedderUnavailable, StorageUnavailable
from zapomni_core.migrations import apply_migrations, needs_reembed
from zapomni_core.progress import Progress, ProgressFn
from zapomni_core.settings import Settings
from zapomni_db import (
    DatabaseError,
    EmbedderClaim,
    GraphClient,
    Maintenance,
    ReembedState,
    SchemaSettings,
    wait_for_indexes,
)
from zapomni_db.schema import create_vector_index, drop_vector_index, stored_vector_dimension, vector_index_dimension
from zapomni_db.workspaces import DEFAULT as DEFAULT_WORKSPACE
from zapomni_db.workspaces import existing_workspaces, graph_for

log = structlog.get_logger(__name__)

DEFAULT_BATCH_SIZE = 128
# Chunk ids read per query; the texts are read per batch, so memory stays small for any store.
_ID_PAGE = 10_000

# Progress counts a workspace's chunks (done includes an interrupted run's); its message names the workspace.
# It is reported at the start of each workspace and after every batch.
UNIT = "chunks"


@dataclass(frozen=True)
class ReembedPlan:
    model: str
    dimension: int
    stored: EmbedderClaim | None
    stored_vector_dimension: int | None
    in_progress: ReembedState | None
    chunks: int
    done: int  # chunks that already carry the target model's vector (from an interrupted run)

    @property
    def needed(self) -> bool:
        if self.in_progress is not None:
            return True
        return needs_reembed(self.stored, self.stored_vector_dimension, self.model, self.dimension)


@dataclass(frozen=True)
class ReembedReport:
    model: str
    dimension: int
    chunks: int
    embedded: int  # by this run
    skipped: int  # done by an earlier, interrupted run
    truncated: int  # chunks longer than the new model reads: only their beginning is embedded
    seconds: float

    @property
    def chunks_per_s(self) -> float:
        return round(self.embedded / self.seconds, 1) if self.seconds > 0 else 0.0


async def plan_reembed(client: GraphClient, embedder: Embedder) -> ReembedPlan:
    repository = Maintenance(client)
    return ReembedPlan(
        model=embedder.name,
        dimension=embedder.dimension,
        stored=await repository.stored_embedder(),
        stored_vector_dimension=await stored_vector_dimension(client),
        in_progress=await repository.reembed_state(),
        chunks=await repository.stored_chunks(),
        done=await repository.reembedded_chunks(embedder.name),
    )


async def reembed(
    database: OpenDatabase,
    embedder: Embedder,
    settings: Settings,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: ProgressFn | None = None,
) -> ReembedReport:
    """Move every chunk of every workspace to `embedder` (resuming an interrupted run).

    The default workspace goes last: servers refuse to start while its graph is claimed by another
    embedder, so an interrupted run cannot leave servers running on a half-moved store.
    """
    try:
        names = await existing_workspaces(database.connection, settings.graph_name)
        order = [name for name in names if name != DEFAULT_WORKSPACE] + [DEFAULT_WORKSPACE]
        reports = []
        for name in order:
            graph = GraphClient(database.connection, graph_for(settings.graph_name, name))
            log.info("reembed.workspace", workspace=name)
            reporter = _Reporter(progress, f"re-embedding workspace {name!r}")
            reports.append(await _reembed(replace(database, client=graph), embedder, settings, batch_size, reporter))
    except DatabaseError as exc:
        raise StorageUnavailable(f"the database failed during the re-embed ({exc})") from exc
    return ReembedReport(
        model=embedder.name,
        dimension=embedder.dimension,
        chunks=sum(r.chunks for r in reports),
        embedded=sum(r.embedded for r in reports),
        skipped=sum(r.skipped for r in reports),
        truncated=sum(r.truncated for r in reports),
        seconds=round(sum(r.seconds for r in reports), 3),
    )


async def _reembed(
    database: OpenDatabase,
    embedder: Embedder,
    settings: Settings,
    batch_size: int,
    report_progress: _Reporter,
) -> ReembedReport:
    client = database.client
    repository = Maintenance(client)
    started = time.perf_counter()
    model, dimension = embedder.name, embedder.dimension

    async def the_configured_dimension() -> int:
        return dimension

    # An old graph gets its schema first; its index is built for the vectors it has, dropped below.
    await apply_migrations(client, settings, the_configured_dimension)
    plan = await plan_reembed(client, embedder)
    if not plan.needed:
        return ReembedReport(model, dimension, plan.chunks, 0, plan.done, 0, 0.0)

    state, fresh = await _mark_in_progress(database, repository, model, dimension)
    log.info(
        "reembed.started" if fresh else "reembed.resumed",
        model=model,
        dimension=dimension,
        previous=plan.stored.model if plan.stored else None,
        chunks=plan.chunks,
        already_done=plan.done,
    )
    await drop_vector_index(client)
    tally = _Tally(done=plan.done, total=plan.chunks)
    report_progress(tally)
    # A pass walks every chunk not yet moved, in id order. Another pass finds nothing unless chunks
    # were written meanwhile (by a server nobody stopped); the run goes on until a pass moves none.
    while await _move_pass(repository, embedder, batch_size, tally, report_progress):
        pass

    await create_vector_index(client, SchemaSettings(dimension=dimension, ef_runtime=settings.vector_ef_runtime))
    await wait_for_indexes(client)
    built = await vector_index_dimension(client)
    if built != dimension:  # an index of another dimension would silently leave every vector out
        raise ConfigurationError(f"the vector index has dimension {built}, not {dimension}; run this again")
    await repository.finish_reembed(model, dimension)
    report = ReembedReport(
        model=model,
        dimension=dimension,
        chunks=tally.total,
        embedded=tally.embedded,
        skipped=plan.done,
        truncated=tally.truncated,
        seconds=round(time.perf_counter() - started, 3),
    )
    log.info("reembed.finished", **report.__dict__, chunks_per_s=report.chunks_per_s, started_at=state.started_at)
    if tally.truncated:
        log.warning(
            "reembed.chunks_truncated",
            chunks=tally.truncated,
            max_tokens=embedder.max_tokens,
            note="these chunks were cut for the previous model; only their beginning is embedded now",
        )
    return report


async def _mark_in_progress(
    database: OpenDatabase, repository: Maintenance, model: str, dimension: int
) -> tuple[ReembedState, bool]:
    """Record the run (True: a new one) unless other processes use the database."""
    if database.embedded is None:
        # The in-progress mark keeps new servers out; the ones already running must be stopped by hand.
        log.warning(
            "reembed.server_mode",
            note="no Zapomni server may use this graph until the re-embed finishes; stop them before it starts",
        )
    # Look for other clients, mark, and look again: a server that attached before the mark is
    # seen the second time, and one that attaches after it finds the mark and refuses to open.
    _refuse_if_shared(database)
    state, fresh = await repository.begin_reembed(model, dimension, time.time())
    try:
        _refuse_if_shared(database)
    except ConfigurationError:
        if fresh:
            await repository.abandon_reembed()
        raise
    return state, fresh


def _refuse_if_shared(database: OpenDatabase) -> None:
    if database.embedded is None:
        return  # a server's clients cannot be counted from here (see the warning in `reembed`)
    # Every process attached to the embedded database holds a lock file; one of them is ours.
    others = database.embedded.attached_clients() - 1
    if others > 0:
        raise ConfigurationError(
            f"{others} other Zapomni process(es) are using the database in ZAPOMNI_DATA_DIR={database.location}: "
            "stop them first (MCP servers, `zapomni serve`, other commands) and run this again. A re-embed "
            "drops the vector index and rewrites every chunk's vector; a server running meanwhile would "
            "search without that index and store vectors from the old embedder."
        )


def _check_dimension(vectors: list[list[float]], dimension: int, model: str) -> None:
    # A vector of the wrong length would be stored without complaint and never indexed.
    wrong = {len(v) for v in vectors if len(v) != dimension}
    if wrong:
        raise EmbedderUnavailable(f"{model} returned {sorted(wrong)}-d vectors, expected {dimension}-d")


@dataclass
class _Tally:
    done: int  # chunks carrying the new model's vector, from this run or an earlier one
    total: int
    embedded: int = 0  # by this run
    truncated: int = 0


async def _move_pass(
    repository: Maintenance,
    embedder: Embedder,
    batch_size: int,
    tally: _Tally,
    report_progress: _Reporter,
) -> int:
    """Give every chunk not yet moved its new vector, in id order; returns how many were moved."""
    moved = 0
    after = ""
    while ids := await repository.chunk_ids_to_reembed(embedder.name, after=after, limit=_ID_PAGE):
        after = ids[-1]
        for start in range(0, len(ids), batch_size):
            moved += await _move_batch(repository, embedder, ids[start : start + batch_size], tally)
            report_progress(tally)
    return moved


async def _move_batch(repository: Maintenance, embedder: Embedder, ids: list[str], tally: _Tally) -> int:
    stored = await repository.chunk_texts(ids)
    if not stored:
        return 0  # deleted since their ids were read
    texts = [indexed_text(context, text) for text, context in stored.values()]
    vectors = await embedder.embed_documents(texts)
    _check_dimension(vectors, embedder.dimension, embedder.name)
    written = await repository.set_chunk_embeddings(embedder.name, dict(zip(stored, vectors, strict=True)))
    tally.truncated += sum(n > embedder.max_tokens for n in embedder.count_tokens(texts))
    tally.embedded += written
    tally.done += written
    tally.total = max(tally.total, tally.done)
    return written


@dataclass(frozen=True)
class _Reporter:
    progress: ProgressFn | None
    message: str

    def __call__(self, tally: _Tally) -> None:
        if self.progress is not None:
            self.progress(Progress(tally.done, tally.total, UNIT, self.message))
