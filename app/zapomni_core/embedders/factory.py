"""Build the configured embedder once, at start-up."""

from __future__ import annotations

from zapomni_core.embedders.base import Embedder
from zapomni_core.embedders.cache import EmbeddingCache, MemoryCache, RedisCache
from zapomni_core.errors import ConfigurationError
from zapomni_core.settings import Settings


async def build_embedder(settings: Settings, *, preload: bool = True) -> Embedder:
    """`preload=False`: an embedder loaded by its first embedding (a command that may not embed at all)."""
    if settings.embedder == "onnx":
        from zapomni_core.embedders.onnx_minilm import OnnxMiniLMEmbedder

        if settings.effective_embedding_model != "all-MiniLM-L6-v2":
            raise ConfigurationError(
                "the onnx embedder ships all-MiniLM-L6-v2 only; unset EMBEDDING_MODEL or use ZAPOMNI_EMBEDDER=ollama"
            )
        return OnnxMiniLMEmbedder(
            batch_size=settings.embedding_batch_size, threads=settings.embedding_threads, preload=preload
        )
    from zapomni_core.embedders.ollama import OllamaEmbedder

    embedder = OllamaEmbedder(
        host=settings.ollama_host,
        model=settings.effective_embedding_model,
        batch_size=settings.embedding_batch_size,
        timeout_s=settings.ollama_timeout_s,
        retries=settings.ollama_retries,
    )
    try:
        await embedder.start()
    except BaseException:
        await embedder.aclose()
        raise
    return embedder


def build_cache(settings: Settings) -> EmbeddingCache:
    memory = MemoryCache(settings.cache_max_entries)
    if settings.redis_url is None:
        return memory
    return RedisCache(
        settings.redis_url.get_secret_value(),
        ttl_s=settings.redis_cache_ttl_s,
        max_entries=settings.redis_cache_max_entries,
        fallback=memory,
    )
