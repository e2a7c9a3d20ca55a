"""The checks' dependencies, held across checks: connections made lazily and rebuilt after a failure,
and the embedder built once in the background.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import suppress

import structlog

from zapomni_core.embedders.base import Embedder
from zapomni_core.health.results import CHECK_TIMEOUT_S, CheckFailed, describe
from zapomni_db import DatabaseTarget, GraphClient, connect
from zapomni_db.errors import DatabaseError
from zapomni_db.probes import CacheProbe, ServerProbe
from zapomni_db.schema import current_version

log = structlog.get_logger(__name__)


# -- the database ------------------------------------------------------------------------------


class DatabaseProbe:
    """Lazy connections to FalkorDB that are rebuilt after a failure, never started or waited for."""

    def __init__(self, target: DatabaseTarget, timeout_s: float = CHECK_TIMEOUT_S) -> None:
        self.target = target
        self.timeout_s = timeout_s
        self.server = ServerProbe(target, timeout_s)  # PING/INFO: answers, and has loaded?
        self._graph: GraphClient | None = None

    async def schema_version(self) -> int:
        """The graph's schema version, on a fresh client when the cached one has gone stale."""
        for attempt in (1, 2):
            client = await self._graph_client()
            try:
                return await current_version(client)
            except (DatabaseError, OSError):
                await self._drop_graph_client()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def _graph_client(self) -> GraphClient:
        if self._graph is None:
            # No waiting while the server loads: LOADING is the answer here, not a reason to wait.
            # The FalkorDB client sends one blocking INFO while it is built: keep it off the loop.
            connection = await asyncio.to_thread(
                connect,
                self.target,
                max_connections=2,
                timeout_s=self.timeout_s,
                socket_timeout_s=self.timeout_s,
                connect_timeout_s=self.timeout_s,
                loading_timeout_s=0.0,
                recovery_timeout_s=0.0,  # nor for a restart: an observer reports, it does not retry
            )
            self._graph = GraphClient(connection, self.target.graph_name)
        return self._graph

    async def _drop_graph_client(self) -> None:
        client, self._graph = self._graph, None
        if client is not None:
            with suppress(Exception):
                await client.connection.close()

    async def aclose(self) -> None:
        await self._drop_graph_client()
        await self.server.aclose()


# -- the embedding cache -----------------------------------------------------------------------


class RedisProbe:
    """The embedding cache's Redis (REDIS_URL), checked only when one is configured."""

    def __init__(self, url: str, label: str, timeout_s: float = CHECK_TIMEOUT_S) -> None:
        self.label = label
        self.timeout_s = timeout_s
        self.cache = CacheProbe(url, timeout_s)

    async def aclose(self) -> None:
        await self.cache.aclose()


# -- the embedder ------------------------------------------------------------------------------


class EmbedderProbe:
    """The embedder, built once in the background; a failed build is retried by the next check.

    The build runs as its own task so that a check's timeout does not cancel it: a slow first
    load (Ollama reading a model into memory) reports "still loading" until it is done.
    """

    def __init__(self, build: Callable[[], Awaitable[Embedder]]) -> None:
        self._build = build
        self._task: asyncio.Task[Embedder] | None = None

    def start(self) -> asyncio.Task[Embedder]:
        if self._task is None or (self._task.done() and (self._task.cancelled() or self._task.exception())):
            self._task = asyncio.create_task(self._run_build(), name="health-embedder-build")
        return self._task

    async def _run_build(self) -> Embedder:
        return await self._build()

    async def get(self, wait_s: float) -> Embedder:
        """The embedder, waiting up to `wait_s` for a build in progress (which goes on regardless)."""
        task = self.start()
        done, _pending = await asyncio.wait({task}, timeout=wait_s)
        if not done:
            raise CheckFailed("still loading the model")
        if task.cancelled():
            raise CheckFailed("not loaded: the build was cancelled")
        failure = task.exception()
        if failure is not None:
            raise CheckFailed(f"not loaded: {describe(failure, wait_s)}")
        return task.result()

    async def wait_started(self, timeout_s: float) -> None:
        """Give the first build up to `timeout_s`; a slower one goes on in the background."""
        try:
            await asyncio.wait_for(asyncio.shield(self.start()), timeout_s)
        except TimeoutError:
            log.warning("health.embedder_still_loading", waited_s=timeout_s)
        except Exception as exc:  # reported by every check until a rebuild succeeds
            log.warning("health.embedder_not_loaded", error=describe(exc, timeout_s))

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        if not task.done():
            task.cancel()
        try:
            embedder = await task
        except Exception:
            return  # the build failed: nothing to close
        except asyncio.CancelledError:
            if task.cancelled():
                return  # cancelled above, before it finished
            raise
        await embedder.aclose()
