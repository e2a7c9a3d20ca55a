"""The embedded FalkorDB's life cycle: one server per data directory, shared, never orphaned, durable."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from falkordb import FalkorDB

from tests.helpers import logged_events, open_core, server_pids, wait_for
from tests.processes import run_zapomni, server_env
from zapomni_core import Settings
from zapomni_core.memories.requests import AddMemoryRequest, GetMemoryRequest, SearchRequest
from zapomni_db import _locks
from zapomni_db.embedded import EmbeddedDatabase
from zapomni_db.embedded_layout import EmbeddedPaths, ping
from zapomni_db.server import direct_client

HOLD_OPEN = """
import sys, time
from pathlib import Path
import structlog
structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
from zapomni_db.embedded import EmbeddedDatabase
db = EmbeddedDatabase(Path(sys.argv[1]))
db.open()
print("ready", flush=True)
time.sleep(3600)
"""


@pytest.fixture
def client_process(data_dir: Path) -> Iterator[Callable[[], subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def start() -> subprocess.Popen[str]:
        process = subprocess.Popen([sys.executable, "-c", HOLD_OPEN, str(data_dir)], stdout=subprocess.PIPE, text=True)
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()
        process.wait()
    wait_for(lambda: not server_pids(data_dir))


def write(socket: Path, key: str, value: str) -> None:
    FalkorDB(unix_socket_path=str(socket)).select_graph("t").query("CREATE (:N {k: $k, v: $v})", {"k": key, "v": value})


def read(socket: Path) -> dict[str, str]:
    rows = FalkorDB(unix_socket_path=str(socket)).select_graph("t").ro_query("MATCH (n:N) RETURN n.k, n.v").result_set
    return {k: v for k, v in rows}


def test_second_client_attaches_and_last_one_out_stops_the_server(data_dir: Path) -> None:
    first, second = EmbeddedDatabase(data_dir), EmbeddedDatabase(data_dir)
    first.open()
    second.open()
    assert first.started_here and not second.started_here
    assert first.socket == second.socket
    assert len(server_pids(data_dir)) == 1

    first.close()
    assert ping(second.socket), "the server must outlive a client while another is attached"
    second.close()
    assert not ping(second.socket)
    assert wait_for(lambda: not server_pids(data_dir))


def test_data_survives_a_restart(data_dir: Path) -> None:
    db = EmbeddedDatabase(data_dir)
    db.open()
    write(db.socket, "a", "1")
    db.close()
    db = EmbeddedDatabase(data_dir)
    db.open()
    assert db.started_here
    assert read(db.socket) == {"a": "1"}
    db.close()


def test_a_killed_client_leaves_the_server_to_the_others(
    data_dir: Path, client_process: Callable[[], subprocess.Popen[str]]
) -> None:
    victim = client_process()
    survivor = EmbeddedDatabase(data_dir)
    survivor.open()
    assert not survivor.started_here
    victim.kill()
    victim.wait()
    time.sleep(2)  # longer than the keeper's idle check: it must not stop a server still in use
    assert ping(survivor.socket)
    survivor.close()
    assert wait_for(lambda: not server_pids(data_dir))


def test_no_orphan_when_the_last_client_is_killed(
    data_dir: Path, client_process: Callable[[], subprocess.Popen[str]]
) -> None:
    only = client_process()
    paths = EmbeddedPaths(data_dir)
    write(paths.socket, "k", "v")
    only.kill()
    only.wait()
    assert wait_for(lambda: not server_pids(data_dir)), "the keeper must stop a server nobody uses"
    db = EmbeddedDatabase(data_dir)
    db.open()
    assert read(db.socket) == {"k": "v"}
    db.close()


def test_a_crashed_server_is_restarted_without_losing_acknowledged_writes(data_dir: Path) -> None:
    db = EmbeddedDatabase(data_dir)
    db.open()
    write(db.socket, "before", "crash")
    (pid,) = server_pids(data_dir)
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: ping(db.socket) and server_pids(data_dir) != [pid])
    assert read(db.socket) == {"before": "crash"}
    db.close()


def test_the_server_dies_with_a_killed_keeper_and_the_data_survives(data_dir: Path) -> None:
    db = EmbeddedDatabase(data_dir)
    db.open()
    write(db.socket, "keeper", "killed")
    keeper = int(EmbeddedPaths(data_dir).keeper_pid.read_text())
    os.kill(keeper, signal.SIGKILL)
    assert wait_for(lambda: not server_pids(data_dir)), "no orphan redis-server without its keeper"
    db.close()
    db = EmbeddedDatabase(data_dir)
    db.open()
    assert read(db.socket) == {"keeper": "killed"}
    db.close()


@pytest.mark.anyio
async def test_an_engine_whose_keeper_was_killed_starts_the_database_again_at_its_next_call(data_dir: Path) -> None:
    """Killed (the OOM killer, a stray `kill`), the keeper takes its server with it, and nobody would start another
    while the engine stays attached: its next call used to wait 15 s and fail. It starts one and is answered."""
    settings = Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING")
    async with open_core(settings) as (core, _info):
        kept = await core.memories.add(AddMemoryRequest(text="The lighthouse keeper logs the tide at dawn."))
        keeper = int(EmbeddedPaths(data_dir).keeper_pid.read_text())
        os.kill(keeper, signal.SIGKILL)
        assert wait_for(lambda: not server_pids(data_dir)), "the server goes with its keeper"
        with logged_events() as events:
            found = await core.memories.search(SearchRequest(query="when is the tide logged"))
            added = await core.memories.add(AddMemoryRequest(text="The fog horn sounds every thirty seconds."))
        assert [hit.memory_id for hit in found.results][:1] == [kept.memory_id]
        assert (await core.memories.get(GetMemoryRequest(memory_id=added.memory_id))).memory_id == added.memory_id
        assert [e["event"] for e in events if e["event"].startswith("db.embedded.")] == [
            "db.embedded.keeper_gone",
            "db.embedded.revived",
        ]
        assert int(EmbeddedPaths(data_dir).keeper_pid.read_text()) != keeper
        assert len(server_pids(data_dir)) == 1
    assert wait_for(lambda: not server_pids(data_dir)), "the last client out stops the server it started again"


def test_a_long_data_dir_gets_a_short_socket_path(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    paths = EmbeddedPaths(deep)
    assert len(str(paths.socket)) <= 100
    assert paths.socket != EmbeddedPaths(tmp_path / "other").socket


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_data_dir_is_private_to_its_user(data_dir: Path) -> None:
    fresh = data_dir / "home" / "zapomni"  # its parent does not exist either
    umask = os.umask(0o022)  # the usual umask, which would leave a plain mkdir world-readable (0755)
    try:
        db = EmbeddedDatabase(fresh)
        db.open()
        write(db.socket, "k", "v")
        db.close()
    finally:
        os.umask(umask)
    assert {str(path.relative_to(fresh)): mode(path) for path in (fresh, fresh / "db", fresh / "run")} == {
        ".": 0o700,
        "db": 0o700,
        "run": 0o700,
    }


def test_an_existing_data_dir_keeps_the_mode_its_user_gave_it(data_dir: Path) -> None:
    data_dir.chmod(0o750)
    EmbeddedPaths(data_dir).create()
    assert mode(data_dir) == 0o750
    assert mode(data_dir / "db") == mode(data_dir / "run") == mode(data_dir / "run" / "clients") == 0o700


def test_the_server_logs_every_write_and_compacts_its_log_as_decided(data_dir: Path) -> None:
    # Crash safety (decision 0007) and the AOF rewrite policy (decision 0029), as the running server has them.
    database = EmbeddedDatabase(data_dir)
    database.open()
    client = direct_client(unix_socket=database.socket)
    try:
        found = client.config_get("appendonly", "appendfsync", "auto-aof-rewrite-*", "aof-use-rdb-preamble")
    finally:
        client.close()
        database.close()
    assert found == {
        "appendonly": "yes",
        "appendfsync": "always",
        "auto-aof-rewrite-percentage": "100",
        "auto-aof-rewrite-min-size": str(64 * 2**20),
        "aof-use-rdb-preamble": "yes",
    }


def test_the_last_client_out_lets_a_running_aof_rewrite_finish(data_dir: Path) -> None:
    # A server stopped while it rewrites its AOF kills the rewrite: the next start then replays every write since
    # the previous rewrite and FalkorDB must rebuild its vector index (docs/decisions/0007, 0029). At 100K chunks
    # a rewrite takes ~5 s, longer than a closing writer waits for it; the keeper lets it finish first.
    database = EmbeddedDatabase(data_dir)
    database.open()
    for i in range(20):
        write(database.socket, f"k{i}", "v" * 100)
    client = direct_client(unix_socket=database.socket)
    client.config_set("rdb-key-save-delay", 3_000_000)  # µs a key: the rewriting child sleeps, as a big store's would
    client.bgrewriteaof()
    assert wait_for(lambda: int(client.info("persistence")["aof_rewrite_in_progress"]) == 1, timeout_s=10)
    client.config_set("rdb-key-save-delay", 0)  # the child keeps its copy; the shutdown's own save is not slowed
    assert int(client.info("persistence")["aof_rewrite_in_progress"]) == 1
    client.close()
    database.close()
    aof = EmbeddedPaths(data_dir).db_dir / "appendonlydir"
    listed = [dict(zip(line.split()[::2], line.split()[1::2], strict=False)) for line in
              (aof / "appendonly.aof.manifest").read_text().splitlines()]  # fmt: skip
    tails = [aof / entry["file"] for entry in listed if entry.get("type") == "i"]
    replayed = [tail.name for tail in tails if b"GRAPH." in tail.read_bytes()]
    assert tails and not replayed, f"the next start would replay logged writes from {replayed}"
    assert read_back(data_dir) == 20


def read_back(data_dir: Path) -> int:
    database = EmbeddedDatabase(data_dir)
    database.open()
    try:
        return len(read(database.socket))
    finally:
        database.close()


def test_a_command_stuck_behind_the_startup_lock_fails_its_test_with_its_stacks(tmp_path: Path) -> None:
    # What `run_zapomni` shows when a command hangs (a CI run once lost 300 s to one and learnt nothing).
    paths = EmbeddedPaths(tmp_path)
    paths.create()
    # Held here: the command waits for it (up to 120 s).
    with _locks.exclusive(paths.startup_lock, timeout_s=1), pytest.raises(AssertionError) as failed:
        run_zapomni(["migrate", "status"], server_env(tmp_path), timeout_s=5)
    told = str(failed.value)
    assert "did not finish in 5 s" in told and "Current thread" in told and "_locks.py" in told
