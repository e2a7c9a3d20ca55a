"""Running one check: a timeout, the latency and a sanitised one-line detail; a check never raises."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

import httpx
import structlog

from zapomni_core.errors import ZapomniError
from zapomni_db.errors import DatabaseError

log = structlog.get_logger(__name__)

CHECK_TIMEOUT_S = 2.0
_MAX_DETAIL = 300


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    latency_ms: float
    detail: str


@dataclass(frozen=True)
class Report:
    ok: bool
    checks: tuple[CheckResult, ...]

    @property
    def status(self) -> str:
        return "ready" if self.ok else "not_ready"

    @property
    def failing(self) -> list[str]:
        return [check.name for check in self.checks if not check.ok]


class CheckFailed(ZapomniError):
    """A check's expected negative answer; the message is the detail shown to the operator."""


# -- running a check ---------------------------------------------------------------------------


def sanitise(text: str, secrets: Iterable[str] = ()) -> str:
    """One short line without any configured secret (exception texts may quote a URL or password)."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    text = " ".join(text.split())
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 1] + "…"


def describe(exc: BaseException, timeout_s: float) -> str:
    if isinstance(exc, CheckFailed | ZapomniError):
        return str(exc)
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return f"no answer within {timeout_s:g} s"
    if isinstance(exc, OSError | httpx.TransportError):
        return f"unreachable: {exc or type(exc).__name__}"
    if isinstance(exc, DatabaseError):
        cause = f" ({exc.__cause__})" if exc.__cause__ else ""
        return f"{exc}{cause}"
    return f"{type(exc).__name__}: {exc}"


async def run_check(
    name: str, check: Callable[[], Awaitable[str]], *, timeout_s: float = CHECK_TIMEOUT_S, secrets: Sequence[str] = ()
) -> CheckResult:
    """Run one check under a timeout; every failure becomes ok=False with a sanitised detail."""
    started = time.perf_counter()
    try:
        detail, ok = await asyncio.wait_for(check(), timeout_s), True
    except Exception as exc:  # a health check reports; it never takes the caller down
        detail, ok = describe(exc, timeout_s), False
        log.debug("health.check_failed", check=name, error=type(exc).__name__)
    latency_ms = round((time.perf_counter() - started) * 1000, 1)
    return CheckResult(name=name, ok=ok, latency_ms=latency_ms, detail=sanitise(detail, secrets))
