"""A Redis (REDIS_URL) as a cache of blobs: entries with a TTL, and a bound on their number (oldest evicted).

The embedding cache (`zapomni_core.embedders.cache`) keeps its vectors here; it decides what to do
when Redis fails. Failures come out as zapomni_db errors (`DatabaseUnavailable`, `QueryFailed`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import redis.asyncio as aioredis

from zapomni_db._driver import driver_errors


class BlobCache:
    """Blobs under `prefix` + key; a sorted set `lru_index` (key -> last write time) bounds their number."""

    def __init__(self, url: str, *, prefix: str, lru_index: str, timeout_s: float = 0.5) -> None:
        self._redis = aioredis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
        self._prefix = prefix
        self._lru_index = lru_index
        self._timeout_s = timeout_s

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        with driver_errors(self._timeout_s):
            blobs = await self._redis.mget([self._prefix + key for key in keys])
        # redis-py types replies for clients that decode too; this one does not, so a str never comes.
        return [blob if isinstance(blob, bytes) else None for blob in blobs]

    async def put_many(self, items: dict[str, bytes], *, ttl_s: int, max_entries: int) -> None:
        """Store `items` for `ttl_s`, then evict the least recently written past `max_entries`."""
        now = time.time()
        with driver_errors(self._timeout_s):
            async with self._redis.pipeline(transaction=False) as pipe:
                for key, blob in items.items():
                    pipe.set(self._prefix + key, blob, ex=ttl_s)
                pipe.zadd(self._lru_index, {key: now for key in items})
                pipe.zcard(self._lru_index)
                *_, size = await pipe.execute()
            if size > max_entries:
                evicted = await self._redis.zpopmin(self._lru_index, size - max_entries)
                if evicted:
                    # redis-py types zpopmin's reply for every protocol and decoding; this client (RESP2,
                    # bytes) gets (member, score) tuples.
                    stale = [self._prefix + key.decode() for key, _score in evicted]  # type: ignore[str-unpack,union-attr]
                    await self._redis.delete(*stale)

    async def aclose(self) -> None:
        await self._redis.aclose()
