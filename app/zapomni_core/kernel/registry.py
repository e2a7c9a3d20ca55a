"""Workspaces: each one a graph of its own, opened once per process with its stores and search.

A workspace's graph is prepared the first time this process writes to it (or, for one that
exists, reads from it): schema migrations, the embedder claim, the vector-index repair and the
sweep of crash leftovers, then its keyword index is built. Reads of a workspace that does not
exist create nothing and find nothing.

A graph the database has just loaded may still be building its indexes (a million chunks: minutes). Its
workspace opens at once and answers reads (the vector leg compares every stored vector meanwhile); its
writes are refused with the build's progress until the build ends, and the repairs that write run then.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from zapomni_core.errors import ConfigurationError, NotFound
from zapomni_core.kernel.settling import indexes_still_building, settle, settle_after_build
from zapomni_core.search import SearchPipeline
from zapomni_core.search.index_files import Presence
from zapomni_core.search.keyword_index import KeywordIndex, KeywordIndexDirs
from zapomni_db import (
    Connection,
    GraphClient,
    GraphStores,
    JobStore,
    ReembedState,
    SchemaMismatch,
    SchemaSettings,
    describe_builds,
    migrate,
)
from zapomni_db.workspaces import drop_keyword_stamp, drop_workspace_graph, existing_workspaces, graph_for

log = structlog.get_logger(__name__)

# How long the last process to close waits for its keyword indexes to catch up and be proven; past it, none is.
PROVE_WITHIN_S = 10.0


def in_progress_message(state: ReembedState) -> str:
    """Why the engine will not open a graph in the middle of a re-embed, and what to do."""
    return (
        f"a re-embed of this graph to {state.model} ({state.dimension}-d) has not finished, and until it does the "
        "graph has no vector index. Run `zapomni migrate reembed` with that embedder configured to complete it "
        "(it resumes where it stopped), or with the previous embedder configured to go back"
    )


@dataclass(frozen=True)
class Workspace:
    name: str
    stores: GraphStores
    keyword_index: KeywordIndex
    search: SearchPipeline


@dataclass(frozen=True)
class EmbedderIdentity:
    name: str
    dimension: int


class Workspaces:
    def __init__(
        self,
        connection: Connection,
        *,
        base_graph: str,
        default: str,
        schema: SchemaSettings,
        embedder: EmbedderIdentity,
        search_for: Callable[[GraphStores, KeywordIndex], SearchPipeline],
        keyword_dirs: KeywordIndexDirs | None = None,
        presence: Presence | None = None,
    ) -> None:
        self._connection = connection
        self._base = base_graph
        self.default = default
        self._schema = schema
        self._embedder = embedder
        self._search_for = search_for
        self._keyword_dirs = keyword_dirs  # keyword indexes beside the embedded database; None: in memory
        self._presence = presence  # this process's, among the writers of those indexes' store
        self._open: dict[str, Workspace] = {}
        self._settling: dict[str, asyncio.Task[None]] = {}  # workspaces whose writes wait for an index build
        self._lock = asyncio.Lock()

    def resolve(self, name: str | None) -> str:
        return name or self.default

    async def get(self, name: str | None, *, create: bool) -> Workspace | None:
        """The open workspace `name` (None: the default); None when it does not exist and `create` is False."""
        name = self.resolve(name)
        workspace = self._open.get(name)
        if workspace is not None and (not create or await self._graph_exists(name)):
            return workspace
        async with self._lock:
            workspace = self._open.get(name)
            if workspace is not None and await self._graph_exists(name):
                return workspace
            # Gone since it was opened: another process deleted the workspace.
            self._open.pop(name, None)
            if not create and not await self._graph_exists(name):
                return None
            workspace = await self._prepare(name)
            self._open[name] = workspace
            return workspace

    async def require(self, name: str | None) -> Workspace:
        """An existing workspace, or NotFound naming it."""
        workspace = await self.get(name, create=False)
        if workspace is None:
            raise NotFound(f"workspace {self.resolve(name)!r} does not exist (list_workspaces shows those that do)")
        return workspace

    def stores(self, name: str | None) -> GraphStores:
        """The stores of a workspace's graph without preparing it: for counting, sizing and exporting.

        Reads of a graph that does not exist find nothing and create nothing; no keyword index is built.
        """
        return self._stores_of(graph_for(self._base, self.resolve(name)))

    def jobs(self, name: str) -> JobStore:
        """A workspace's job store (the job runner's queue); see `stores`."""
        return self.stores(name).jobs

    async def open(self, name: str) -> Workspace | None:
        """The existing workspace `name`, prepared for a job to run in; None when it does not exist."""
        return await self.get(name, create=False)

    async def existing_stores(self, name: str) -> GraphStores:
        """`stores(name)` of a workspace that exists, or NotFound naming it."""
        if not await self._graph_exists(name):
            raise NotFound(f"workspace {name!r} does not exist (list_workspaces shows those that do)")
        return self.stores(name)

    async def names(self) -> list[str]:
        return await existing_workspaces(self._connection, self._base)

    async def drop(self, name: str) -> bool:
        async with self._lock:
            self._open.pop(name, None)
            settling = self._settling.pop(name, None)
            if settling is not None:
                settling.cancel()
            graph = graph_for(self._base, name)
            dropped = await drop_workspace_graph(self._connection, self._base, name)
            if self._keyword_dirs is not None:
                await self._keyword_dirs.discard(graph)  # waits for a catch-up writing it: it finds no graph after
            await drop_keyword_stamp(self._connection, graph)
            return dropped

    async def close_keyword_indexes(self) -> None:
        """Let go of each open workspace's keyword index (every catch-up committed it: nothing is left to save).
        The last process to leave the store first proves those indexes complete, for the next start (decision 0045);
        within a limit, as a database gone at shutdown must not hold the exit up."""
        if self._keyword_dirs is not None and self._presence is not None:
            indexes = [workspace.keyword_index for workspace in self.opened()]
            try:
                await asyncio.wait_for(self._keyword_dirs.leave(self._presence, indexes), PROVE_WITHIN_S)
            except TimeoutError:
                log.warning("keyword_index.not_proven", reason=f"not caught up within {PROVE_WITHIN_S} s")
        for workspace in self.opened():
            await workspace.keyword_index.close()

    def _stores_of(self, graph: str) -> GraphStores:
        return GraphStores.on(GraphClient(self._connection, graph))

    def opened(self) -> list[Workspace]:
        return list(self._open.values())

    async def _graph_exists(self, name: str) -> bool:
        return await GraphClient(self._connection, graph_for(self._base, name)).exists()

    async def _prepare(self, name: str) -> Workspace:
        started = time.perf_counter()
        graph = graph_for(self._base, name)
        stores = self._stores_of(graph)
        client = stores.client
        in_progress = await stores.maintenance.reembed_state()
        if in_progress is not None:  # without a vector index and with vectors of two models: unusable
            raise ConfigurationError(f"workspace {name!r}: {in_progress_message(in_progress)}")
        try:
            await migrate(client, self._schema)
        except SchemaMismatch as exc:  # an old, unversioned graph whose vectors have another dimension
            raise ConfigurationError(f"{exc} (`zapomni migrate status` shows what is stored)") from None
        try:
            await stores.maintenance.claim_embedder(self._embedder.name, self._embedder.dimension)
        except SchemaMismatch as exc:
            raise ConfigurationError(
                f"{exc}. Use the embedder that built it (ZAPOMNI_EMBEDDER / EMBEDDING_MODEL), point "
                "ZAPOMNI_DATA_DIR or GRAPH_NAME at a new store, or re-embed the stored memories with the "
                "configured embedder: stop every Zapomni server on this store, then run `zapomni migrate reembed`."
            ) from None
        fence = self._connection.fence(graph)
        building = await indexes_still_building(client)
        if building:  # a store the database has just loaded: served now, written once its indexes are built
            fence.hold(describe_builds(building))
            log.warning(
                "workspace.writes_held",
                workspace=name,
                reason="indexes building after a load",
                indexes=[str(build) for build in building],
            )
        else:
            await settle(name, stores, self._schema)
        keyword_index = KeywordIndex(stores.search, stores.maintenance, graph, self._keyword_dirs)
        await keyword_index.open()  # opened beside the data and caught up, or made from the stored texts
        if building:
            self._settling[name] = asyncio.create_task(settle_after_build(name, stores, self._schema, fence))
        log.info("workspace.opened", workspace=name, duration_ms=round((time.perf_counter() - started) * 1000, 1))
        return Workspace(name, stores, keyword_index, self._search_for(stores, keyword_index))

    def held_writes(self, name: str | None) -> str | None:
        """The index build a workspace's writes wait for (its progress), or None when they go through."""
        return self._connection.fence(graph_for(self._base, self.resolve(name))).building

    async def close(self) -> None:
        """Stop waiting for index builds (a next opening holds writes again while one goes on)."""
        for task in self._settling.values():
            task.cancel()
        await asyncio.gather(*self._settling.values(), return_exceptions=True)
        self._settling.clear()
