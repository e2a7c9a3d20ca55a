"""Async FalkorDB client: one connection pool, parameterised queries, retry while the server loads."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import redis.asyncio as aioredis
import structlog
from falkordb.asyncio import FalkorDB
from redis.exceptions import BusyLoadingError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from zapomni_db.errors import DatabaseUnavailable

log = structlog.get_logger(__name__)

Row = list[Any]
_EMPTY_GRAPH = "empty key"
# A hung server becomes an error instead of a request that never returns; generous, because a
# 10 MB memory's insert is one long query.
_SOCKET_TIMEOUT_S = 300.0
_CONNECT_TIMEOUT_S = 5.0


class GraphClient:
    """Runs Cypher against one named graph over a shared async connection pool.

    Every query takes its values as parameters; callers never format user input into Cypher.
    A server that is still loading its dataset answers LOADING: queries wait for it (up to
    `loading_timeout_s`) instead of failing.
    """

    def __init__(
        self,
        pool: aioredis.BlockingConnectionPool,
        graph_name: str,
        *,
        loading_timeout_s: float = 120.0,
    ) -> None:
        self._pool = pool
        try:
            # The client checks for cluster mode with one blocking INFO here, once, at start-up.
            self._db = FalkorDB(connection_pool=pool)
        except RedisConnectionError as exc:  # includes authentication failures
            raise DatabaseUnavailable("the database connection failed") from exc
        self._graph = self._db.select_graph(graph_name)
        self._redis = aioredis.Redis(connection_pool=pool)
        self.graph_name = graph_name
        self._loading_timeout_s = loading_timeout_s

    @classmethod
    def over_unix_socket(cls, path: str, graph_name: str, *, max_connections: int = 16) -> GraphClient:
        pool = aioredis.BlockingConnectionPool(
            connection_class=aioredis.UnixDomainSocketConnection,
            path=path,
            max_connections=max_connections,
            timeout=30,
            socket_timeout=_SOCKET_TIMEOUT_S,
            socket_connect_timeout=_CONNECT_TIMEOUT_S,
        )
        return cls(pool, graph_name)

    @classmethod
    def over_tcp(
        cls,
        host: str,
        port: int,
        graph_name: str,
        *,
        password: str | None = None,
        max_connections: int = 16,
    ) -> GraphClient:
        pool = aioredis.BlockingConnectionPool(
            host=host,
            port=port,
            password=password or None,
            max_connections=max_connections,
            timeout=30,
            socket_timeout=_SOCKET_TIMEOUT_S,
            socket_connect_timeout=_CONNECT_TIMEOUT_S,
        )
        return cls(pool, graph_name)

    async def query(self, cypher: str, params: dict[str, Any] | None = None) -> list[Row]:
        """Run a read-write query and return its rows."""
        result = await self._retry_loading(lambda: self._graph.query(cypher, params))
        return result.result_set

    async def ro_query(self, cypher: str, params: dict[str, Any] | None = None) -> list[Row]:
        """Run a read-only query (the server may run it on any thread) and return its rows."""
        try:
            result = await self._retry_loading(lambda: self._graph.ro_query(cypher, params))
        except ResponseError as exc:
            if _EMPTY_GRAPH in str(exc):  # the graph key does not exist until the first write
                return []
            raise
        return result.result_set

    async def command(self, *args: Any) -> Any:
        """Run a plain Redis command (INFO, BGSAVE, ...) on the same pool."""
        return await self._retry_loading(lambda: self._redis.execute_command(*args))

    async def ping(self) -> bool:
        return bool(await self.command("PING"))

    async def close(self) -> None:
        await self._redis.aclose()
        await self._pool.aclose()

    async def _retry_loading(self, call: Any) -> Any:
        deadline = time.monotonic() + self._loading_timeout_s
        delay = 0.05
        while True:
            try:
                return await call()
            except BusyLoadingError:
                if time.monotonic() > deadline:
                    raise DatabaseUnavailable("the database is still loading its data") from None
                log.info("db.loading_wait", delay_s=delay)
            except (RedisConnectionError, RedisTimeoutError) as exc:
                raise DatabaseUnavailable("the database connection failed") from exc
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)
