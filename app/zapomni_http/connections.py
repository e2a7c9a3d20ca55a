"""Connections that never finish a request: closed after the idle timeout, and at most so many per client address.

uvicorn's keep-alive timeout runs only between requests, and its connection limit counts every open connection:
a few hundred connections that send half a request line and stop held every slot, and every request (health
probes included) got 503 until they went away, which they never did. Here:
- a connection must deliver a whole request head within `idle_timeout_s` of opening or of its first byte after
  a response; a slow drip of bytes does not extend it;
- one client address holds at most `per_client` connections: a new one evicts that address's oldest connection
  that is only waiting for a request (a request in progress is never cut), and is refused only when all of them
  are busy. A well-behaved client is never evicted in practice: its connections wait for milliseconds.
Behind a reverse proxy every client shares the proxy's address; raise ZAPOMNI_HTTP_MAX_CONNECTIONS_PER_CLIENT
there.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

import h11
import structlog
from uvicorn.protocols.http.h11_impl import H11Protocol

log = structlog.get_logger(__name__)

# How long a TLS connection closed at shutdown may take to exchange close_notify before it is cut.
TLS_CLOSE_WAIT_S = 1.0


class ConnectionGuard:
    def __init__(self, *, idle_timeout_s: float, per_client: int) -> None:
        self.idle_timeout_s = idle_timeout_s
        self.per_client = per_client
        self._by_client: dict[str, list[GuardedH11Protocol]] = defaultdict(list)

    def protocol(self) -> type[GuardedH11Protocol]:
        """The protocol class uvicorn builds a connection with (`uvicorn.Config(http=...)`), bound to this guard."""
        guard = self

        class Bound(GuardedH11Protocol):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.guard = guard

        return Bound

    def admit(self, connection: GuardedH11Protocol) -> bool:
        address = connection.client[0] if connection.client else "?"
        held = self._by_client[address]
        if len(held) >= self.per_client:
            waiting = next((other for other in held if other.waiting()), None)  # the oldest first
            if waiting is None:
                log.warning("http.connection_refused", client=address, reason="per-client connection limit")
                return False
            waiting.close("evicted")
        held.append(connection)
        return True

    def forget(self, connection: GuardedH11Protocol) -> None:
        address = connection.client[0] if connection.client else "?"
        held = self._by_client.get(address)
        if held is not None and connection in held:
            held.remove(connection)
            if not held:
                del self._by_client[address]


class GuardedH11Protocol(H11Protocol):
    guard: ConnectionGuard
    _head_timer: asyncio.TimerHandle | None = None

    # uvicorn's own override narrows the argument the same way (a Transport, not any BaseTransport).
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self.guard.admit(self):
            transport.close()
            return
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.guard.forget(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._arm()  # a request head under way: it has until the timer, however slowly it drips
        else:
            self._disarm()

    def shutdown(self) -> None:
        """uvicorn's graceful stop closes an idle connection; over TLS that close waits for the client's close_notify,
        which a client idling in its pool never reads to send, and the server's stop waited its whole grace (31 s
        measured, ZAPOMNI_SHUTDOWN_GRACE_S 30) for one such connection. Such a connection is aborted after a
        moment; a request in progress still finishes within the grace."""
        super().shutdown()
        if self.transport.is_closing() and self.transport.get_extra_info("ssl_object") is not None:
            self.loop.call_later(TLS_CLOSE_WAIT_S, self._abort_if_open)

    def _abort_if_open(self) -> None:
        if self in self.server_state.connections:
            self.transport.abort()

    def waiting(self) -> bool:
        """No request in progress: only a new request head is awaited."""
        return self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)

    def close(self, why: str) -> None:
        self._disarm()
        self.guard.forget(self)  # at once: its slot is free for the connection that evicted it
        if not self.transport.is_closing():
            self.transport.close()
            log.info("http.connection_closed", client=self.client[0] if self.client else "?", reason=why)

    def _arm(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.guard.idle_timeout_s, self._too_slow)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _too_slow(self) -> None:
        self._head_timer = None
        if self.waiting():
            self.close("no whole request within ZAPOMNI_HTTP_IDLE_TIMEOUT_S")
