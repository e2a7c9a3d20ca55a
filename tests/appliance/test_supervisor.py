"""The native appliance: `make up-local` / ops/down-local, FalkorDB, Redis, health and HTTP under supervisord."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.appliance.harness import OPS, Appliance, alive
from tests.helpers import open_core, wait_for
from zapomni_core.memories.requests import AddMemoryRequest, SearchRequest

PROGRAMS = {"falkordb", "redis", "health", "http"}


def test_up_local_runs_everything_under_supervisord_until_ready(appliance: Appliance) -> None:
    print(f"\nup-local to ready: {appliance.up_s:.1f} s")
    # Ready is the health endpoint answering; supervisord calls a program RUNNING only after its startsecs.
    assert wait_for(lambda: appliance.status() == dict.fromkeys(PROGRAMS, "RUNNING"), 30), appliance.status()
    status, body = appliance.readyz()
    assert status == 200, body
    assert {check["name"] for check in body["checks"]} >= {"falkordb", "schema", "redis", "embedder"}
    # The ports are the ones asked for, bound to loopback only.
    assert appliance.falkordb().ping()
    assert appliance.cache().ping()
    # Once more is harmless: it says so and leaves the running appliance alone.
    supervisord = appliance.supervisord_pid()
    again = appliance.up()
    assert "already running" in again.stdout
    assert appliance.supervisord_pid() == supervisord


def refused_without_password(port: int) -> str:
    """What a server on `port` answers to a PING from a client that does not authenticate (raw RESP)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.sendall(b"PING\r\n")
        return connection.recv(200).decode()


def assert_password_stays_secret(appliance: Appliance, password: str, *outputs: str) -> None:
    """Neither a process's command line (any local user can read it), nor a log, nor an output shows it."""
    for pid in appliance.processes():
        with contextlib.suppress(OSError):
            assert password.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes(), pid
    for log in (appliance.dir / "log").iterdir():
        assert password not in log.read_text(errors="replace"), log
    for output in outputs:
        assert password not in output


def test_falkordb_and_the_cache_want_the_password_generated_at_the_first_start(appliance: Appliance) -> None:
    secrets_dir = appliance.password_file.parent
    assert stat.S_IMODE(secrets_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(appliance.password_file.stat().st_mode) == 0o600
    password = appliance.password_file.read_text()
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}\n", password), "one line: secrets.token_urlsafe(32)"
    # No temporary left (the other file is the HTTP server's token, tests/appliance/test_http.py).
    assert sorted(entry.name for entry in secrets_dir.iterdir()) == ["falkordb.password", "http.token"]

    # Another local user, without the password (or with a wrong one), gets nothing from either server.
    for port in (appliance.falkordb_port, appliance.cache_port):
        assert refused_without_password(port).startswith("-NOAUTH"), port
    for client in (appliance.falkordb(password=""), appliance.cache(password="")):
        with pytest.raises((redis.AuthenticationError, redis.ResponseError), match=r"(?i)auth"):
            client.execute_command("KEYS", "*")
    for client in (appliance.falkordb(password="guess"), appliance.cache(password="guess")):
        with pytest.raises(redis.AuthenticationError):
            client.ping()

    # Every client of ops/env.sh has it: the operator commands, and REDIS_URL for the cache check.
    doctor = appliance.run(OPS / "local", "zapomni", "doctor", "--json", timeout=60)
    assert doctor.returncode == 0, doctor
    report = json.loads(doctor.stdout)
    assert report["status"] == "ready" and report["failing"] == [], report
    assert {check["name"] for check in report["checks"]} >= {"falkordb", "redis"}
    assert_password_stays_secret(appliance, password.strip(), doctor.stdout, doctor.stderr)


def test_a_password_set_in_the_environment_is_used_instead(new_appliance: Any) -> None:
    # The user's own, with characters a URL and redis.conf must carry: quoted, percent-encoded.
    own, cache_own = 'my "own" p@ss:w/rd %20 é', "the cache's own"
    appliance: Appliance = new_appliance(FALKORDB_PASSWORD=own, REDIS_CACHE_PASSWORD=cache_own)
    up = appliance.up()
    assert not appliance.password_file.exists(), "nothing is generated when FALKORDB_PASSWORD is set"
    assert appliance.falkordb(password=own).ping()
    assert appliance.cache(password=cache_own).ping()
    with pytest.raises((redis.AuthenticationError, redis.ResponseError), match=r"(?i)auth"):
        appliance.falkordb(password="").execute_command("KEYS", "*")
    with pytest.raises(redis.AuthenticationError):
        appliance.cache(password=own).ping()  # the cache has its own
    doctor = appliance.run(OPS / "local", "zapomni", "doctor", "--json", timeout=60)
    assert doctor.returncode == 0, doctor
    assert json.loads(doctor.stdout)["status"] == "ready"
    for secret in (own, cache_own):
        assert_password_stays_secret(appliance, secret, up.stdout, up.stderr, doctor.stdout, doctor.stderr)


def test_a_second_up_local_is_refused_while_the_first_is_starting(new_appliance: Any) -> None:
    appliance: Appliance = new_appliance()
    first = subprocess.Popen(
        [OPS / "up-local"], env=appliance.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    lock = appliance.dir / "run" / "owner.lock"
    try:
        assert wait_for(lambda: lock.exists() and "up-local" in lock.read_text(), timeout_s=30)
        second = appliance.run(OPS / "up-local", timeout=30)
        assert first.poll() is None, "the first up-local should still be starting"
    finally:
        first.terminate()  # it has shown what it should; the teardown stops its supervisord
        first.wait(timeout=30)
    assert second.returncode == 3, second
    assert str(appliance.dir) in second.stderr
    assert f"pid {first.pid} " in second.stderr and "still starting" in second.stderr, second.stderr


def test_readyz_is_503_while_falkordb_loads_though_supervisord_says_running(new_appliance: Any) -> None:
    # Each key of the dataset takes 0.2 s to load; FalkorDB answers LOADING in between (a longer delay
    # would outlast the health check's 2 s timeout: nothing is answered during one key's delay).
    appliance: Appliance = new_appliance(
        FALKORDB_EXTRA_ARGS="--key-load-delay 200000 --loading-process-events-interval-bytes 1024"
    )
    appliance.up()
    client = appliance.falkordb()
    for i in range(25):  # 25 keys: ~5 s of loading, longer than supervisord's startsecs (2 s)
        client.execute_command("GRAPH.QUERY", f"ballast{i}", "UNWIND range(1, 100) AS x CREATE (:B {v: x})")
    # Into the AOF's RDB part, which is what the delay applies to (replayed commands are not keys).
    client.execute_command("BGREWRITEAOF")
    assert wait_for(lambda: _rewrite_done(client), timeout_s=30)

    appliance.supervisorctl("restart", "falkordb")  # SIGTERM: saves, exits; then started again
    seen_loading: dict[str, Any] = {}

    def loading_while_running() -> bool:
        status, body = appliance.readyz()
        if status == 503 and "falkordb" in body["failing"] and appliance.status()["falkordb"] == "RUNNING":
            seen_loading.update(body)
            return True
        return False

    assert wait_for(loading_while_running, timeout_s=20), "never saw FalkorDB RUNNING and /readyz 503 together"
    detail = next(check["detail"] for check in seen_loading["checks"] if check["name"] == "falkordb")
    assert "loading" in detail.lower(), detail
    waited = appliance.wait_ready(timeout_s=60)
    assert int(client.info("persistence")["loading"]) == 0
    print(f"\n/readyz turned 200 {waited:.1f} s after the loading was first seen")


def _rewrite_done(client: redis.Redis) -> bool:
    info = client.info("persistence")
    return int(info["aof_rewrite_in_progress"]) == 0 and int(info["aof_rewrite_scheduled"]) == 0


@pytest.mark.anyio
async def test_kill_9_of_falkordb_is_restarted_and_keeps_every_acknowledged_memory(appliance: Appliance) -> None:
    settings = appliance.settings()
    texts = [f"Kill drill {i}: the spare key for locker {100 + i} is in the blue envelope." for i in range(6)]
    async with open_core(settings) as (core, _info):
        before = (await core.workspaces.stats()).total_memories
        acknowledged = [(await core.memories.add(AddMemoryRequest(text=text))).memory_id for text in texts]
        victim = appliance.pid("falkordb")
        os.kill(victim, signal.SIGKILL)  # right after the last acknowledgement, with no clean close
        killed_at = time.monotonic()

    assert wait_for(lambda: not alive(victim), timeout_s=10)
    assert wait_for(lambda: appliance.status().get("falkordb") == "RUNNING", timeout_s=30)
    assert appliance.pid("falkordb") != victim
    appliance.wait_ready(timeout_s=60)
    print(f"\nkill -9 of FalkorDB to /readyz 200: {time.monotonic() - killed_at:.1f} s")

    async with open_core(settings) as (core, _info):
        assert (await core.workspaces.stats()).total_memories == before + len(texts)
        for text, memory_id in zip(texts, acknowledged, strict=True):
            found = await core.memories.search(SearchRequest(query=text, limit=3))
            assert found.results and found.results[0].memory_id == memory_id, text


@pytest.mark.anyio
async def test_down_local_stops_every_process_and_the_data_survives(appliance: Appliance) -> None:
    async with open_core(appliance.settings()) as (core, _info):
        added = await core.memories.add(AddMemoryRequest(text="The greenhouse thermostat is set to 21 degrees."))
        count = (await core.workspaces.stats()).total_memories
    pids = {"supervisord": appliance.supervisord_pid(), **{name: appliance.pid(name) for name in PROGRAMS}}
    assert set(appliance.processes()) >= set(pids.values())

    result = appliance.down()
    assert result.returncode == 0, result
    assert [name for name, pid in pids.items() if alive(pid)] == []
    assert appliance.processes() == []
    assert "saved" in (appliance.dir / "log" / "falkordb.log").read_text().lower()
    assert "not running" in appliance.down().stdout  # idempotent

    # The password is kept across restarts; a password file someone made readable is made private again.
    # So is the HTTP server's token: not made again, not printed again.
    password = appliance.password
    token = appliance.token_file.read_text()
    appliance.password_file.chmod(0o644)
    again = appliance.up()
    assert appliance.password == password
    assert stat.S_IMODE(appliance.password_file.stat().st_mode) == 0o600
    assert appliance.token_file.read_text() == token
    assert token.strip() not in again.stdout + again.stderr
    async with open_core(appliance.settings()) as (core, _info):
        assert (await core.workspaces.stats()).total_memories == count
        found = await core.memories.search(SearchRequest(query="what temperature is the greenhouse?"))
        assert found.results[0].memory_id == added.memory_id


def test_the_wait_for_falkordb_takes_a_supervisord_without_its_socket_yet_as_starting(new_appliance: Any) -> None:
    # The standalone entrypoint starts supervisord in the background and waits at once: its socket appears a
    # moment later. That silence once ended the wait before FalkorDB had a chance (an appliance that did not start).
    appliance = new_appliance()
    started = time.monotonic()
    waited = appliance.run(
        "bash", "-c", f'. "{OPS / "env.sh"}" && zapomni_wait_for_falkordb 3 --supervised', timeout=60
    )
    assert waited.returncode != 0 and time.monotonic() - started >= 2.5, waited.stderr
    assert "was not ready within 3 s" in waited.stderr and "stopped answering" not in waited.stderr, waited.stderr
