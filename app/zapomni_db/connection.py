"""The one way to reach FalkorDB: a target (unix socket or host:port) turned into a connection pool.

The engine, the health checks and the operator commands all connect through `connect`; every
graph (one per workspace) shares its connection's pool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
from falkordb.asyncio import FalkorDB
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from zapomni_db.errors import DatabaseUnavailable, QueryFailed

# A hung server becomes an error instead of a request that never returns; generous, because a
# 10 MB memory's insert is one long query.
SOCKET_TIMEOUT_S = 300.0
CONNECT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class DatabaseTarget:
    """Where the database answers: the embedded server's unix socket, or host:port in server mode."""

    label: str
    graph_name: str
    socket: Path | None = None
    host: str = "127.0.0.1"
    port: int = 6379
    password: str | None = field(default=None, repr=False)


class Connection:
    """A connection pool to one FalkorDB server, with the FalkorDB client built on it."""

    def __init__(self, pool: aioredis.BlockingConnectionPool, *, loading_timeout_s: float = 120.0) -> None:
        self.pool = pool
        self.loading_timeout_s = loading_timeout_s
        try:
            # The client checks for cluster mode with one blocking INFO here, once.
            self.falkordb = FalkorDB(connection_pool=pool)
        except RedisConnectionError as exc:  # includes authentication failures
            raise DatabaseUnavailable("the database connection failed") from exc
        self.redis = aioredis.Redis(connection_pool=pool)

    async def command(self, *args: Any) -> Any:
        """A plain Redis command (INFO, GRAPH.LIST, ...); driver errors come out as db errors."""
        try:
            return await self.redis.execute_command(*args)
        except (RedisConnectionError, TimeoutError) as exc:
            raise DatabaseUnavailable("the database connection failed") from exc
        except RedisError as exc:
            raise QueryFailed(str(exc)) from exc

    async def close(self) -> None:
        await self.redis.aclose()
        await self.pool.aclose()


def connect(
    target: DatabaseTarget,
    *,
    max_connections: int = 16,
    timeout_s: float = 30.0,
    socket_timeout_s: float = SOCKET_TIMEOUT_S,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
    loading_timeout_s: float = 120.0,
) -> Connection:
    """A pool to `target` (nothing is sent until first use, except the FalkorDB client's one INFO)."""
    options: dict[str, Any] = {
        "max_connections": max_connections,
        "timeout": timeout_s,
        "socket_timeout": socket_timeout_s,
        "socket_connect_timeout": connect_timeout_s,
    }
    if target.socket is not None:
        pool = aioredis.BlockingConnectionPool(
            connection_class=aioredis.UnixDomainSocketConnection, path=str(target.socket), **options
        )
    else:
        pool = aioredis.BlockingConnectionPool(
            host=target.host, port=target.port, password=target.password or None, **options
        )
    return Connection(pool, loading_timeout_s=loading_timeout_s)
