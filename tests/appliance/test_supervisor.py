"""The native appliance: `make up-local` / ops/down-local, FalkorDB, Redis and health under supervisord."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any

import pytest
import redis

from tests.appliance.harness import OPS, Appliance, alive
from tests.helpers import wait_for
from zapomni_core import open_core
from zapomni_core.models import AddMemoryRequest, SearchRequest

PROGRAMS = {"falkordb", "redis", "health"}


def test_up_local_runs_everything_under_supervisord_until_ready(appliance: Appliance) -> None:
    print(f"\nup-local to ready: {appliance.up_s:.1f} s")
    assert appliance.status() == dict.fromkeys(PROGRAMS, "RUNNING")
    status, body = appliance.readyz()
    assert status == 200, body
    assert {check["name"] for check in body["checks"]} >= {"falkordb", "schema", "redis", "embedder"}
    # The ports are the ones asked for, bound to loopback only.
    assert redis.Redis(port=appliance.falkordb_port).ping()
    assert redis.Redis(port=appliance.cache_port).ping()
    # Once more is harmless: it says so and leaves the running appliance alone.
    supervisord = appliance.supervisord_pid()
    again = appliance.up()
    assert "already running" in again.stdout
    assert appliance.supervisord_pid() == supervisord


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
    client = redis.Redis(port=appliance.falkordb_port)
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
        before = (await core.stats()).total_memories
        acknowledged = [(await core.add_memory(AddMemoryRequest(text=text))).memory_id for text in texts]
        victim = appliance.pid("falkordb")
        os.kill(victim, signal.SIGKILL)  # right after the last acknowledgement, with no clean close
        killed_at = time.monotonic()

    assert wait_for(lambda: not alive(victim), timeout_s=10)
    assert wait_for(lambda: appliance.status().get("falkordb") == "RUNNING", timeout_s=30)
    assert appliance.pid("falkordb") != victim
    appliance.wait_ready(timeout_s=60)
    print(f"\nkill -9 of FalkorDB to /readyz 200: {time.monotonic() - killed_at:.1f} s")

    async with open_core(settings) as (core, _info):
        assert (await core.stats()).total_memories == before + len(texts)
        for text, memory_id in zip(texts, acknowledged, strict=True):
            found = await core.search(SearchRequest(query=text, limit=3))
            assert found.results and found.results[0].memory_id == memory_id, text


@pytest.mark.anyio
async def test_down_local_stops_every_process_and_the_data_survives(appliance: Appliance) -> None:
    async with open_core(appliance.settings()) as (core, _info):
        added = await core.add_memory(AddMemoryRequest(text="The greenhouse thermostat is set to 21 degrees."))
        count = (await core.stats()).total_memories
    pids = {"supervisord": appliance.supervisord_pid(), **{name: appliance.pid(name) for name in PROGRAMS}}
    assert set(appliance.processes()) >= set(pids.values())

    result = appliance.down()
    assert result.returncode == 0, result
    assert [name for name, pid in pids.items() if alive(pid)] == []
    assert appliance.processes() == []
    assert "saved" in (appliance.dir / "log" / "falkordb.log").read_text().lower()
    assert "not running" in appliance.down().stdout  # idempotent

    appliance.up()
    async with open_core(appliance.settings()) as (core, _info):
        assert (await core.stats()).total_memories == count
        found = await core.search(SearchRequest(query="what temperature is the greenhouse?"))
        assert found.results[0].memory_id == added.memory_id
