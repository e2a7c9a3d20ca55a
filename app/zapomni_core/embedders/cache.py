"""Exact-match embedding cache: keyed by a hash of (model, kind, text), in Redis or in process.

Repeated queries and re-added text skip the model. Redis (REDIS_URL) is shared by every Zapomni
process and survives restarts; entries expire after a TTL and the oldest are evicted past a
size bound. When Redis fails, the cache degrades to the in-process LRU with a warning and
retries Redis after a pause: a cache never fails a request.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

import numpy as np
import structlog

from zapomni_core.embedders.base import CacheBackend, Embedder
from zapomni_db import DatabaseError
from zapomni_db.blob_cache import BlobCache

log = structlog.get_logger(__name__)

_KEY_PREFIX = "zapomni:emb:"
_LRU_INDEX = "zapomni:emb:lru"  # sorted set: key -> last write time, for the size bound
_RETRY_REDIS_AFTER_S = 30.0


def cache_key(model: str, kind: str, text: str) -> str:
    return hashlib.sha256(f"{model}\0{kind}\0{text}".encode()).hexdigest()


def _pack(vector: list[float]) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def _unpack(blob: bytes) -> list[float]:
    # numpy types tolist() by the array's shape, and frombuffer's shape is unknown to it: 1-D here.
    vector: list[float] = np.frombuffer(blob, dtype=np.float32).tolist()
    return vector


class EmbeddingCache(Protocol):
    backend: CacheBackend

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]: ...

    async def set_many(self, items: dict[str, bytes]) -> None: ...

    async def aclose(self) -> None: ...


class MemoryCache:
    """A bounded in-process LRU."""

    backend: CacheBackend = "memory"

    def __init__(self, max_entries: int) -> None:
        self._max = max_entries
        self._entries: OrderedDict[str, bytes] = OrderedDict()

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        out: list[bytes | None] = []
        for key in keys:
            blob = self._entries.get(key)
            if blob is not None:
                self._entries.move_to_end(key)
            out.append(blob)
        return out

    async def set_many(self, items: dict[str, bytes]) -> None:
        if self._max == 0:
            return
        self._entries.update(items)
        for key in items:
            self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    async def aclose(self) -> None:
        self._entries.clear()


class RedisCache:
    """Redis with a TTL per entry and a size bound; falls back to `fallback` whenever Redis fails."""

    backend: CacheBackend = "redis"

    def __init__(
        self, url: str, *, ttl_s: int, max_entries: int, fallback: MemoryCache, timeout_s: float = 0.5
    ) -> None:
        # Short by default: a slow Redis costs an embedding, never a request waiting on the cache.
        self._redis = BlobCache(url, prefix=_KEY_PREFIX, lru_index=_LRU_INDEX, timeout_s=timeout_s)
        self._ttl_s = ttl_s
        self._max = max_entries
        self._fallback = fallback
        self._down_until = 0.0

    @property
    def degraded(self) -> bool:
        return time.monotonic() < self._down_until

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        if not keys:
            return []
        if not self.degraded:
            try:
                return await self._redis.get_many(keys)
            except DatabaseError as exc:
                self._fail(exc)
        return await self._fallback.get_many(keys)

    async def set_many(self, items: dict[str, bytes]) -> None:
        if not items:
            return
        if not self.degraded:
            try:
                await self._redis.put_many(items, ttl_s=self._ttl_s, max_entries=self._max)
                return
            except DatabaseError as exc:
                self._fail(exc)
        await self._fallback.set_many(items)

    def _fail(self, exc: BaseException) -> None:
        self._down_until = time.monotonic() + _RETRY_REDIS_AFTER_S
        log.warning(
            "cache.redis_unavailable",
            error=type(exc).__name__,
            fallback="in-process LRU",
            retry_in_s=_RETRY_REDIS_AFTER_S,
        )

    async def aclose(self) -> None:
        await self._redis.aclose()
        await self._fallback.aclose()


class CachedEmbedder:
    """An `Embedder` that consults a cache before the model and counts hits."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self._inner = inner
        self.cache = cache
        self.hits = 0
        self.misses = 0
        # Told (kind, texts, seconds) after each call to the model: an adapter's latency metrics.
        self.on_embedded: Callable[[str, int, float], None] | None = None

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def max_tokens(self) -> int:
        return self._inner.max_tokens

    @property
    def hit_rate(self) -> float | None:
        lookups = self.hits + self.misses
        return round(self.hits / lookups, 4) if lookups else None

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._inner.count_tokens(texts)

    async def embed_documents(self, texts: Sequence[str], *, background: bool = False) -> list[list[float]]:
        return await self._cached(
            "document", texts, functools.partial(self._inner.embed_documents, background=background)
        )

    async def embed_query(self, text: str) -> list[float]:
        async def embed_one(texts: Sequence[str]) -> list[list[float]]:
            return [await self._inner.embed_query(texts[0])]

        return (await self._cached("query", [text], embed_one))[0]

    async def aclose(self) -> None:
        await self.cache.aclose()
        await self._inner.aclose()

    async def _cached(
        self, kind: str, texts: Sequence[str], compute: Callable[[Sequence[str]], Awaitable[list[list[float]]]]
    ) -> list[list[float]]:
        # Queries and documents are cached apart: some models embed them with different prefixes.
        keys = [cache_key(self._inner.name, kind, text) for text in texts]
        blobs = await self.cache.get_many(keys)
        todo: dict[str, int] = {}
        for i, (key, blob) in enumerate(zip(keys, blobs, strict=True)):
            if blob is None:
                todo.setdefault(key, i)
        misses = sum(blob is None for blob in blobs)
        self.hits += len(texts) - misses
        self.misses += misses
        fresh: dict[str, list[float]] = {}
        if todo:
            started = time.perf_counter()
            vectors = await compute([texts[i] for i in todo.values()])
            if self.on_embedded is not None:
                self.on_embedded(kind, len(todo), time.perf_counter() - started)
            fresh = dict(zip(todo, vectors, strict=True))
            await self.cache.set_many({key: _pack(vector) for key, vector in fresh.items()})
        return [_unpack(blob) if blob is not None else fresh[key] for key, blob in zip(keys, blobs, strict=True)]
