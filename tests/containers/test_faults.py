"""Faults of the running appliance, as an operator meets them: FalkorDB's container and the zapomni service
killed with SIGKILL while adds stream (nothing acknowledged lost, the stack back by itself), a client's
server killed mid-stream, health saying what is wrong while FalkorDB is down, and a full data volume."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession

from tests.containers.harness import (
    call,
    container,
    inspect,
    main_pid,
    mcp_client,
    podman,
    probe,
    readme_client_entry,
    wait_until,
    with_options,
)

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("stack")]

# What a client hears while the database is away: retry advice, never an internal error (faults.py).
RETRYABLE = ("Retrying is safe", "Retry in a moment")
ADDS = 40


def stack_entry(*options: str) -> list[str]:
    return with_options(readme_client_entry("zapomni_default"), *options)


def text_of(result: object) -> str:
    return "".join(getattr(block, "text", "") for block in getattr(result, "content", []))


async def stream_adds(
    session: ClientSession, workspace: str, count: int, after_ack: Callable[[int], None], errors: list[str]
) -> dict[str, str]:
    """Add `count` memories one by one, each retried until acknowledged (adds are idempotent, so a retry
    after an interrupted write stores it once); `after_ack(i)` runs after the i-th acknowledgement."""
    acknowledged: dict[str, str] = {}
    for i in range(count):
        text = f"Reading {i}: the north gauge showed {i * 7} units at shift change."
        for _ in range(120):
            result = await session.call_tool("add_memory", {"text": text, "workspace": workspace})
            if not result.is_error:
                acknowledged[text] = result.structured_content["memory_id"]
                break
            errors.append(text_of(result))
            await anyio.sleep(0.5)
        else:
            raise AssertionError(f"add {i} was never acknowledged: {errors[-3:]}")
        after_ack(i)
    return acknowledged


async def stored_ids(session: ClientSession, workspace: str) -> list[str]:
    page = await call(session, "list_memories", {"workspace": workspace, "limit": 100})
    assert page["next_cursor"] is None
    return [memory["memory_id"] for memory in page["memories"]]


def restarted(service: str, count_before: int) -> bool:
    details = inspect(container(service))
    return bool(details["RestartCount"] > count_before and details["State"]["Running"])


async def test_falkordb_killed_while_adds_stream_loses_nothing_acknowledged_and_comes_back(tmp_path: Path) -> None:
    workspace = f"kill-db-{uuid.uuid4().hex[:8]}"
    restarts = inspect(container("falkordb"))["RestartCount"]
    errors: list[str] = []

    def kill_falkordb(i: int) -> None:
        if i == ADDS // 4:
            os.kill(main_pid("falkordb"), signal.SIGKILL)

    with (tmp_path / "client.log").open("w") as errlog:
        async with mcp_client(stack_entry(), errlog) as session:
            acknowledged = await stream_adds(session, workspace, ADDS, kill_falkordb, errors)
            assert sorted(await stored_ids(session, workspace)) == sorted(acknowledged.values())
    assert wait_until(lambda: restarted("falkordb", restarts), 60), "FalkorDB's container was not restarted"
    assert wait_until(lambda: probe().returncode == 0, 120), probe().stdout
    # The writes that met the outage were told to retry, in words (never "Internal error").
    assert all(any(advice in error for advice in RETRYABLE) for error in errors), errors


def test_health_names_falkordb_while_it_is_down_and_recovers_when_it_is_back() -> None:
    podman("stop", "--time", "30", container("falkordb"))  # a deliberate stop: no restart policy applies
    try:
        down = probe()
        assert down.returncode == 1
        assert '"status":"not_ready"' in down.stdout and '"name":"falkordb","ok":false' in down.stdout, down.stdout
    finally:
        podman("start", container("falkordb"))
    assert wait_until(lambda: probe().returncode == 0, 120), probe().stdout


async def test_the_zapomni_service_and_a_clients_server_killed_mid_stream_lose_nothing(tmp_path: Path) -> None:
    workspace = f"kill-app-{uuid.uuid4().hex[:8]}"
    restarts = inspect(container("zapomni"))["RestartCount"]
    client = f"zapomni-test-client-{uuid.uuid4().hex[:8]}"
    acknowledged: list[int] = []

    def kill_both(i: int) -> None:
        acknowledged.append(i)
        if i == 5:  # the stack's long-running service (migrations, the health endpoint)
            os.kill(main_pid("zapomni"), signal.SIGKILL)
        if i == 15:  # the client's own server, between two adds, as when its MCP host crashes
            podman("kill", "--signal", "KILL", client)

    with (tmp_path / "client.log").open("w") as errlog:
        with pytest.raises(BaseException):  # noqa: B017 - the session dies with its server
            with anyio.fail_after(300):
                async with mcp_client(stack_entry("--name", client), errlog) as session:
                    await stream_adds(session, workspace, ADDS, kill_both, [])
        assert acknowledged == list(range(16))
        async with mcp_client(stack_entry(), errlog) as session:
            stored = await stored_ids(session, workspace)
    assert len(stored) == len(set(stored)) == len(acknowledged)
    assert wait_until(lambda: restarted("zapomni", restarts), 60), "the zapomni service was not restarted"
    assert wait_until(lambda: probe().returncode == 0, 120), probe().stdout


async def test_a_full_data_volume_is_answered_clearly_and_reads_go_on(tmp_path: Path) -> None:
    name = f"zapomni-test-standalone-{uuid.uuid4().hex[:8]}"
    # The README's standalone entry with its data volume on a small tmpfs (a disk that fills up), and a
    # threshold to suit it: writes need ZAPOMNI_MIN_FREE_MB free on FalkorDB's disk (256 MB by default).
    entry = readme_client_entry("standalone")
    at = entry.index("zapomni-data:/data")
    entry[at - 1 : at + 1] = ["--tmpfs", "/data:rw,size=96m,U"]  # U: owned by the image's user (podman)
    entry = with_options(entry, "--name", name, "-e", "ZAPOMNI_MIN_FREE_MB=32")
    # Something else fills the disk, leaving 8 MB: below the threshold, above nothing.
    fill = "head -c $(( ($(df -k /data | awk 'NR == 2 { print $4 }') - 8192) * 1024 )) /dev/zero > /data/filler"
    try:
        with (tmp_path / "standalone.log").open("w") as errlog:
            async with mcp_client(entry, errlog) as session:
                kept = await call(session, "add_memory", {"text": "The water main shut-off is behind the stairs."})
                podman("exec", name, "sh", "-c", fill, timeout=120)

                refused = await session.call_tool("add_memory", {"text": "The tank is full."})
                assert refused.is_error, "a write to a full volume was acknowledged"
                message = text_of(refused)
                assert "/data/db" in message and "MB free" in message and "ZAPOMNI_MIN_FREE_MB" in message, message
                assert "Nothing was stored" in message and "Internal error" not in message, message
                low = await call(session, "get_stats")
                assert low["total_memories"] == 1 and "ZAPOMNI_MIN_FREE_MB" in low["disk_warning"], low

                found = await call(session, "search_memory", {"query": "where is the water shut-off"})
                assert found["results"][0]["memory_id"] == kept["memory_id"]

                podman("exec", name, "rm", "/data/filler")
                added = await call(session, "add_memory", {"text": "The tank was emptied on Friday."})
                assert added["deduplicated"] is False
                assert (await call(session, "get_stats"))["total_memories"] == 2
    finally:
        podman("rm", "-f", name, check=False)
