"""The HTTP server's pieces that need no server: token buckets, the listen policy, Host/Origin lists, tool roles."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from zapomni_console.sessions import Sessions
from zapomni_core import Settings
from zapomni_http.binding import bind, public_url, refusal
from zapomni_http.limits import TokenBuckets
from zapomni_http.security import transport_security
from zapomni_mcp.tools import TOOLS


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_lets_a_burst_through_then_refills_at_the_rate() -> None:
    clock = Clock()
    buckets = TokenBuckets(rate=2.0, burst=3, clock=clock)
    assert [buckets.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("a") == pytest.approx(0.5)  # one request back after half a second at 2/s
    assert buckets.take("b") == 0.0  # another token has its own bucket
    clock.now += 0.5
    assert buckets.take("a") == 0.0
    clock.now += 60
    assert [buckets.take("a") for _ in range(4)][:3] == [0.0, 0.0, 0.0]  # refilled to the burst, not beyond
    assert TokenBuckets(rate=0, burst=1).take("a") == 0.0  # rate 0: no limit


def test_beyond_the_loopback_the_server_needs_tls_or_insecure(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text("-")
    key.write_text("-")
    assert refusal(Settings.from_variables(ZAPOMNI_HTTP_HOST="127.0.0.1")) is None
    assert refusal(Settings.from_variables(ZAPOMNI_HTTP_HOST="::1")) is None
    assert refusal(Settings.from_variables(ZAPOMNI_HTTP_HOST="localhost")) is None
    refused = refusal(Settings.from_variables(ZAPOMNI_HTTP_HOST="192.168.1.5"))
    assert refused is not None and refused.startswith("refusing to listen on 192.168.1.5 without TLS")
    assert refusal(Settings.from_variables(ZAPOMNI_HTTP_HOST="0.0.0.0", ZAPOMNI_HTTP_INSECURE="true")) is None
    assert (
        refusal(Settings.from_variables(ZAPOMNI_HTTP_HOST="0.0.0.0", ZAPOMNI_TLS_CERT=cert, ZAPOMNI_TLS_KEY=key))
        is None
    )
    assert "go together" in str(refusal(Settings.from_variables(ZAPOMNI_TLS_CERT=cert)))
    assert "no such file" in str(
        refusal(Settings.from_variables(ZAPOMNI_TLS_CERT=cert, ZAPOMNI_TLS_KEY=tmp_path / "none.pem"))
    )


def test_the_public_url_and_the_hosts_and_origins_it_allows(tmp_path: Path) -> None:
    settings = Settings.from_variables(ZAPOMNI_HTTP_PORT=9000)
    assert public_url(settings) == "http://127.0.0.1:9000/mcp"
    assert (
        public_url(Settings.from_variables(ZAPOMNI_HTTP_HOST="::1", ZAPOMNI_HTTP_PORT=9000)) == "http://[::1]:9000/mcp"
    )
    behind = Settings.from_variables(ZAPOMNI_HTTP_PUBLIC_URL="https://memory.example.org/mcp/")
    assert public_url(behind) == "https://memory.example.org/mcp"

    security = transport_security(behind, public_url(behind))
    assert {"127.0.0.1:*", "localhost:*", "[::1]:*", "memory.example.org", "memory.example.org:*"} <= set(
        security.allowed_hosts
    )
    assert {"http://localhost:*", "https://memory.example.org", "https://memory.example.org:*"} <= set(
        security.allowed_origins
    )
    assert "http://127.0.0.1:9000" in transport_security(settings, public_url(settings)).allowed_origins
    configured = Settings.from_variables(
        ZAPOMNI_HTTP_ALLOWED_HOSTS="mem.lan:8765, mem.lan", ZAPOMNI_HTTP_CORS_ORIGINS="https://app.x"
    )
    security = transport_security(configured, public_url(configured))
    assert security.allowed_hosts == ["mem.lan:8765", "mem.lan", "mem.lan:*"]  # as configured, nothing else
    assert "https://app.x" in security.allowed_origins


def test_every_tool_declares_the_role_it_needs() -> None:
    roles = {tool.name: tool.role for tool in TOOLS}
    assert set(roles.values()) == {"read", "write", "admin"}
    for tool in TOOLS:
        hints = tool.annotations
        if hints is not None and hints.read_only_hint:
            assert tool.role == "read", tool.name
        if hints is not None and hints.destructive_hint:
            assert tool.role != "read", tool.name
    assert roles["delete_workspace"] == "admin" and roles["cancel_job"] == "write" and roles["job_status"] == "read"


def test_the_listener_sends_small_writes_at_once() -> None:
    """TCP_NODELAY, inherited by every accepted connection: without it each response waited ~40 ms."""
    with bind("127.0.0.1", 0) as listener:
        assert listener.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1


def test_a_flood_of_sign_ins_never_signs_another_token_out() -> None:
    sessions = Sessions(limit=50, per_token=5)
    opened = sessions.open("token-a")
    assert opened is not None
    kept_id, _ = opened
    flood = [sessions.open("token-b") for _ in range(1001)]
    assert all(item is not None for item in flood)  # b's own oldest make room for b's newest
    assert sessions.get(kept_id) is not None
    assert sum(sessions.get(item[0]) is not None for item in flood if item) == 5


def test_a_full_console_refuses_a_new_sign_in_rather_than_dropping_someone() -> None:
    sessions = Sessions(limit=3, per_token=5)
    held = [sessions.open(f"token-{n}") for n in range(3)]
    assert sessions.open("token-late") is None
    assert all(item is not None and sessions.get(item[0]) is not None for item in held)
    idle = Sessions(idle_s=0.0, limit=3)
    for n in range(3):
        idle.open(f"token-{n}")
    assert idle.open("token-late") is not None  # sessions unused past the idle time are forgotten first
