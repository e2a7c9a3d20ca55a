"""Health checks: /healthz and /readyz of `zapomni health-server`, `zapomni doctor`, healthchecks/probe.

Everything is real: a password-protected FalkorDB on a free TCP port, the ONNX embedder, the
health server and the doctor as subprocesses, and FakeOllama (a real HTTP server) for Ollama.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_in_process import run_cli
from tests.fakes.ollama_server import FakeOllama
from tests.helpers import free_port, graph_client, server_pids, wait_for
from tests.processes import ZAPOMNI, FalkorDB, HealthServer, child_env
from zapomni_core.health import (
    DatabaseProbe,
    DatabaseTarget,
    check_falkordb,
    expected_schema_version,
    missing_models,
    open_health_checker,
    run_check,
    sanitise,
)
from zapomni_core.settings import Settings
from zapomni_db import SchemaSettings, migrate
from zapomni_db.embedded import EmbeddedDatabase
from zapomni_db.embedded_layout import EmbeddedPaths

pytestmark = pytest.mark.anyio

PASSWORD = "h3alth-pass"
REPO = Path(__file__).resolve().parents[2]
PROBE = REPO / "healthchecks" / "probe"
BODY_KEYS = {"status", "checks", "failing"}
CHECK_KEYS = {"name", "ok", "latency_ms", "detail"}
StartHealth = Callable[[dict[str, str]], HealthServer]  # the health_server fixture


# -- a real FalkorDB and the health server ---------------------------------------------------


@pytest.fixture
def falkordb(data_dir: Path) -> Iterator[FalkorDB]:
    """A password-protected FalkorDB on 127.0.0.1 that a test can stop, restart and slow down."""
    db_dir = data_dir / "server-db"
    db_dir.mkdir()
    server = FalkorDB(db_dir, password=PASSWORD, log_file=db_dir / "redis.log")
    try:
        server.start()
        yield server
    finally:
        server.kill()


def server_env(falkordb: FalkorDB, data_dir: Path, **extra: str) -> dict[str, str]:
    server = {
        "HOME": os.environ.get("HOME", str(data_dir)),
        "ZAPOMNI_DATA_DIR": str(data_dir),
        "ZAPOMNI_DB_MODE": "server",
        "FALKORDB_HOST": "127.0.0.1",
        "FALKORDB_PORT": str(falkordb.port),
        "FALKORDB_PASSWORD": PASSWORD,
        "LOG_LEVEL": "INFO",
    }
    return child_env(server, **extra)


def probe(server: HealthServer) -> subprocess.CompletedProcess[str]:
    env = child_env(ZAPOMNI_HEALTH_PORT=str(server.port))
    return subprocess.run([str(PROBE)], env=env, capture_output=True, text=True, timeout=30)


@pytest.fixture
def health_server(tmp_path: Path) -> Iterator[StartHealth]:
    servers: list[HealthServer] = []

    def start(env: dict[str, str]) -> HealthServer:
        server = HealthServer(env, tmp_path / f"health-{len(servers)}.log")
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.kill()


def check(body: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in body["checks"] if c["name"] == name)


def assert_shape(body: dict[str, Any]) -> None:
    assert set(body) == BODY_KEYS
    assert body["status"] in ("ready", "not_ready")
    for item in body["checks"]:
        assert set(item) == CHECK_KEYS
    assert body["failing"] == [c["name"] for c in body["checks"] if not c["ok"]]
    assert (body["status"] == "ready") == (body["failing"] == [])


# -- the health server -------------------------------------------------------------------------


def test_ready_then_not_ready_while_the_database_is_down_then_ready_again(
    falkordb: FalkorDB, data_dir: Path, health_server: StartHealth
) -> None:
    falkordb.migrate()
    server: HealthServer = health_server(server_env(falkordb, data_dir))

    status, body = server.readyz()
    assert status == 200, body
    assert_shape(body)
    assert body["status"] == "ready"
    assert [c["name"] for c in body["checks"]] == ["falkordb", "schema", "embedder"]
    for item in body["checks"]:
        assert item["ok"] is True
        assert 0 < item["latency_ms"] < 2000
    assert f"127.0.0.1:{falkordb.port}" in check(body, "falkordb")["detail"]
    latest = expected_schema_version()
    assert check(body, "schema")["detail"] == f"schema version {latest}, expected {latest}"
    assert "onnx:all-MiniLM-L6-v2" in check(body, "embedder")["detail"]
    assert server.get("/healthz") == (200, {"status": "alive"})
    ready_probe = probe(server)
    assert ready_probe.returncode == 0, ready_probe.stdout
    assert json.loads(ready_probe.stdout)["status"] == "ready"

    falkordb.stop()
    status, body = server.readyz()
    assert status == 503
    assert_shape(body)
    assert body["failing"] == ["falkordb", "schema"]
    assert "unreachable" in check(body, "falkordb")["detail"]
    assert check(body, "schema")["detail"] == "not checked: falkordb is not ready"
    assert server.get("/healthz") == (200, {"status": "alive"}), "liveness must not look at dependencies"
    down_probe = probe(server)
    assert down_probe.returncode == 1
    assert "falkordb" in json.loads(down_probe.stdout)["failing"]

    falkordb.start()
    assert wait_for(falkordb.ready)
    # The first answer once the database is back is already "ready": no stale connection is kept.
    status, body = server.readyz()
    assert status == 200, body
    assert server.process.poll() is None, "recovery must not need a restart"

    assert server.terminate() == 0, "SIGTERM must be a clean stop"
    events = [json.loads(line) for line in server.stderr().splitlines()]  # every stderr line is JSON
    names = [event["event"] for event in events]
    assert names.index("health.ready") < names.index("health.not_ready") < len(names) - 1
    assert "health.server.stopping" in names
    assert PASSWORD not in server.stderr()


def test_a_loading_database_is_not_ready_until_it_has_loaded(
    falkordb: FalkorDB, data_dir: Path, health_server: StartHealth
) -> None:
    falkordb.migrate()
    client = falkordb.client()
    for i in range(80):  # keys that each take key-load-delay to load: ~4 s of LOADING
        client.execute_command("GRAPH.QUERY", f"ballast{i}", "UNWIND range(1, 200) AS x CREATE (:B {v: x})")
    server: HealthServer = health_server(server_env(falkordb, data_dir))
    assert server.readyz()[0] == 200

    falkordb.stop()
    falkordb.start(key_load_delay_us=50_000)
    assert wait_for(falkordb.loading, timeout_s=10), "the database should be loading now"
    seen: list[dict[str, Any]] = []

    def reports_loading() -> bool:
        status, body = server.readyz()
        seen.append(body)
        return status == 503 and "is loading its dataset" in check(body, "falkordb")["detail"]

    assert wait_for(reports_loading, timeout_s=10), f"never reported loading: {seen[-3:]}"
    assert seen[-1]["failing"] == ["falkordb", "schema"]

    server.wait_status(200, timeout_s=60)
    assert not falkordb.loading()


def test_a_graph_behind_the_latest_schema_is_not_ready_until_migrated(
    falkordb: FalkorDB, data_dir: Path, health_server: StartHealth
) -> None:
    server: HealthServer = health_server(server_env(falkordb, data_dir, GRAPH_NAME="never_migrated"))
    status, body = server.readyz()
    assert status == 503
    assert body["failing"] == ["schema"]
    latest = expected_schema_version()
    assert check(body, "schema")["detail"].startswith(f"schema version 0, expected {latest}")

    falkordb.migrate("never_migrated")
    assert server.readyz()[0] == 200


def test_ollama_is_ready_with_both_models_and_names_a_missing_one(
    falkordb: FalkorDB, data_dir: Path, health_server: StartHealth
) -> None:
    falkordb.migrate()
    with FakeOllama(models=["nomic-embed-text", "llama3.1:8b"]) as ollama:
        env = server_env(falkordb, data_dir, ZAPOMNI_EMBEDDER="ollama", OLLAMA_HOST=ollama.url)
        server: HealthServer = health_server(env)
        status, body = server.readyz()
        assert status == 200, body
        assert [c["name"] for c in body["checks"]] == ["falkordb", "schema", "embedder", "ollama_models"]
        # The settings say "nomic-embed-text"; Ollama lists "nomic-embed-text:latest".
        assert check(body, "ollama_models")["detail"] == "has nomic-embed-text, llama3.1:8b"
        assert "ollama:nomic-embed-text" in check(body, "embedder")["detail"]
        probes = [r.body["input"] for r in ollama.embed_requests]
        assert ["search_query: zapomni readiness probe"] in probes, "the check must embed through the model"
        assert any(r.path == "/api/tags" for r in ollama.requests)

    with FakeOllama(models=["nomic-embed-text"]) as ollama:
        env = server_env(falkordb, data_dir, ZAPOMNI_EMBEDDER="ollama", OLLAMA_HOST=ollama.url)
        server = health_server(env)
        status, body = server.readyz()
        assert status == 503
        assert body["failing"] == ["ollama_models"]
        detail = check(body, "ollama_models")["detail"]
        assert "llama3.1:8b" in detail
        assert "nomic-embed-text" not in detail


def test_an_unreachable_redis_cache_is_not_ready(
    falkordb: FalkorDB, data_dir: Path, health_server: StartHealth
) -> None:
    falkordb.migrate()
    closed_port = free_port()
    url = f"redis://:cache-secret@127.0.0.1:{closed_port}/0"
    server: HealthServer = health_server(server_env(falkordb, data_dir, REDIS_URL=url))
    status, body = server.readyz()
    assert status == 503
    assert body["failing"] == ["redis"]
    detail = check(body, "redis")["detail"]
    assert f"127.0.0.1:{closed_port}" in detail
    assert "cache-secret" not in json.dumps(body)
    assert "cache-secret" not in server.stderr()


def test_a_taken_port_fails_at_once(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = child_env(ZAPOMNI_DATA_DIR=str(tmp_path), ZAPOMNI_HEALTH_PORT=str(port))
        result = subprocess.run([ZAPOMNI, "health-server"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert json.loads(result.stderr.splitlines()[-1])["event"] == "health.server.bind_failed"


# -- zapomni doctor ----------------------------------------------------------------------------


def doctor(env: dict[str, str], *args: str) -> tuple[int, str]:
    result = run_cli(["doctor", *args], env)
    return result.returncode, result.stdout


def test_doctor_exit_codes_and_json_shape(falkordb: FalkorDB, data_dir: Path, health_server: StartHealth) -> None:
    falkordb.migrate()
    env = server_env(falkordb, data_dir)

    code, output = doctor(env, "--json")
    assert code == 0, output
    body = json.loads(output)
    assert_shape(body)
    status, readyz = health_server(env).readyz()
    assert status == 200
    assert [c["name"] for c in body["checks"]] == [c["name"] for c in readyz["checks"]]
    code, table = doctor(env)
    assert code == 0
    assert "falkordb" in table and "schema version" in table and table.rstrip().endswith("ready")

    falkordb.stop()
    code, output = doctor(env, "--json")
    assert code == 1
    body = json.loads(output)
    assert_shape(body)
    assert body["status"] == "not_ready" and "falkordb" in body["failing"]

    # --wait: the database comes up while the doctor is waiting for it.
    waiting = subprocess.Popen(
        [ZAPOMNI, "doctor", "--json", "--wait", "60"], env=env, stdout=subprocess.PIPE, text=True
    )
    time.sleep(3)
    assert waiting.poll() is None, "the doctor must keep waiting while not ready"
    falkordb.start()
    output, _ = waiting.communicate(timeout=90)
    assert waiting.returncode == 0
    assert json.loads(output)["status"] == "ready"


# -- the checker in process --------------------------------------------------------------------


async def test_embedded_mode_observes_without_starting_a_database(data_dir: Path) -> None:
    settings = Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING")
    async with open_health_checker(settings) as checker:
        report = await checker.readiness()
        assert report.failing == ["falkordb", "schema"]
        assert "no server is running" in report.checks[0].detail
        assert not server_pids(data_dir), "the checker must never start the embedded database"
        assert not EmbeddedPaths(data_dir.resolve()).socket.exists()

        database = EmbeddedDatabase(data_dir, appendfsync="everysec")
        await asyncio.to_thread(database.open)
        try:
            async with graph_client(data_dir, settings.graph_name) as client:
                await migrate(client, SchemaSettings(dimension=384))
            report = await checker.readiness()
            assert report.ok, report
        finally:
            await asyncio.to_thread(database.close)
        report = await checker.readiness()
        assert "falkordb" in report.failing, "a stopped embedded database is noticed"


async def test_an_embedder_that_failed_to_build_is_rebuilt_by_a_later_check(data_dir: Path) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    settings = Settings.from_variables(
        ZAPOMNI_DATA_DIR=data_dir, ZAPOMNI_EMBEDDER="ollama", OLLAMA_HOST=closed, LOG_LEVEL="WARNING"
    )
    async with open_health_checker(settings) as checker:
        report = await checker.readiness()
    by_name = {c.name: c for c in report.checks}
    assert f"cannot reach Ollama at OLLAMA_HOST={closed}" in by_name["embedder"].detail
    assert by_name["ollama_models"].detail.startswith(f"Ollama at OLLAMA_HOST={closed}: unreachable")

    with FakeOllama(models=["nomic-embed-text", "llama3.1:8b"]) as ollama:
        ollama.fail_next(2)  # the build at start-up, then the rebuild by the first check
        settings = settings.model_copy(update={"ollama_host": ollama.url})
        async with open_health_checker(settings) as checker:
            first = {c.name: c for c in (await checker.readiness()).checks}
            second = {c.name: c for c in (await checker.readiness()).checks}
    assert first["embedder"].ok is False
    assert "answered HTTP 503" in first["embedder"].detail
    assert first["ollama_models"].ok is True
    assert second["embedder"].ok is True, second["embedder"].detail


async def test_a_database_that_never_answers_times_out_without_raising() -> None:
    with socket.socket() as silent:  # accepts connections, never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        target = DatabaseTarget(label="FalkorDB at silent", graph_name="g", port=silent.getsockname()[1])
        database = DatabaseProbe(target, timeout_s=0.5)
        try:
            result = await run_check("falkordb", lambda: check_falkordb(database), timeout_s=0.5)
        finally:
            await database.aclose()
    assert result.ok is False
    assert 500 <= result.latency_ms < 3000
    assert "0.5 s" in result.detail


def test_model_names_tolerate_the_implicit_latest_tag() -> None:
    available = ["nomic-embed-text:latest", "llama3.1:8b"]
    assert missing_models(["nomic-embed-text", "llama3.1:8b"], available) == []
    assert missing_models(["nomic-embed-text:latest"], ["nomic-embed-text"]) == []
    assert missing_models(["llama3.1"], available) == ["llama3.1"], "llama3.1 means llama3.1:latest, not :8b"


def test_details_never_carry_secrets_and_stay_one_short_line() -> None:
    detail = sanitise("auth failed for redis://:pw-123@host:6379\n  with pw-123\tagain" + "x" * 500, ["pw-123"])
    assert "pw-123" not in detail
    assert "\n" not in detail and "\t" not in detail
    assert len(detail) <= 300
