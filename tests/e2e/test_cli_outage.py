"""A database that is down, or that answers with errors, while a CLI command runs: one clear line, never a trace.

Server mode against a real FalkorDB process. "Down": the server is stopped after the store was
filled. "Answering errors": one workspace's graph key is overwritten with a string, so every
query on it fails inside the database (WRONGTYPE) while the rest of the store works — the read
paths that used to let the database's error through.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.cli_in_process import run_cli
from tests.processes import FalkorDB, child_env

GRAPH = "outage"
MEMORY_ID = "00000000-0000-4000-8000-000000000000"  # well-formed: the command gets as far as the database
READ_COMMANDS = [
    ["search", "kingfisher"],
    ["list"],
    ["get", MEMORY_ID],
    ["stats"],
    ["jobs"],
    ["symbol", "main"],
    ["callers", "main"],
]
WRITE_COMMANDS = [
    ["add", "a kingfisher on the weir"],
    ["update", MEMORY_ID, "--tag", "bird"],
    ["delete", MEMORY_ID],
]


@pytest.fixture
def falkordb(tmp_path: Path) -> Iterator[FalkorDB]:
    server = FalkorDB(tmp_path, log_file=tmp_path / "server.log")
    server.start()
    yield server
    server.kill()


def zapomni(port: int, *args: str) -> subprocess.CompletedProcess[str]:
    env = child_env(ZAPOMNI_DB_MODE="server", FALKORDB_HOST="127.0.0.1", FALKORDB_PORT=str(port), GRAPH_NAME=GRAPH)
    return run_cli(args, env)


def assert_one_line(result: subprocess.CompletedProcess[str], command: str, says: str) -> None:
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"zapomni {command}: "), lines[0]
    assert says in lines[0], lines[0]
    assert "Traceback" not in result.stderr and "redis" not in result.stderr.lower()


def test_every_command_says_in_one_line_that_the_database_is_down(falkordb: FalkorDB) -> None:
    port = falkordb.port
    added = zapomni(port, "add", "the heron nests by the mill")
    assert added.returncode == 0, added.stderr
    falkordb.kill()
    # One command per service the CLI reaches (each start costs seconds): memories read and write, stats,
    # jobs, workspaces, export. They all meet the outage at the same place, opening the core.
    for args in [
        ["search", "kingfisher"],
        ["add", "a kingfisher on the weir"],
        ["stats"],
        ["jobs"],
        ["workspaces"],
        ["export"],
    ]:
        command = {"search": "search_memory", "list": "list_memories", "get": "get_memory", "stats": "get_stats",
                   "jobs": "list_jobs", "symbol": "find_symbol", "callers": "get_callers", "add": "add_memory",
                   "update": "update_memory", "delete": "delete_memory", "workspaces": "list_workspaces",
                   "export": "export"}[args[0]]  # fmt: skip
        result = zapomni(port, *args)
        assert result.returncode == 1, (args, result.stderr)
        assert "Traceback" not in result.stderr, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "127.0.0.1" in lines[0], (args, result.stderr)
        assert lines[0].startswith(("zapomni ", f"zapomni {command}")), lines[0]


def test_a_database_that_answers_errors_mid_command_is_one_line(falkordb: FalkorDB) -> None:
    port = falkordb.port
    for workspace in ("default", "falcon"):
        added = zapomni(port, "add", f"a kingfisher on the weir ({workspace})", "--workspace", workspace)
        assert added.returncode == 0, added.stderr
    # The falcon workspace's graph becomes a plain string: FalkorDB refuses every graph command on it.
    redis.Redis(port=port).set(_graph_key(port, "falcon"), "not a graph")
    for args in READ_COMMANDS + WRITE_COMMANDS:
        result = zapomni(port, *args, "--workspace", "falcon")
        assert result.returncode == 1, (args, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, (args, result.stderr)
        assert "Traceback" not in result.stderr and "WRONGTYPE" not in result.stderr, (args, result.stderr)
        assert "database" in lines[0].lower(), (args, lines[0])
    # The rest of the store is untouched and still answers.
    found = zapomni(port, "search", "kingfisher", "--json")
    assert found.returncode == 0, found.stderr
    assert "(default)" in found.stdout


def _graph_key(port: int, workspace: str) -> str:
    keys = [k.decode() for k in redis.Redis(port=port).keys(f"{GRAPH}*")]  # type: ignore[union-attr]  # bytes: no decode_responses
    matching = [k for k in keys if k != GRAPH and k.endswith(workspace)]
    assert len(matching) == 1, keys
    return matching[0]
