"""Protocol-facing pieces: tool schemas and replies to unreadable stdin lines."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from zapomni_core.memories.replies import SearchResult
from zapomni_core.memories.requests import AddMemoryRequest, SearchRequest
from zapomni_mcp.registry import json_schema
from zapomni_mcp.transport import error_for_unreadable


def _refs(node: Any) -> int:
    if isinstance(node, dict):
        return int("$ref" in node) + sum(_refs(v) for v in node.values())
    if isinstance(node, list):
        return sum(_refs(v) for v in node)
    return 0


@pytest.mark.parametrize("model", [AddMemoryRequest, SearchRequest, SearchResult])
def test_schemas_are_self_contained(model: Any) -> None:
    schema = json_schema(model)
    assert schema["type"] == "object"
    assert _refs(schema) == 0 and "$defs" not in schema


def test_input_schemas_forbid_unknown_properties() -> None:
    add = json_schema(AddMemoryRequest)
    assert add["additionalProperties"] is False
    assert add["required"] == ["text"]
    metadata = next(s for s in add["properties"]["metadata"]["anyOf"] if s.get("type") == "object")
    # Extra metadata keys are allowed, but only flat values.
    allowed = {entry["type"] for entry in metadata["additionalProperties"]["anyOf"]}
    assert allowed == {"string", "integer", "number", "boolean"}
    search = json_schema(SearchRequest)
    assert search["additionalProperties"] is False
    assert search["properties"]["limit"]["maximum"] == 100


def _unreadable(line: str) -> Exception:
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:  # the same exception the SDK's stdio reader produces
        return exc
    raise AssertionError("line was readable")


def test_invalid_json_gets_a_parse_error_with_null_id() -> None:
    reply = error_for_unreadable(_unreadable("{not json"))
    assert reply is not None
    assert (reply.id, reply.error.code) == (None, types.PARSE_ERROR)


def test_a_blank_line_gets_no_reply() -> None:
    assert error_for_unreadable(_unreadable("\n")) is None


def test_a_non_message_gets_invalid_request_keeping_its_id() -> None:
    reply = error_for_unreadable(_unreadable('{"id": 7, "params": {}}'))
    assert reply is not None
    assert (reply.id, reply.error.code) == (7, types.INVALID_REQUEST)
    batch = error_for_unreadable(_unreadable("[1, 2]"))
    assert batch is not None and batch.id is None and batch.error.code == types.INVALID_REQUEST
