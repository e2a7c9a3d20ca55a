"""Cypher against one named graph: parameterised queries, retry while the server loads, errors wrapped."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from redis.exceptions import BusyLoadingError, RedisError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from zapomni_db.connection import Connection
from zapomni_db.errors import DatabaseUnavailable, QueryFailed

log = structlog.get_logger(__name__)

Row = list[Any]
_EMPTY_GRAPH = "empty key"


class GraphClient:
    """Runs Cypher against one graph over its connection's shared pool.

    Every query takes its values as parameters; callers never format user input into Cypher.
    A server that is still loading its dataset answers LOADING: queries wait for it (up to the
    connection's `loading_timeout_s`) instead of failing. Driver exceptions never leave this class.
    """

    def __init__(self, connection: Connection, graph_name: str) -> None:
        self.connection = connection
        self.graph_name = graph_name
        self._graph = connection.falkordb.select_graph(graph_name)

    async def query(self, cypher: str, params: dict[str, Any] | None = None) -> list[Row]:
        """Run a read-write query and return its rows."""
        result = await self._call(lambda: self._graph.query(cypher, params))
        return result.result_set

    async def ro_query(self, cypher: str, params: dict[str, Any] | None = None) -> list[Row]:
        """Run a read-only query (the server may run it on any thread); a graph not yet created has no rows."""
        try:
            result = await self._call(lambda: self._graph.ro_query(cypher, params))
        except QueryFailed as exc:
            if _EMPTY_GRAPH in str(exc):  # the graph key does not exist until the first write
                return []
            raise
        return result.result_set

    async def command(self, *args: Any) -> Any:
        """Run a plain Redis command (INFO, BGSAVE, ...) on the same pool."""
        return await self._call(lambda: self.connection.redis.execute_command(*args))

    async def ping(self) -> bool:
        return bool(await self.command("PING"))

    async def _call(self, call: Callable[[], Awaitable[Any]]) -> Any:
        deadline = time.monotonic() + self.connection.loading_timeout_s
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
            except ResponseError as exc:
                raise QueryFailed(str(exc)) from exc
            except RedisError as exc:
                raise QueryFailed(str(exc)) from exc
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)
