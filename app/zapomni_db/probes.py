"""Observing servers for health checks: FalkorDB's PING/INFO and the embedding cache's Redis, never waited for.

Each probe connects lazily and reconnects by itself; failures come out as zapomni_db errors whose
message is what an operator reads (`_driver.translate`): "unreachable: ...", "no answer within
2 s", "authentication failed: ...".
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import BusyLoadingError, RedisError

from zapomni_db._driver import driver_errors
from zapomni_db.connection import DatabaseTarget
from zapomni_db.errors import DatabaseUnavailable


@dataclass(frozen=True)
class ServerState:
    """A server that answered: still loading its dataset (how far, when it says), or loaded."""

    loading: bool
    loaded_percent: float | None = None


class ServerProbe:
    """PING and INFO on a FalkorDB server; one client, built on first use."""

    def __init__(self, target: DatabaseTarget, timeout_s: float) -> None:
        self.target = target
        self.timeout_s = timeout_s
        self._client: aioredis.Redis | None = None

    def _redis(self) -> aioredis.Redis:
        if self._client is None:
            # One retry, on a fresh connection: a pooled connection to a server that restarted is
            # dead, and that must not read as a failure. A refused reconnect still fails at once.
            # No CLIENT SETINFO on connect: a loading server answers between chunks of its load,
            # and every round trip saved is time left to hear it say LOADING.
            common: dict[str, Any] = {
                "socket_timeout": self.timeout_s,
                "socket_connect_timeout": self.timeout_s,
                "retry": Retry(NoBackoff(), 1),
                "driver_info": None,
            }
            if self.target.socket is not None:
                self._client = aioredis.Redis(unix_socket_path=str(self.target.socket), **common)
            else:
                self._client = aioredis.Redis(
                    host=self.target.host, port=self.target.port, password=self.target.password, **common
                )
        return self._client

    async def state(self) -> ServerState:
        """Whether the server has loaded its dataset; DatabaseError when it does not answer."""
        client = self._redis()
        with driver_errors(self.timeout_s):
            try:
                await client.ping()
                persistence = await client.info("persistence")
            except BusyLoadingError:
                return ServerState(loading=True, loaded_percent=await _loaded_percent(client))
        return ServerState(loading=bool(int(persistence.get("loading", 0))), loaded_percent=_percent(persistence))

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with suppress(Exception):
                await client.aclose()


async def _loaded_percent(client: aioredis.Redis) -> float | None:
    # INFO is served while loading; how far the load has got is worth a line in the detail.
    try:
        return _percent(await client.info("persistence"))
    except (RedisError, OSError):
        return None


def _percent(persistence: dict[str, Any]) -> float | None:
    value = persistence.get("loading_loaded_perc")
    return float(value) if value is not None else None


class CacheProbe:
    """PING on a Redis given by URL (the embedding cache's REDIS_URL)."""

    def __init__(self, url: str, timeout_s: float) -> None:
        self._url = url
        self.timeout_s = timeout_s
        self._client: aioredis.Redis | None = None

    async def ping(self) -> None:
        """Return when the server answers; DatabaseError (a malformed URL included) when it does not."""
        with driver_errors(self.timeout_s):
            if self._client is None:
                try:  # from_url rejects a malformed URL: that is the check's answer
                    self._client = aioredis.from_url(
                        self._url,
                        socket_timeout=self.timeout_s,
                        socket_connect_timeout=self.timeout_s,
                        retry=Retry(NoBackoff(), 1),
                    )
                except ValueError as exc:
                    raise DatabaseUnavailable(f"not a usable URL: {exc}") from None
            await self._client.ping()

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with suppress(Exception):
                await client.aclose()
