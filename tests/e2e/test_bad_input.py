"""Bad input a process meets: raw protocol errors with stdout kept clean, a dead database, a damaged record; the
server answers clearly and keeps serving. Bad tool arguments are refused in process (tests/tools/test_bad_calls.py)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from tests.helpers import graph_client, server_pids, text_of, wait_for
from tests.processes import RawServer, call, mcp_session
from zapomni_db.embedded_layout import EmbeddedPaths

pytestmark = pytest.mark.anyio


def test_raw_protocol_errors_are_answered_and_stdout_stays_clean(raw_server: Any) -> None:
    server: RawServer = raw_server()
    before_init = server.request(0, "tools/list")
    assert before_init["id"] == 0 and "error" in before_init

    server.send_line("{this is not json")
    parse_error = server.receive()
    assert parse_error == {"jsonrpc": "2.0", "id": None, "error": parse_error["error"]}
    assert parse_error["error"]["code"] == types.PARSE_ERROR

    server.send_line('{"jsonrpc": "2.0", "id": 9, "params": {}}')
    invalid = server.receive()
    assert (invalid["id"], invalid["error"]["code"]) == (9, types.INVALID_REQUEST)

    assert "result" in server.initialize()
    unknown_method = server.request(3, "memories/forget")
    assert unknown_method["error"]["code"] == types.METHOD_NOT_FOUND
    unknown_tool = server.request(4, "tools/call", {"name": "nope", "arguments": {}})
    assert unknown_tool["error"]["code"] == types.INVALID_PARAMS
    bad_args = server.request(5, "tools/call", {"name": "add_memory", "arguments": {"text": 5}})
    assert bad_args["result"]["isError"] is True
    stats = server.request(6, "tools/call", {"name": "get_stats", "arguments": {}})
    assert stats["result"]["structuredContent"]["total_memories"] == 0
    assert server.request(7, "ping") == {"jsonrpc": "2.0", "id": 7, "result": {}}

    server.close_stdin()
    assert server.wait() == 0
    for line in server.stdout_lines:  # nothing but JSON-RPC ever reached stdout
        assert line.endswith("\n")
        assert json.loads(line)["jsonrpc"] == "2.0"


async def test_a_dead_database_gets_a_clear_retriable_answer_and_the_server_keeps_serving(
    data_dir: Path, tmp_path: Path
) -> None:
    stderr = tmp_path / "server.log"
    with stderr.open("w") as errlog:
        # It waits 2 s for the database to come back, not the default 15 (the answer is what is tested here).
        async with mcp_session(data_dir, errlog=errlog, ZAPOMNI_DB_RECOVERY_S="2") as session:
            await call(session, "add_memory", {"text": "Stored before the database went away."})
            # Take the database away for real: its keeper hangs (alive, so nobody else starts one) and redis-server
            # is killed under it. (A keeper that dies is replaced at the next call: tests/integration/
            # test_embedded_db.py.)
            keeper = int(EmbeddedPaths(data_dir).keeper_pid.read_text())
            os.kill(keeper, signal.SIGSTOP)
            try:
                for pid in server_pids(data_dir):
                    os.kill(pid, signal.SIGKILL)
                assert wait_for(lambda: not server_pids(data_dir))

                result = await session.call_tool("search_memory", {"query": "anything"})
                assert result.is_error
                text = text_of(result)
                assert text.startswith("The database is not answering right now") and "Retry" in text
                assert str(data_dir) not in text and "Traceback" not in text and "sock" not in text
                # Still serving: the protocol answers, tools answer (with the same clear error).
                assert len((await session.list_tools()).tools) == 22
                assert (await session.call_tool("get_stats", {})).is_error
            finally:
                os.kill(keeper, signal.SIGCONT)  # it restarts its server, and stops it once the session ends
    refusals = [json.loads(line) for line in stderr.read_text().splitlines() if '"tool.refused"' in line]
    assert refusals and refusals[0]["tool"] == "search_memory"
    assert refusals[0]["error"] == "StorageUnavailable" and refusals[0]["cause"]  # the log keeps the driver's words


async def test_an_internal_failure_is_sanitised_and_the_server_keeps_serving(data_dir: Path, tmp_path: Path) -> None:
    stderr = tmp_path / "server.log"
    with stderr.open("w") as errlog:
        async with mcp_session(data_dir, errlog=errlog) as session:
            added = await call(session, "add_memory", {"text": "A record that gets damaged on disk."})
            healthy = await call(session, "add_memory", {"text": "A record that stays healthy."})
            # Damage one record behind the server's back: its metadata is no longer JSON.
            async with graph_client(data_dir) as graph:
                await graph.query("MATCH (m:Memory {id: $id}) SET m.metadata = '{not json'", {"id": added["memory_id"]})

            result = await session.call_tool("get_memory", {"memory_id": added["memory_id"]})
            assert result.is_error
            text = text_of(result)
            assert text.startswith("Internal error while running get_memory (request ")
            assert str(data_dir) not in text and "Traceback" not in text and "JSONDecodeError" not in text
            # Still serving: the healthy record reads fine.
            assert (await call(session, "get_memory", {"memory_id": healthy["memory_id"]}))["text"].endswith("healthy.")
    failures = [json.loads(line) for line in stderr.read_text().splitlines() if '"tool.failed"' in line]
    assert failures and failures[0]["tool"] == "get_memory"
    assert failures[0]["request_id"] in text
    assert "JSONDecodeError" in failures[0]["exception"]
