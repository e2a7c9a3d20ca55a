"""Server mode: connect to a FalkorDB on FALKORDB_HOST/PORT/PASSWORD, waiting while it loads."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from pydantic import SecretStr
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.helpers import open_core, wait_for
from tests.processes import FalkorDB
from zapomni_core import Settings, StorageUnavailable
from zapomni_core.memories.requests import AddMemoryRequest, SearchRequest
from zapomni_db import CredentialsRefused, DatabaseTarget, DatabaseUnavailable, reachable

pytestmark = pytest.mark.anyio
PASSWORD = "s3cret-pass"


def answers(port: int) -> bool:
    try:
        return bool(redis.Redis(port=port, password=PASSWORD, socket_timeout=1).ping())
    except (redis.ConnectionError, redis.exceptions.BusyLoadingError):
        return False


@pytest.fixture
def falkordb_server(data_dir: Path) -> Iterator[FalkorDB]:
    """A password-protected FalkorDB on 127.0.0.1, not started yet."""
    server = FalkorDB(data_dir, password=PASSWORD, log_file=data_dir / "server.log")
    yield server
    server.kill()


def server_settings(port: int, **extra: object) -> Settings:
    return Settings.from_variables(
        ZAPOMNI_DB_MODE="server",
        FALKORDB_HOST="127.0.0.1",
        FALKORDB_PORT=port,
        FALKORDB_PASSWORD=PASSWORD,
        GRAPH_NAME="team",
        LOG_LEVEL="WARNING",
        **extra,
    )


async def test_stores_and_finds_in_a_running_server(falkordb_server: FalkorDB) -> None:
    falkordb_server.start()
    port = falkordb_server.port
    async with open_core(server_settings(port)) as (core, info):
        assert info.data_location == f"falkordb://127.0.0.1:{port}"
        added = await core.memories.add(AddMemoryRequest(text="The VPN endpoint moved to vpn2.example.org."))
        found = await core.memories.search(SearchRequest(query="where is the VPN now?"))
        assert found.results[0].memory_id == added.memory_id
        assert (await core.workspaces.stats()).graph_name == "team"
    graphs = redis.Redis(port=port, password=PASSWORD).execute_command("GRAPH.LIST")
    assert b"team" in graphs


async def test_a_wrong_password_is_reported_with_the_server_named(falkordb_server: FalkorDB) -> None:
    falkordb_server.start()
    port = falkordb_server.port
    for given, told in ((None, "it requires a password and FALKORDB_PASSWORD is not set"),
                        ("not-the-password", "it refused the password in FALKORDB_PASSWORD")):  # fmt: skip
        settings = server_settings(port).model_copy(update={"falkordb_password": given and SecretStr(given)})
        with pytest.raises(StorageUnavailable) as caught:
            async with open_core(settings):
                pass
        message = str(caught.value)
        assert f"FALKORDB_HOST=127.0.0.1 FALKORDB_PORT={port}: {told}" in message
        assert PASSWORD not in message and "not-the-password" not in message


async def test_a_server_that_is_down_is_told_at_once_and_one_that_answers_is_reachable(
    falkordb_server: FalkorDB,
) -> None:
    # Asked before the FalkorDB client is built, whose own check of a server that is down blocks for seconds.
    target = DatabaseTarget("team", "team", host="127.0.0.1", port=falkordb_server.port, password=PASSWORD)
    with pytest.raises(DatabaseUnavailable) as caught:
        await reachable(target)
    assert f"127.0.0.1:{falkordb_server.port}" in str(caught.value.__cause__)
    falkordb_server.start()
    await reachable(target)
    with pytest.raises(CredentialsRefused):
        await reachable(DatabaseTarget("team", "team", host="127.0.0.1", port=falkordb_server.port, password="nope"))


async def test_queries_wait_while_the_server_is_loading(falkordb_server: FalkorDB, data_dir: Path) -> None:
    falkordb_server.start()
    port = falkordb_server.port
    async with open_core(server_settings(port)) as (core, _info):
        added = await core.memories.add(AddMemoryRequest(text="Backups run nightly at 02:00."))
    client = redis.Redis(port=port, password=PASSWORD, retry=Retry(NoBackoff(), 0))
    for i in range(6):  # extra keys, each taking key-load-delay to load
        client.execute_command("GRAPH.QUERY", f"ballast{i}", "UNWIND range(1, 200) AS x CREATE (:B {v: x})")
    with contextlib.suppress(redis.ConnectionError):  # the server hangs up: that is the answer
        client.execute_command("SHUTDOWN", "SAVE")
    assert wait_for(lambda: not answers(port))

    falkordb_server.start(key_load_delay_us=300_000)  # ~2 s of LOADING
    probe = redis.Redis(port=port, password=PASSWORD, retry=Retry(NoBackoff(), 0))  # see LOADING, don't wait it out
    assert wait_for(lambda: _loading(probe), timeout_s=10), "the server should be loading now"
    async with open_core(server_settings(port)) as (core, _info):
        found = await core.memories.search(SearchRequest(query="when do backups run?"))
        assert found.results[0].memory_id == added.memory_id


def _loading(client: redis.Redis) -> bool:
    try:
        client.ping()
    except redis.exceptions.BusyLoadingError:
        return True
    except redis.ConnectionError:
        return False
    return False
