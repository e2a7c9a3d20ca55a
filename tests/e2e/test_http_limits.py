"""What protects `zapomni serve --http` and what operates it: Origin checks and CORS, the body limit (413), per-token
rate limits (429), the request timeout, cancellation, /healthz, /readyz and /metrics, and logs without tokens.

One server for the module, bound to every interface with --insecure (it must say so), with small limits.
Adds are embedded within the request here (no background job), so a cancelled or timed-out one is still
embedding when it stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.e2e.test_shutdown import long_text
from tests.helpers import SMALL_CHUNKS, make_tokens, until, wait_for
from tests.processes import HttpServer, bearer, call, http_server, http_session
from zapomni_core import MAX_TEXT_BYTES

pytestmark = pytest.mark.anyio

TIMEOUT_S = 10  # what a request past it costs: this long of a core, embedding
IDLE_S = 4
LIMITS = SMALL_CHUNKS | {
    "ZAPOMNI_HTTP_MAX_BODY_MB": "1",
    "ZAPOMNI_HTTP_RATE": "1",
    "ZAPOMNI_HTTP_BURST": "30",
    "ZAPOMNI_HTTP_REQUEST_TIMEOUT_S": str(TIMEOUT_S),
    "ZAPOMNI_HTTP_CORS_ORIGINS": "https://notes.example",
    "ZAPOMNI_BACKGROUND_ADD_BYTES": str(MAX_TEXT_BYTES + 1),
    "ZAPOMNI_HTTP_IDLE_TIMEOUT_S": str(IDLE_S),
    "ZAPOMNI_HTTP_TRUSTED_PROXIES": "127.0.0.5",
}
TOKENS: dict[str, dict[str, Any]] = {
    "admin": {"role": "admin", "workspaces": None},
    "burst": {"role": "read", "workspaces": None},
    "monitor": {"role": "read", "workspaces": None},
    "team": {"role": "read", "workspaces": ["team"]},
}


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("limits") / "server.log"


@pytest.fixture(scope="module")
def server(store: Path, log: Path) -> Iterator[HttpServer]:
    with http_server(store, log, args=("--host", "0.0.0.0", "--insecure"), **LIMITS) as started:
        yield started


@pytest.fixture(scope="module")
def tokens(server: HttpServer, store: Path) -> dict[str, str]:
    return asyncio.run(make_tokens(store, TOKENS))


def add_call(text: str, request_id: int = 1) -> dict[str, object]:
    arguments = {"text": text}
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "add_memory", "arguments": arguments},
    }


async def memory_count(server: HttpServer, token: str) -> int:
    async with http_session(server, token) as session:
        return int((await call(session, "get_stats"))["total_memories"])


def test_listening_beyond_the_loopback_without_tls_is_logged_as_insecure(server: HttpServer) -> None:
    warnings = [e for e in server.log_events() if e.get("event") == "http.insecure"]
    assert warnings and warnings[0]["level"] == "warning" and warnings[0]["host"] == "0.0.0.0"
    ready = next(e for e in server.log_events() if e.get("event") == "server.ready")
    assert ready["transport"] == "http" and ready["tls"] is False


def test_a_foreign_origin_is_refused_and_an_allowed_browser_origin_served(
    server: HttpServer, tokens: dict[str, str]
) -> None:
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    refused = server.post(listing, tokens["admin"], Origin="https://evil.example")
    assert refused.status_code == 403
    assert "Origin 'https://evil.example' is not allowed" in refused.json()["error"]["message"]
    assert server.post(listing, None, Origin="https://evil.example").status_code == 403  # before any token
    assert server.post(listing, tokens["admin"], Origin="http://localhost:5173").status_code == 200
    assert server.post(listing, tokens["admin"], Host="rebound.example").status_code == 421

    # CORS for the configured browser origin: the preflight, then the request with its headers readable.
    preflight = httpx.options(
        server.url,
        headers={
            "Origin": "https://notes.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, mcp-protocol-version",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://notes.example"
    served = server.post(listing, tokens["admin"], Origin="https://notes.example")
    assert served.status_code == 200 and served.headers["access-control-allow-origin"] == "https://notes.example"
    assert "WWW-Authenticate" in served.headers["access-control-expose-headers"]
    unlisted = httpx.options(
        server.url, headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
    )
    assert "access-control-allow-origin" not in unlisted.headers


async def test_an_oversized_body_gets_413_and_is_not_stored(server: HttpServer, tokens: dict[str, str]) -> None:
    before = await memory_count(server, tokens["admin"])
    refused = server.post(add_call("x" * (1024 * 1024 + 10)), tokens["admin"])
    assert refused.status_code == 413
    message = refused.json()["error"]["message"]
    assert (
        "Request body too large" in message and "at most 1048576" in message and "ZAPOMNI_HTTP_MAX_BODY_MB" in message
    )
    assert await memory_count(server, tokens["admin"]) == before


async def test_a_token_over_its_rate_gets_429_with_retry_after(server: HttpServer, tokens: dict[str, str]) -> None:
    listing = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})

    async def post(client: httpx.AsyncClient, token: str) -> httpx.Response:
        headers = bearer(token) | {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        return await client.post(server.url, content=listing, headers=headers)

    async with httpx.AsyncClient(timeout=60) as client:
        answers = await asyncio.gather(*(post(client, tokens["burst"]) for _ in range(45)))  # a burst of 30 + 15
        statuses = sorted(answer.status_code for answer in answers)
        assert statuses.count(200) >= 30 and statuses.count(429) >= 5 and set(statuses) == {200, 429}, statuses
        refused = next(answer for answer in answers if answer.status_code == 429)
        assert refused.headers["retry-after"] == "1"
        assert "token 'burst' may make 1 per second (bursts of 30)" in refused.json()["error"]["message"]
        assert (await post(client, tokens["monitor"])).status_code == 200  # each token has its own bucket
        await asyncio.sleep(1)
        assert (await post(client, tokens["burst"])).status_code == 200


async def test_a_request_past_the_timeout_is_answered_and_stores_nothing(
    server: HttpServer, tokens: dict[str, str]
) -> None:
    before = await memory_count(server, tokens["admin"])
    async with http_session(server, tokens["admin"]) as session:
        started = time.monotonic()
        with pytest.raises(MCPError, match=f"timed out after {TIMEOUT_S} s .ZAPOMNI_HTTP_REQUEST_TIMEOUT_S"):
            await session.call_tool("add_memory", {"text": long_text(600)})
        elapsed = time.monotonic() - started
    assert TIMEOUT_S <= elapsed < TIMEOUT_S + 60, elapsed  # the rest: the slice being embedded
    assert wait_for(lambda: '"request.cancelled"' in server.stderr(), timeout_s=60)
    assert await memory_count(server, tokens["admin"]) == before


async def test_a_cancelled_call_stops_and_stores_nothing(server: HttpServer, tokens: dict[str, str]) -> None:
    def in_flight() -> float:
        return _value(server.get("/metrics", tokens["monitor"]).text, "zapomni_writes_in_flight")

    before = await memory_count(server, tokens["admin"])
    cancelled_before = server.stderr().count('"request.cancelled"')
    # Text of its own: chunks another test embedded would come from the cache, with no time to cancel.
    text = long_text(30).replace("Paragraph", "Section")
    async with http_session(server, tokens["admin"]) as session, anyio.create_task_group() as calls:
        calls.start_soon(session.call_tool, "add_memory", {"text": text})
        await until(lambda: in_flight() >= 1, what="the add to begin")  # embedding: nothing written yet
        calls.cancel_scope.cancel()  # the client closes the call's response stream
    await until(lambda: in_flight() == 0, timeout_s=180, what="the cancelled add to stop")
    assert await memory_count(server, tokens["admin"]) == before
    assert server.stderr().count('"request.cancelled"') == cancelled_before + 1  # the add saw its caller go


async def test_health_readiness_and_metrics(server: HttpServer, tokens: dict[str, str]) -> None:
    assert server.get("/healthz").json() == {"status": "alive"}
    ready = server.get("/readyz", Host="10.0.0.7:80")  # probes come by any address, without a token
    assert ready.status_code == 200 and ready.json() == {"status": "ready"}  # nothing of what the store holds

    async with http_session(server, tokens["admin"]) as session:
        await call(session, "add_memory", {"text": "Metrics count this add.", "workspace": "metered"})
        await call(session, "search_memory", {"query": "what do metrics count", "workspace": "metered"})
        await session.call_tool("get_memory", {"memory_id": "not-an-id"})

    assert server.get("/metrics").status_code == 401
    scoped = server.get("/metrics", tokens["team"])
    assert scoped.status_code == 403 and "metrics cover all of them" in scoped.json()["error"]["message"]
    scraped = server.get("/metrics", tokens["monitor"])
    assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
    text = scraped.text
    for line in (
        'zapomni_tool_calls_total{outcome="ok",tool="add_memory"}',
        'zapomni_tool_calls_total{outcome="error",tool="get_memory"}',
        'zapomni_errors_total{type="InvalidArguments"}',
        'zapomni_memories{workspace="metered"} 1.0',
        'zapomni_jobs{state="queued"}',
        'zapomni_jobs{state="running"}',
        'zapomni_jobs{state="failed"}',
        "zapomni_writes_in_flight 0.0",
        "zapomni_search_latency_seconds_count",
        'zapomni_embedding_latency_seconds_count{kind="query"}',
        "zapomni_embedding_cache_hit_ratio",
        "zapomni_adds_total",
        "zapomni_searches_total",
        "process_resident_memory_bytes",
    ):
        assert line in text, line
    assert _value(text, "zapomni_searches_total") >= 1 and _value(text, "zapomni_adds_total") >= 1


def test_connections_that_never_finish_their_headers_lock_nobody_out_and_are_closed(server: HttpServer) -> None:
    """Slowloris: more half-open connections than the server takes at once (256), without a token."""
    stuck = []
    for _ in range(300):
        connection = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        connection.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
        stuck.append(connection)
    try:
        assert server.get("/healthz").status_code == 200
        assert server.get("/readyz").status_code == 200
        deadline = time.monotonic() + IDLE_S + 30
        for connection in stuck:  # each one is closed by the server: evicted at once, or after the idle timeout
            connection.settimeout(max(deadline - time.monotonic(), 0.1))
            with contextlib.suppress(ConnectionResetError):  # closed too
                assert connection.recv(1024) == b"", "a half-open connection was answered instead of closed"
    finally:
        for connection in stuck:
            connection.close()
    assert server.get("/healthz").status_code == 200


def sign_in(server: HttpServer, token: str, address: str, forwarded_for: str | None = None) -> httpx.Response:
    """A console sign-in from another loopback address, named as the server knows itself (Host is checked)."""
    transport = httpx.HTTPTransport(local_address=address)
    headers = {"Host": f"127.0.0.1:{server.port}"} | ({"X-Forwarded-For": forwarded_for} if forwarded_for else {})
    with httpx.Client(transport=transport, timeout=30) as client:
        return client.post(f"http://{address}:{server.port}/login", data={"token": token, "next": "/"}, headers=headers)


def until_refused(attempt: Callable[[int], httpx.Response]) -> list[int]:
    # A burst of 10, then one per 6 s: on a slow machine the bucket may refill by one meanwhile.
    statuses: list[int] = []
    while 429 not in statuses and len(statuses) < 30:
        statuses.append(attempt(len(statuses)).status_code)
    return statuses


def test_console_sign_ins_are_limited_per_address_and_per_token_and_sign_nobody_else_out(
    server: HttpServer, tokens: dict[str, str]
) -> None:
    signed_in = sign_in(server, tokens["admin"], "127.0.0.1")
    assert signed_in.status_code == 303
    cookies = dict(signed_in.cookies)

    guesses = until_refused(lambda _: sign_in(server, "zap_000000000000_guess", "127.0.0.2"))
    assert guesses[-1] == 429 and set(guesses[:-1]) == {401} and len(guesses) > 10
    signed = until_refused(lambda _: sign_in(server, tokens["monitor"], "127.0.0.3"))
    assert signed[-1] == 429 and set(signed[:-1]) == {303} and len(signed) > 10
    refused = sign_in(server, tokens["monitor"], "127.0.0.4")  # a fresh address, the same token
    assert refused.status_code == 429 and refused.headers["retry-after"].isdigit()
    assert "with token &#39;monitor&#39;" in refused.text
    page = httpx.get(f"{server.base}/", cookies=cookies, timeout=30)
    assert page.status_code == 200 and "Sign out" in page.text  # the first session is still signed in


def test_a_trusted_proxy_names_the_client_and_no_other_peer_can(server: HttpServer) -> None:
    def guess(n: int) -> str:  # a new token each time: only the address's limit can refuse
        return f"zap_{n:012d}_guess"

    # Through the trusted proxy (127.0.0.5), the client it names is limited, not the proxy: another client is not.
    behind = until_refused(lambda n: sign_in(server, guess(100 + n), "127.0.0.5", "192.0.2.7"))
    assert behind[-1] == 429 and set(behind[:-1]) == {401} and len(behind) > 10
    assert sign_in(server, guess(200), "127.0.0.5", "192.0.2.8").status_code == 401
    # Any other peer naming a new client each time is still limited as itself.
    spoofed = until_refused(lambda n: sign_in(server, guess(300 + n), "127.0.0.6", f"192.0.2.{10 + n}"))
    assert spoofed[-1] == 429 and set(spoofed[:-1]) == {401} and len(spoofed) > 10


def test_a_bodiless_get_put_or_delete_is_answered_at_once(server: HttpServer, tokens: dict[str, str]) -> None:
    """Not held until the request timeout (504): the guard had read the empty body the SDK then waited for, and a
    GET stream of a stateless server never carries a message."""
    for method in ("GET", "PUT", "DELETE"):
        response = httpx.request(
            method, server.url, headers=bearer(tokens["admin"]) | {"Accept": "application/json, text/event-stream"},
            timeout=TIMEOUT_S + 30,
        )  # fmt: skip
        assert response.status_code == 405 and response.headers["allow"] == "POST", (method, response.text)
        assert "send each JSON-RPC message as a POST" in response.json()["error"]["message"]


def test_an_id_that_is_not_json_is_refused_not_taken_for_a_notification(
    server: HttpServer, tokens: dict[str, str]
) -> None:
    for constant in ("NaN", "Infinity", "-Infinity"):
        body = f'{{"jsonrpc":"2.0","id":{constant},"method":"tools/call","params":{{"name":"list_workspaces"}}}}'
        refused = server.post(body.encode(), tokens["admin"])
        assert refused.status_code == 400, (constant, refused.status_code)  # a notification would get 202
        assert f"{constant} is not a JSON value" in refused.json()["error"]["message"]


def _value(exposition: str, name: str) -> float:
    return float(next(line.split()[-1] for line in exposition.splitlines() if line.startswith(name + " ")))


def test_no_token_ever_reaches_the_log(server: HttpServer, tokens: dict[str, str]) -> None:
    log = server.stderr()
    assert '"tool.called"' in log and '"token": "admin"' in log  # calls are logged, by token name
    for token in tokens.values():
        assert token not in log
        # Nor its secret part: "zap_<id>_<secret>", whose secret may itself hold underscores (split at the last
        # one, a secret ending "_s" once made this test look for "s").
        assert token.split("_", 2)[2] not in log
