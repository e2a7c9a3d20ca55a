"""JSON-RPC edge cases sent as raw lines to a real `zapomni serve`: each gets the answer the spec asks for.

The official client never sends these, so the server is driven line by line (tests/processes.RawServer). One
initialised server takes the module's edge cases one after another, as a client's would reach it; each test checks
that it still serves after its own. The handshake and the whole of stdout get servers of their own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from tests.processes import RawServer


@pytest.fixture(scope="module")
def shared_server(store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    started = RawServer(store, tmp_path_factory.mktemp("jsonrpc") / "stderr.log")
    try:
        started.initialize()
        yield started
    finally:
        started.kill()


@pytest.fixture
def server(shared_server: RawServer) -> RawServer:
    """The module's server, with whatever an earlier test left unread skipped: a failure does not spill over."""
    shared_server.skip_unread()
    return shared_server


def still_serving(server: RawServer, request_id: int) -> None:
    assert server.request(request_id, "ping") == {"jsonrpc": "2.0", "id": request_id, "result": {}}


def memories(server: RawServer, request_id: int) -> int:
    stats = server.request(request_id, "tools/call", {"name": "get_stats", "arguments": {}})
    count: int = stats["result"]["structuredContent"]["total_memories"]
    return count


def test_an_id_that_is_no_string_or_integer_gets_invalid_request_with_a_null_id(server: RawServer) -> None:
    for position, bad_id in enumerate([{"a": 1}, [1], None, 1.5, True]):
        server.send({"jsonrpc": "2.0", "id": bad_id, "method": "ping"})
        reply = server.receive()
        assert (reply["id"], reply["error"]["code"]) == (None, types.INVALID_REQUEST), (bad_id, reply)
        assert "id must be a string or an integer" in reply["error"]["message"]
        still_serving(server, 100 + position)


def test_json_nested_too_deep_is_answered_as_such_with_its_id(server: RawServer) -> None:
    deep = "[" * 500 + "]" * 500
    server.send_line(f'{{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {{"x": {deep}}}}}')
    reply = server.receive()
    assert (reply["id"], reply["error"]["code"]) == (7, types.PARSE_ERROR), reply
    assert "nested too deeply" in reply["error"]["message"]
    # So deep that no JSON reader here parses it: the id is still found, before or after the nesting.
    server.send_line('{"jsonrpc": "2.0", "id": 8, "params": ' + "[" * 100_000 + "]" * 100_000 + "}")
    reply = server.receive()
    assert (reply["id"], reply["error"]["code"]) == (8, types.PARSE_ERROR), reply
    assert "nested too deeply" in reply["error"]["message"]
    server.send_line('{"jsonrpc": "2.0", "params": {"id": "inner", "x": ' + "[" * 1_000 + "]" * 1_000 + '}, "id": 9}')
    assert server.receive()["id"] == 9  # the top level's id, not one nested inside
    still_serving(server, 10)


def test_bytes_that_are_not_utf8_are_refused_naming_the_offset_and_nothing_is_stored(server: RawServer) -> None:
    line = b'{"jsonrpc": "2.0", "id": 21, "method": "tools/call", "params": {"name": "add_memory", '
    before = memories(server, 20)
    server.send_bytes(line + b'"arguments": {"text": "caf\xe9 au lait"}}}')
    reply = server.receive()
    assert (reply["id"], reply["error"]["code"]) == (21, types.PARSE_ERROR), reply
    assert f"byte offset {len(line) + 26}" in reply["error"]["message"]
    assert memories(server, 22) == before  # nothing was stored


def test_a_tool_call_without_params_or_with_arguments_not_an_object_says_what_is_wrong(server: RawServer) -> None:
    cases: dict[int, tuple[Any, str]] = {
        31: (None, "tools/call needs params"),
        32: ({"name": "get_stats", "arguments": [1]}, "params.arguments must be an object"),
        33: ({"arguments": {}}, "params.name must be the name of a tool"),
    }
    for request_id, (params, said) in cases.items():
        reply = server.request(request_id, "tools/call", params)
        assert (reply["id"], reply["error"]["code"]) == (request_id, types.INVALID_PARAMS), reply
        assert said in reply["error"]["message"], reply
    still_serving(server, 34)


def test_a_lone_surrogate_is_refused_with_the_requests_id(server: RawServer) -> None:
    before = memories(server, 10)
    params = '{"name": "add_memory", "arguments": {"text": "half a pair: \\ud800"}}'
    server.send_line(f'{{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {params}}}')
    reply = server.receive()
    assert (reply["id"], reply["error"]["code"]) == (11, types.PARSE_ERROR), reply
    assert "lone surrogate" in reply["error"]["message"]
    assert memories(server, 12) == before  # nothing was stored


def test_numbers_the_database_cannot_give_back_are_refused_naming_the_field(server: RawServer) -> None:
    before = memories(server, 19)
    # Python's and pydantic's JSON readers take NaN and Infinity; 2**64 is valid JSON but no 64-bit integer.
    for request_id, (key, raw) in enumerate(
        [("score", "NaN"), ("score", "Infinity"), ("score", "-Infinity"), ("count", str(2**64))], start=20
    ):
        params = f'{{"name": "add_memory", "arguments": {{"text": "a number", "metadata": {{"{key}": {raw}}}}}}}'
        server.send_line(f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": {params}}}')
        reply = server.receive()
        assert reply["id"] == request_id and reply["result"]["isError"], reply
        message = reply["result"]["content"][0]["text"]
        assert f"- metadata.{key}: must be " in message and ("finite" in message or "64-bit" in message), message
    assert memories(server, 30) == before  # nothing was stored
    edge = server.request(
        31, "tools/call", {"name": "add_memory", "arguments": {"text": "n", "metadata": {"n": 2**63 - 1}}}
    )
    assert not edge["result"].get("isError"), edge  # the largest 64-bit integer is stored


def test_initialize_answers_a_version_it_speaks_and_only_once(raw_server: Any) -> None:
    server: RawServer = raw_server()
    first = server.request(
        1,
        "initialize",
        {"protocolVersion": "1900-01-01", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    )
    # The spec's answer to a version the server does not speak: the latest one it does (the client may then leave).
    assert first["result"]["protocolVersion"] == LATEST_HANDSHAKE_VERSION
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for request_id, version in ((2, "1900-01-01"), (3, HANDSHAKE_PROTOCOL_VERSIONS[0])):
        again = server.request(
            request_id,
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
        )
        assert (again["id"], again["error"]["code"]) == (request_id, types.INVALID_REQUEST), again
        assert "already initialized" in again["error"]["message"]
    still_serving(server, 4)
    tools = server.request(5, "tools/list")
    assert len(tools["result"]["tools"]) == 22


def test_stdout_carries_only_json_rpc_after_the_edge_cases(raw_server: Any) -> None:
    server: RawServer = raw_server()
    server.initialize()
    server.send({"jsonrpc": "2.0", "id": {"nested": {"deeper": [1]}}, "method": "tools/list"})
    assert server.receive()["id"] is None
    server.send_line('{"jsonrpc": "2.0", "id": "s", "method": "ping", "params": {"\\udfff": 1}}')
    assert server.receive()["id"] == "s"
    still_serving(server, 1)
    server.close_stdin()
    assert server.wait() == 0
    for line in server.stdout_lines:
        assert json.loads(line)["jsonrpc"] == "2.0"
