"""Where `zapomni serve --http` listens: the loopback by default, beyond it only with TLS (or --insecure, see
test_http_limits.py), and TLS served with the certificate and key it is given."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.certificates import self_signed
from tests.cli_in_process import run_cli
from tests.helpers import free_port, server_pids
from tests.processes import ZAPOMNI, call, http_server, http_session, server_env

pytestmark = pytest.mark.anyio

GRACE_S = 20


def run_zapomni(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ZAPOMNI, *args], env=server_env(data_dir, **env), capture_output=True, text=True, timeout=60)


def serve(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_zapomni(data_dir, "serve", *args, **env)


def test_a_host_beyond_the_loopback_without_tls_is_refused_in_one_line(data_dir: Path) -> None:
    refused = serve(data_dir, "--http", "--host", "0.0.0.0", "--port", str(free_port()))
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        "zapomni serve --http: refusing to listen on 0.0.0.0 without TLS: set ZAPOMNI_TLS_CERT and "
        "ZAPOMNI_TLS_KEY, or pass --insecure (ZAPOMNI_HTTP_INSECURE=true) when a proxy in front of it terminates TLS"
    ]
    assert refused.stdout == "" and server_pids(data_dir) == []  # refused before anything started

    half = serve(data_dir, "--http", ZAPOMNI_TLS_CERT=str(data_dir / "cert.pem"))
    assert half.returncode == 1 and "ZAPOMNI_TLS_CERT and ZAPOMNI_TLS_KEY go together" in half.stderr
    stray = serve(data_dir, "--port", "9999")
    assert stray.returncode == 2 and "go with --http" in stray.stderr


async def test_tls_is_served_with_the_certificate_it_is_given(data_dir: Path, tmp_path: Path) -> None:
    with http_server(
        data_dir, tmp_path / "server.log", tls=self_signed(tmp_path), ZAPOMNI_SHUTDOWN_GRACE_S=str(GRACE_S)
    ) as server:
        assert server.url.startswith("https://")
        # The token as the README makes it.
        made = run_cli(
            ["token", "create", "--name", "laptop", "--all", "--role", "write", "--json"], server_env(data_dir)
        )
        token = json.loads(made.stdout)["token"]
        async with http_session(server, token) as session:
            added = await call(session, "add_memory", {"text": "Sent over TLS: the router password is on the fridge."})
            found = await call(session, "search_memory", {"query": "where is the router password"})
            assert found["results"][0]["memory_id"] == added["memory_id"]
        with pytest.raises(httpx.TransportError):  # plain HTTP is not spoken on that port
            await asyncio.to_thread(httpx.get, f"http://127.0.0.1:{server.port}/healthz", timeout=5)
        ready = next(e for e in server.log_events() if e.get("event") == "server.ready")
        assert ready["tls"] is True and ready["url"] == server.url

        # A client that keeps its connection open and idle (httpx's pool does) must not hold the stop: a TLS close
        # waits for the peer's close_notify, which an idle client never reads to send, for 30 s (asyncio's default).
        with httpx.Client(base_url=server.base, verify=server.verify) as idle:
            assert [idle.get("/healthz").status_code for _ in range(2)] == [200, 200]
            started = time.monotonic()
            assert server.terminate() == 0
            stopped_in_s = time.monotonic() - started
    waited_out = [e for e in server.log_events() if "graceful shutdown exceeded" in str(e.get("event"))]
    assert not waited_out, waited_out
    assert stopped_in_s < GRACE_S / 2, f"the stop took {stopped_in_s:.1f} s with an idle TLS connection open"
