"""The checks: each a plain async function over an injected dependency that returns a one-line
detail or raises.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Sequence

import httpx

from zapomni_core.disk import DiskGuard
from zapomni_core.health.probes import DatabaseProbe, EmbedderProbe, RedisProbe
from zapomni_core.health.results import CHECK_TIMEOUT_S, CheckFailed, describe
from zapomni_db import DatabaseError
from zapomni_db.schema import SchemaSettings, latest_version

PROBE_TEXT = "zapomni readiness probe"


# -- the database ------------------------------------------------------------------------------


async def check_falkordb(db: DatabaseProbe) -> str:
    """The server answers and has finished loading its dataset."""
    where = db.target.label
    if db.target.socket is not None and not db.target.socket.exists():
        raise CheckFailed(f"{where}: no server is running (it runs while `zapomni serve` does)")
    try:
        state = await db.server.state()
    except DatabaseError as exc:
        raise CheckFailed(f"{where}: {describe(exc, db.timeout_s)}") from None
    if state.loading:
        done = f" ({state.loaded_percent:.0f}% done)" if state.loaded_percent is not None else ""
        raise CheckFailed(f"{where} is loading its dataset{done}")
    return f"{where} answers; dataset loaded"


def expected_schema_version() -> int:
    # The migration numbers do not depend on the vector index options, only their statements do.
    return latest_version(SchemaSettings(dimension=1))


async def check_schema(db: DatabaseProbe, expected: int) -> str:
    """The graph is at the schema version this release migrates to."""
    current = await db.schema_version()
    if current < expected:
        raise CheckFailed(f"schema version {current}, expected {expected}: run `zapomni migrate apply`")
    if current > expected:
        raise CheckFailed(f"schema version {current} is newer than this release's {expected}: upgrade Zapomni")
    return f"schema version {current}, expected {expected}"


async def check_disk(disk: DiskGuard) -> str:
    """The database's disk (the embedded data directory's, or FALKORDB_DATA_DIR's) has the free space writes
    need (ZAPOMNI_MIN_FREE_MB)."""
    status = await asyncio.to_thread(disk.status)
    if status is None:
        return "not checked: the database is not embedded"
    if status.warning is not None:
        raise CheckFailed(status.warning)
    return f"{status.describe()}; writes are refused below {status.threshold}"


# -- the embedding cache -----------------------------------------------------------------------


async def check_redis(cache: RedisProbe) -> str:
    try:
        await cache.cache.ping()
    except DatabaseError as exc:
        raise CheckFailed(f"Redis at {cache.label}: {describe(exc, cache.timeout_s)}") from None
    return f"Redis at {cache.label} answers"


# -- the embedder ------------------------------------------------------------------------------


async def check_embedder(probe: EmbedderProbe, load_wait_s: float = CHECK_TIMEOUT_S / 2) -> str:
    """The model is loaded and turns a short text into a finite vector of the right size."""
    embedder = await probe.get(load_wait_s)
    vector = await embedder.embed_query(PROBE_TEXT)
    if len(vector) != embedder.dimension or not all(math.isfinite(v) for v in vector):
        raise CheckFailed(f"{embedder.name} returned a malformed vector ({len(vector)} values)")
    return f"{embedder.name} embedded a probe ({embedder.dimension}-d)"


# -- Ollama's models ---------------------------------------------------------------------------


def full_model_name(name: str) -> str:
    """Ollama's implicit tag: `nomic-embed-text` is `nomic-embed-text:latest`."""
    return name if ":" in name else f"{name}:latest"


def missing_models(required: Iterable[str], available: Iterable[str]) -> list[str]:
    have = {full_model_name(name) for name in available}
    return [name for name in required if full_model_name(name) not in have]


async def check_ollama_models(http: httpx.AsyncClient, required: Sequence[str]) -> str:
    """GET /api/tags lists every model Zapomni uses (embedding and LLM)."""
    try:
        response = await http.get("/api/tags")
    except httpx.HTTPError as exc:
        raise CheckFailed(f"Ollama at OLLAMA_HOST={http.base_url}: {describe(exc, http.timeout.read or 0)}") from None
    if response.status_code != 200:
        raise CheckFailed(f"Ollama at OLLAMA_HOST={http.base_url} answered HTTP {response.status_code}")
    try:
        models = response.json()["models"]
        available = [name for model in models for name in (model.get("name"), model.get("model")) if name]
    except (ValueError, KeyError, TypeError, AttributeError):
        raise CheckFailed("Ollama returned a malformed /api/tags response") from None
    missing = missing_models(required, available)
    if missing:
        pulls = "; ".join(f"ollama pull {name}" for name in missing)
        raise CheckFailed(f"missing models: {', '.join(missing)} (run: {pulls})")
    return f"has {', '.join(required)}"
