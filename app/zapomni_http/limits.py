"""Per-token rate limits and the request body limit.

The buckets live in this process: behind a balancer each replica limits on its own, so a token
may make up to N times the rate across N replicas. Sharing them would cost a database round trip
per request for a limit whose job is to stop one runaway client, which per replica still does.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.datastructures import Headers
from starlette.types import Receive, Scope

from zapomni_console.limits import SIGN_IN_BURST, SIGN_IN_RATE


class TokenBuckets:
    """A bucket per key of `burst` requests, refilled at `rate` per second; rate 0 lets everything through."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = float(burst)
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (requests left, when counted)

    def take(self, key: str) -> float:
        """0 when a request may go now (and it is counted), else the seconds until one may."""
        if self.rate <= 0:
            return 0.0
        now = self._clock()
        left, then = self._buckets.get(key, (self.burst, now))
        left = min(self.burst, left + (now - then) * self.rate)
        if left >= 1.0:
            self._buckets[key] = (left - 1.0, now)
            return 0.0
        self._buckets[key] = (left, now)
        return (1.0 - left) / self.rate


def sign_in_limit() -> Callable[[str], float]:
    """The console's sign-in attempts, by client address and by token (zapomni_console.limits)."""
    return TokenBuckets(SIGN_IN_RATE, SIGN_IN_BURST).take


class BodyTooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class ClientGone(Exception):
    """The client disconnected before its request body arrived."""


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    """The whole request body, refused as soon as it is known to exceed `limit` bytes (declared or sent)."""
    declared = Headers(scope=scope).get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(int(declared))
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        body += message.get("body", b"")
        if len(body) > limit:
            raise BodyTooLarge(len(body))
        if not message.get("more_body", False):
            return bytes(body)
