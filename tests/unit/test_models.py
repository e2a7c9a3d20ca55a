"""Request validation: every documented constraint is enforced, with the field named."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from zapomni_core.memories.requests import MAX_TEXT_BYTES, AddMemoryRequest, SearchRequest
from zapomni_mcp.errors import describe_validation_error


def add_error(arguments: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        AddMemoryRequest.model_validate(arguments)
    return describe_validation_error("add_memory", AddMemoryRequest, caught.value)


def search_error(arguments: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        SearchRequest.model_validate(arguments)
    return describe_validation_error("search_memory", SearchRequest, caught.value)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"text": ""}, "- text: string should have at least 1 character"),
        ({"text": " \n\t "}, "- text: must contain something other than whitespace"),
        ({"text": "\u200b\u200b\ufeff"}, "- text: must contain something other than whitespace and invisible"),
        ({"text": " \u2060\u200d\x07 "}, "- text: must contain something other than whitespace and invisible"),
        ({"text": 42}, "- text: input should be a valid string"),
        ({}, "- text: is required"),
        ({"text": "a", "title": "x"}, "- title: unknown argument; allowed: workspace, text, metadata"),
        (
            {"text": "a", "metadata": {"project": {"name": "x"}}},
            "- metadata.project: must be a string, number or boolean",
        ),
        ({"text": "a", "metadata": {"tags": "one"}}, "- metadata.tags: input should be a valid list"),
        (
            {"text": "a", "metadata": {"tags": [""]}},
            "- metadata.tags.0: string should have at least 1 character",
        ),
        ({"text": "a", "metadata": {"date": "yesterday"}}, "- metadata.date: must be an ISO 8601 date"),
        ({"text": "a", "metadata": {"blob": "x" * 11_000}}, "- metadata: must be at most 10240 bytes"),
    ],
)
def test_add_memory_rejections_name_the_field(arguments: dict[str, Any], expected: str) -> None:
    message = add_error(arguments)
    assert expected in message
    assert message.startswith("Invalid arguments for add_memory:")
    # Every scoped request takes an optional workspace (issue 9).
    allowed = "workspace (optional), text (required), metadata (optional), replaces (optional)"
    assert f"Allowed arguments: {allowed}." in message


def test_text_limit_is_ten_megabytes_of_utf8() -> None:
    assert AddMemoryRequest(text="a" * MAX_TEXT_BYTES).text
    assert "- text: must be at most 10485760 bytes" in add_error({"text": "a" * (MAX_TEXT_BYTES + 1)})
    # Fewer characters than the limit, more bytes: the byte count is what counts.
    assert "bytes" in add_error({"text": "é" * (MAX_TEXT_BYTES // 2 + 1)})


def test_metadata_keeps_flat_extras_and_normalises_the_date() -> None:
    request = AddMemoryRequest.model_validate(
        {
            "text": "a",
            "metadata": {"tags": ["x"], "date": "2024-05-01", "priority": 2, "done": False, "who": "me"},
        }
    )
    assert request.metadata is not None
    assert request.metadata.date == "2024-05-01T00:00:00+00:00"
    assert request.metadata.extra() == {"priority": 2, "done": False, "who": "me"}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"query": "x", "limit": 0}, "- limit: input should be greater than or equal to 1"),
        ({"query": "x", "limit": 101}, "- limit: input should be less than or equal to 100"),
        ({"query": "x", "limit": "5"}, "- limit: input should be a valid integer"),
        ({"query": "x", "limit": True}, "- limit: input should be a valid integer"),
        ({"query": "x" * 1001}, "- query: string should have at most 1000 characters"),
        ({"query": "   "}, "- query: must contain something other than whitespace"),
        ({"query": "\u200b\ufeff"}, "- query: must contain something other than whitespace and invisible"),
        ({"query": "x", "filters": {"date_from": "2024-02-30"}}, "- filters.date_from: must be an ISO 8601"),
        # The keys a filter may have, not the request's own arguments.
        (
            {"query": "x", "filters": {"colour": "red"}},
            "- filters.colour: unknown argument; allowed: tags, source, date_from, date_to, kind, thread, speaker, "
            "current_only\n",
        ),
        (
            {"query": "x", "filters": {"date_from": "2024-05-02", "date_to": "2024-05-01"}},
            "date_from must not be later than date_to",
        ),
    ],
)
def test_search_rejections_name_the_field(arguments: dict[str, Any], expected: str) -> None:
    assert expected in search_error(arguments)


def test_search_accepts_the_boundaries() -> None:
    assert SearchRequest(query="x" * 1000, limit=100).limit == 100
    assert SearchRequest(query="x", limit=1).limit == 1
    assert SearchRequest(query="x").limit == 10


def test_a_date_only_upper_bound_includes_the_whole_day() -> None:
    request = SearchRequest.model_validate(
        {"query": "x", "filters": {"date_from": "2024-05-01", "date_to": "2024-05-01"}}
    )
    assert request.filters is not None
    assert request.filters.date_from == "2024-05-01T00:00:00+00:00"
    assert request.filters.date_to == "2024-05-01T23:59:59.999999+00:00"
