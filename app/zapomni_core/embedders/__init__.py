"""Text → vector. One protocol, two real implementations chosen by configuration."""

from zapomni_core.embedders.base import Embedder
from zapomni_core.embedders.cache import CachedEmbedder, MemoryCache, RedisCache
from zapomni_core.embedders.factory import build_cache, build_embedder

__all__ = ["CachedEmbedder", "Embedder", "MemoryCache", "RedisCache", "build_cache", "build_embedder"]
