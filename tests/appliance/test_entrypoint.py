"""ops/docker-entrypoint.sh run natively: `standalone` (the all-in-one), the stack's `serve` and `health`
modes against a running appliance, and the `zapomni` passthrough."""

from __future__ import annotations

import json
import signal
import stat
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import redis
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.appliance.harness import ENTRYPOINT, OPS, Appliance, alive, clean_environ
from tests.helpers import free_port, wait_for

PROGRAMS = ("falkordb", "redis", "health")
# What the image's ENV says for the compose stack; standalone must not follow any of it.
IMAGE_ENV = {
    "ZAPOMNI_DATA_DIR": "/data",
    "ZAPOMNI_DB_MODE": "server",
    "FALKORDB_HOST": "falkordb",
    "REDIS_URL": "redis://redis:6379/0",
    "OLLAMA_HOST": "http://ollama:11434",
    "ZAPOMNI_EMBEDDER": "ollama",
    "EMBEDDING_MODEL": "nomic-embed-text",
}


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    content: dict[str, Any] | None = result.structured_content
    assert not result.is_error and content is not None, result.content
    return content


@pytest.mark.anyio
async def test_standalone_serves_mcp_and_stops_everything_when_the_client_closes(
    new_appliance: Any, tmp_path: Path
) -> None:
    appliance: Appliance = new_appliance()
    container_env = IMAGE_ENV | appliance.env  # the appliance's directory and ports, as with `docker run -e`
    params = StdioServerParameters(command=str(ENTRYPOINT), args=["standalone"], env=container_env)
    with (tmp_path / "standalone.log").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            added = await call(session, "add_memory", {"text": "The boat's spare propeller is in the red shed."})
            found = await call(session, "search_memory", {"query": "where is the spare propeller?"})
            assert found["results"][0]["memory_id"] == added["memory_id"]

            # The HTTP server stays stopped: the standalone container serves its client on stdio only.
            running = dict.fromkeys(PROGRAMS, "RUNNING") | {"http": "STOPPED"}
            assert wait_for(lambda: appliance.status() == running, timeout_s=15)
            # Its FalkorDB and cache want the password generated into the volume on this first start.
            assert stat.S_IMODE(appliance.password_file.stat().st_mode) == 0o600
            with pytest.raises((redis.AuthenticationError, redis.ResponseError), match=r"(?i)auth"):
                appliance.falkordb(password="").execute_command("GRAPH.LIST")
            with pytest.raises((redis.AuthenticationError, redis.ResponseError), match=r"(?i)auth"):
                appliance.cache(password="").execute_command("KEYS", "*")
            pids = {"supervisord": appliance.supervisord_pid(), **{name: appliance.pid(name) for name in PROGRAMS}}
            # It owns the directory: a second standalone container, or an up-local, is refused.
            owner = (appliance.dir / "run" / "owner.lock").read_text().split()
            assert owner[2] == "standalone"
            second = subprocess.run(
                [ENTRYPOINT, "standalone"],
                env=container_env | {"ZAPOMNI_OWNER_WAIT": "1"},  # not the default 15 s for a stopping owner
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=30,
            )
            for refused in (second, appliance.run(OPS / "up-local")):
                assert refused.returncode == 3, refused
                assert refused.stdout == ""
                assert str(appliance.dir) in refused.stderr
                assert f"pid {owner[0]} " in refused.stderr and "standalone" in refused.stderr, refused.stderr
            # `docker exec CONTAINER .../docker-entrypoint.sh local ...`: operator commands in its environment.
            doctor = subprocess.run(
                [ENTRYPOINT, "local", "zapomni", "doctor", "--json"],
                env=container_env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert doctor.returncode == 0, doctor
            assert json.loads(doctor.stdout)["status"] == "ready"
            closing = time.monotonic()
        # The SDK closed stdin and waited for the entrypoint to exit (it escalates to signals after 2 s).
        print(f"\nstandalone: client close (stdin EOF) to exit: {time.monotonic() - closing:.1f} s")

    # Started again at once over the same directory, as a client restarting its server does: it waits
    # for the previous one to finish stopping. Driven raw: the memory is still there, stdout carries
    # nothing but JSON-RPC, and SIGTERM is passed on to the server, which stops, and everything with it.
    raw = subprocess.Popen(
        [ENTRYPOINT, "standalone"],
        env=container_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "raw.log").open("w"),
        text=True,
    )
    try:
        assert wait_for(lambda: not [name for name, pid in pids.items() if alive(pid)], timeout_s=30)
        assert "DB saved on disk" in (appliance.dir / "log" / "falkordb.log").read_text()
        assert raw.stdin is not None and raw.stdout is not None
        initialize = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        search = {"name": "search_memory", "arguments": {"query": "spare propeller"}}
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": search},
        ):
            raw.stdin.write(json.dumps(message) + "\n")
        raw.stdin.flush()
        replies = [json.loads(raw.stdout.readline()) for _ in range(2)]
        assert replies[1]["result"]["structuredContent"]["results"][0]["memory_id"] == added["memory_id"]
        raw.send_signal(signal.SIGTERM)
        assert raw.wait(timeout=60) == 0
        rest = raw.stdout.read()
        assert all(json.loads(line) for line in rest.splitlines()), rest
    finally:
        if raw.poll() is None:
            raw.kill()
            raw.wait()
    assert wait_for(lambda: appliance.processes() == [], timeout_s=30)


def stack_env(appliance: Appliance, **extra: str) -> dict[str, str]:
    """What compose gives the stack's container, pointed at the running appliance's services."""
    password = appliance.password
    return clean_environ() | {
        "ZAPOMNI_DB_MODE": "server",
        "FALKORDB_HOST": "127.0.0.1",
        "FALKORDB_PORT": str(appliance.falkordb_port),
        "FALKORDB_PASSWORD": password,
        "REDIS_URL": f"redis://:{quote(password, safe='')}@127.0.0.1:{appliance.cache_port}/0",
        "ZAPOMNI_EMBEDDER": "onnx",
        **extra,
    }


@pytest.mark.anyio
async def test_default_mode_serves_mcp_against_the_stack_services(appliance: Appliance, tmp_path: Path) -> None:
    params = StdioServerParameters(command=str(ENTRYPOINT), args=[], env=stack_env(appliance))
    with (tmp_path / "serve.log").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            added = await call(session, "add_memory", {"text": "The attic key hangs behind the calendar."})
            found = await call(session, "search_memory", {"query": "where is the attic key?"})
            assert found["results"][0]["memory_id"] == added["memory_id"]


def test_other_arguments_pass_through_to_zapomni(appliance: Appliance) -> None:
    result = subprocess.run(
        [ENTRYPOINT, "doctor", "--json"], env=stack_env(appliance), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result
    report = json.loads(result.stdout)
    assert report["status"] == "ready" and report["failing"] == []


def test_health_mode_migrates_then_serves_readiness(appliance: Appliance, tmp_path: Path) -> None:
    port = free_port()
    health = subprocess.Popen(
        [ENTRYPOINT, "health"],
        env=stack_env(appliance, ZAPOMNI_HEALTH_PORT=str(port)),
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "health.log").open("w"),
    )
    try:
        assert wait_for(lambda: _get(f"http://127.0.0.1:{port}/readyz") == 200, timeout_s=60), (
            tmp_path / "health.log"
        ).read_text()
        assert "schema is up to date" in (tmp_path / "health.log").read_text()
        health.terminate()  # the health server itself, exec'd in place of the entrypoint
        assert health.wait(timeout=30) == 0
    finally:
        if health.poll() is None:
            health.kill()
            health.wait()


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except OSError:
        return 0


def test_stack_mode_makes_the_token_once_then_supervises_health_and_http(appliance: Appliance, tmp_path: Path) -> None:
    """The compose stack's zapomni service (`stack`), natively: the token made and printed on the first start
    only, then supervisord running the health endpoint and the HTTP server until SIGTERM."""
    health_port, http_port = free_port(), free_port()
    env = stack_env(
        appliance,
        ZAPOMNI_DATA_DIR=str(tmp_path / "data"),
        ZAPOMNI_HEALTH_PORT=str(health_port),
        ZAPOMNI_HTTP_PORT=str(http_port),
        TMPDIR=str(tmp_path),
    )
    token_file = tmp_path / "data" / "secrets" / "http.token"
    outputs = []
    for start in range(2):
        log = tmp_path / f"stack-{start}.log"
        stack = subprocess.Popen([ENTRYPOINT, "stack"], env=env, stdout=subprocess.DEVNULL, stderr=log.open("w"))
        try:
            urls = [f"http://127.0.0.1:{port}/readyz" for port in (health_port, http_port)]
            assert wait_for(lambda: all(_get(url) == 200 for url in urls), timeout_s=90), log.read_text()  # noqa: B023
            stack.terminate()  # supervisord, exec'd in place of the entrypoint, stops both
            assert stack.wait(timeout=60) == 0
        finally:
            if stack.poll() is None:
                stack.kill()
                stack.wait()
        outputs.append(log.read_text())
    token = token_file.read_text().strip()
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert f'http://127.0.0.1:{http_port}/mcp --header "Authorization: Bearer {token}"' in outputs[0], outputs[0]
    assert token not in outputs[1] and "Bearer" not in outputs[1], outputs[1]
    for log in (tmp_path / "data" / "log").iterdir():
        assert token not in log.read_text(errors="replace"), log
