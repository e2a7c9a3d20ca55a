"""The checker: liveness and readiness over dependencies built once from the settings."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from urllib.parse import urlsplit

import httpx

from zapomni_core.database import database_disk, database_target
from zapomni_core.disk import MB, DiskGuard
from zapomni_core.embedders.factory import build_embedder
from zapomni_core.health.checks import (
    check_disk,
    check_embedder,
    check_falkordb,
    check_ollama_models,
    check_redis,
    check_schema,
    expected_schema_version,
)
from zapomni_core.health.probes import DatabaseProbe, EmbedderProbe, RedisProbe
from zapomni_core.health.results import CHECK_TIMEOUT_S, CheckResult, Report, run_check
from zapomni_core.settings import Settings

# The first embedder build may have to wait for Ollama to load a model into memory.
STARTUP_TIMEOUT_S = 30.0


class HealthChecker:
    """Liveness and readiness over dependencies built once; `open_health_checker` makes one."""

    def __init__(
        self,
        *,
        database: DatabaseProbe,
        embedder: EmbedderProbe,
        expected_schema: int,
        cache: RedisProbe | None = None,
        ollama: httpx.AsyncClient | None = None,
        ollama_models: Sequence[str] = (),
        timeout_s: float = CHECK_TIMEOUT_S,
        secrets: Sequence[str] = (),
        disk: DiskGuard | None = None,
    ) -> None:
        self.database = database
        self.disk = disk
        self.embedder = embedder
        self.expected_schema = expected_schema
        self.cache = cache
        self.ollama = ollama
        self.ollama_models = tuple(ollama_models)
        self.timeout_s = timeout_s
        self._secrets = tuple(secrets)
        self._inflight: asyncio.Task[Report] | None = None

    def liveness(self) -> Report:
        """The process is up and serving; by design this looks at no dependency."""
        return Report(ok=True, checks=())

    async def readiness(self) -> Report:
        """Every check, concurrently. Callers arriving while a run is in flight share its result."""
        if self._inflight is None or self._inflight.done():
            self._inflight = asyncio.create_task(self._run_all(), name="health-readiness")
        # Shielded: one caller going away must not cancel the run the others are waiting for.
        return await asyncio.shield(self._inflight)

    async def wait_ready(self, wait_s: float, interval_s: float = 1.0) -> Report:
        """Readiness, repeated until it passes or `wait_s` has gone by; the last report."""
        deadline = time.monotonic() + wait_s
        while True:
            report = await self.readiness()
            if report.ok or time.monotonic() + interval_s > deadline:
                return report
            await asyncio.sleep(interval_s)

    async def _run_all(self) -> Report:
        groups = [self._database_checks()]
        if self.cache is not None:
            groups.append(self._single("redis", check_redis, self.cache))
        # Half the budget for a build in progress, so a finished one still has time to embed.
        groups.append(self._single("embedder", check_embedder, self.embedder, self.timeout_s / 2))
        if self.ollama is not None:
            groups.append(self._single("ollama_models", check_ollama_models, self.ollama, self.ollama_models))
        if self.disk is not None:
            groups.append(self._single("disk", check_disk, self.disk))
        checks = tuple(check for group in await asyncio.gather(*groups) for check in group)
        return Report(ok=all(check.ok for check in checks), checks=checks)

    async def _database_checks(self) -> list[CheckResult]:
        # The schema can only be read from a server that is up and loaded.
        database = await self._check("falkordb", lambda: check_falkordb(self.database))
        if not database.ok:
            return [database, CheckResult("schema", False, 0.0, "not checked: falkordb is not ready")]
        schema = await self._check("schema", lambda: check_schema(self.database, self.expected_schema))
        return [database, schema]

    async def _single(self, name: str, check: Callable[..., Awaitable[str]], *args: object) -> list[CheckResult]:
        return [await self._check(name, lambda: check(*args))]

    async def _check(self, name: str, check: Callable[[], Awaitable[str]]) -> CheckResult:
        return await run_check(name, check, timeout_s=self.timeout_s, secrets=self._secrets)

    async def aclose(self) -> None:
        if self._inflight is not None and not self._inflight.done():
            self._inflight.cancel()
            with suppress(BaseException):
                await self._inflight
        await self.embedder.aclose()
        await self.database.aclose()
        if self.cache is not None:
            await self.cache.aclose()
        if self.ollama is not None:
            await self.ollama.aclose()


def _secrets(settings: Settings) -> list[str]:
    secrets = []
    if settings.falkordb_password:
        secrets.append(settings.falkordb_password.get_secret_value())
    if settings.redis_url:
        url = settings.redis_url.get_secret_value()
        password = urlsplit(url).password
        if password:  # a URL without one is shown as it is: it names the cache, and hides nothing
            secrets += [url, password]
    return secrets


def _required_ollama_models(settings: Settings) -> list[str]:
    return list(dict.fromkeys([settings.effective_embedding_model, settings.llm_model]))


@asynccontextmanager
async def open_health_checker(
    settings: Settings, *, timeout_s: float = CHECK_TIMEOUT_S, startup_timeout_s: float = STARTUP_TIMEOUT_S
) -> AsyncIterator[HealthChecker]:
    """Build the checker's dependencies once (the embedder included) and close them on exit."""
    # The probe embedder fails fast: one attempt, so that a check reports what went wrong instead
    # of spending its time budget on retries.
    embedder_settings = settings.model_copy(update={"ollama_retries": 0})
    cache = None
    if settings.redis_url is not None:
        cache = RedisProbe(settings.redis_url.get_secret_value(), settings.masked()["redis_url"], timeout_s)
    ollama = None
    if settings.embedder == "ollama":
        ollama = httpx.AsyncClient(base_url=settings.ollama_host.rstrip("/"), timeout=httpx.Timeout(timeout_s))
    checker = HealthChecker(
        database=DatabaseProbe(database_target(settings), timeout_s),
        embedder=EmbedderProbe(lambda: build_embedder(embedder_settings)),
        expected_schema=expected_schema_version(),
        cache=cache,
        ollama=ollama,
        ollama_models=_required_ollama_models(settings),
        timeout_s=timeout_s,
        secrets=_secrets(settings),
        # A server's disk only where this process sees its files (FALKORDB_DATA_DIR).
        disk=DiskGuard(data_dir, settings.min_free_mb * MB) if (data_dir := database_disk(settings)) else None,
    )
    try:
        await checker.embedder.wait_started(startup_timeout_s)
        yield checker
    finally:
        await checker.aclose()
