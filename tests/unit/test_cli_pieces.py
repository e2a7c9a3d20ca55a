"""The command line's pieces without a database: flag-named errors, text input, 80-column tables."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from zapomni_cli import render
from zapomni_cli.errors import CliError, describe_engine_error, validate
from zapomni_cli.inputs import read_text
from zapomni_cli.main import build_parser, log_level
from zapomni_core import Settings
from zapomni_core.models import (
    AddMemoryRequest,
    DeleteWorkspaceRequest,
    ListMemoriesRequest,
    MemoryPage,
    MemorySummary,
    SearchHit,
    SearchRequest,
    SearchResult,
    Stats,
    UpdateMemoryRequest,
    WorkspaceInfo,
    WorkspaceList,
)

MEMORY_ID = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


def refusal(model: type, data: dict[str, Any], labels: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(CliError) as caught:
        validate(model, data, labels)
    assert caught.value.code == 2
    return str(caught.value).splitlines()


# -- errors name the flags ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "data", "expected"),
    [
        (AddMemoryRequest, {"text": "a", "metadata": {"tags": ["ok", ""]}}, "--tag: must not be empty"),
        (AddMemoryRequest, {"text": "a", "metadata": {"tags": ["x" * 101]}}, "--tag: must be at most 100 characters"),
        (AddMemoryRequest, {"text": "a", "metadata": {"source": ""}}, "--source: must not be empty"),
        (AddMemoryRequest, {"text": "a", "metadata": {"date": "soon"}}, "--date: must be an ISO 8601 date"),
        (AddMemoryRequest, {"text": "   "}, "TEXT: must contain something other than whitespace"),
        (AddMemoryRequest, {"text": "a", "workspace": "Bad!"}, "--workspace: must be 1-63 lowercase letters"),
        (SearchRequest, {"query": "q", "limit": 0}, "--limit: must be at least 1 (got 0)"),
        (SearchRequest, {"query": "q", "min_score": 2.0}, "--min-score: must be at most 1.0 (got 2.0)"),
        (SearchRequest, {"query": "q", "filters": {"date_from": "May"}}, "--date-from: must be an ISO 8601 date"),
        (
            SearchRequest,
            {"query": "q", "filters": {"date_from": "2024-05-02", "date_to": "2024-05-01"}},
            "--date-from must not be later than --date-to",
        ),
        (ListMemoriesRequest, {"limit": 101}, "--limit: must be at most 100 (got 101)"),
        (UpdateMemoryRequest, {"memory_id": "nope", "text": "a"}, "ID: not a memory id (got 'nope')"),
        (DeleteWorkspaceRequest, {"name": "w", "confirm": "x"}, "--confirm must repeat the workspace name exactly"),
    ],
)
def test_validation_errors_name_the_flag(model: type, data: dict[str, Any], expected: str) -> None:
    lines = refusal(model, data)
    assert any(line.startswith(expected) for line in lines), lines
    assert not any(re.search(r"metadata\.|filters\.|[a-z]\.\d", line) for line in lines), lines


def test_the_text_is_named_by_where_it_came_from() -> None:
    assert refusal(AddMemoryRequest, {"text": ""}, {"text": "--file empty.txt"}) == [
        "--file empty.txt: must not be empty"
    ]


def test_engine_errors_name_the_flag() -> None:
    assert describe_engine_error("cursor: not a cursor this server made") == "--cursor: not a cursor this server made"
    assert (
        describe_engine_error("memory_id: no memory x in workspace 'default'") == "no memory x in workspace 'default'"
    )
    assert describe_engine_error("text: memory x already holds this text", {"text": "--file a.txt"}) == (
        "--file a.txt: memory x already holds this text"
    )


# -- text input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        ("dir", "is a directory"),
        (b"text\x00more", "not a text file (it contains NUL bytes)"),
        (b"caf\xe9", "not UTF-8 text (undecodable byte at offset 3)"),
    ],
)
def test_unusable_files_are_refused_in_one_line(tmp_path: Path, content: bytes | str | None, expected: str) -> None:
    path = tmp_path / "input"
    if content == "dir":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    with pytest.raises(CliError) as caught:
        read_text(None, path)
    assert str(caught.value) == f"--file {path}: {expected}" or expected in str(caught.value)
    assert "\n" not in str(caught.value) and caught.value.code == 2


def test_text_and_file_together_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("notes")
    with pytest.raises(CliError, match="not both"):
        read_text("typed", path)
    assert read_text(None, path).value == "notes"  # type: ignore[union-attr]
    path.write_bytes(b"\xef\xbb\xbfwith a byte-order mark")
    assert read_text(None, path).value == "with a byte-order mark"  # type: ignore[union-attr]


# -- the parser and the log level ----------------------------------------------------------------


def test_every_tool_has_a_subcommand_and_an_alias() -> None:
    parser = build_parser()
    for name, alias in [
        ("add_memory", "add"),
        ("search_memory", "search"),
        ("get_memory", "get"),
        ("list_memories", "list"),
        ("update_memory", "update"),
        ("delete_memory", "delete"),
        ("get_stats", "stats"),
        ("list_workspaces", "workspaces"),
    ]:
        args = parser.parse_args([alias, *(["x"] if alias in {"add", "search", "get", "update"} else [])])
        assert args.memory_command.name == name
    assert parser.parse_args(["delete_workspace", "w", "--confirm", "w"]).memory_command.name == "delete_workspace"
    assert parser.parse_args(["stats", "--verbose"]).verbose is True
    assert parser.parse_args(["--verbose", "stats"]).verbose is True
    assert parser.parse_args(["doctor", "-v"]).verbose is True


def test_log_levels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOG_LEVEL", raising=False)
    parser, settings = build_parser(), Settings()
    assert log_level(parser.parse_args(["stats"]), settings) == "ERROR"
    assert log_level(parser.parse_args(["stats", "--verbose"]), settings) == "INFO"
    assert log_level(parser.parse_args(["backup"]), settings) == "WARNING"
    assert log_level(parser.parse_args(["serve"]), settings) == "INFO"
    monkeypatch.setenv("LOG_LEVEL", "debug")
    assert log_level(parser.parse_args(["stats"]), Settings()) == "DEBUG"


# -- tables at 80 columns ----------------------------------------------------------------------


def printed(result: Any, width: int = 80) -> list[str]:
    out = Console(file=io.StringIO(), width=width, highlight=False, emoji=False)
    render.render(result, out)
    return out.file.getvalue().splitlines()  # type: ignore[attr-defined]


def column_widths(lines: list[str], names: list[str]) -> list[int]:
    """Each column's width, from where the header names start (the last runs to the widest row)."""
    header = lines[0]
    starts = [re.search(rf"(?<!\S){re.escape(name)}(?!\S)", header).start() for name in names]  # type: ignore[union-attr]
    end = max(len(line.rstrip()) for line in lines) + 1
    return [stop - start for start, stop in zip(starts, [*starts[1:], end], strict=True)]


FIELDS: dict[str, Any] = {
    "workspace": "default",
    "tags": ["project-phoenix", "meeting-notes", "quarterly-planning"],
    "source": "https://wiki.example.com/spaces/TEAM/pages/123456789/Quarterly+planning",
    "date": None,
    "created_at": "2024-05-01T13:45:00+00:00",
    "updated_at": "2024-05-01T13:45:00+00:00",
    "chunk_count": 3,
}
LONG_TEXT = "We agreed to move the launch of [the] Phoenix project to September because " * 5


def test_search_table_fits_80_columns() -> None:
    hit = SearchHit(
        **FIELDS, memory_id=MEMORY_ID, chunk_id="c", text=LONG_TEXT, similarity_score=0.8123,
        rank_score=0.03, matched_by=["vector", "keyword"],
    )  # fmt: skip
    lines = printed(SearchResult(workspace="default", results=[hit], count=1))
    assert all(len(line) <= 80 for line in lines)
    widths = column_widths(lines, ["score", "id", "text", "tags", "source"])
    assert min(widths) >= 6 and widths[2] >= 20, widths  # no column squeezed to a sliver
    row = lines[2]
    assert row.split()[:3] == ["0.81", MEMORY_ID[:8], "We"]
    assert "project-pho" in row and "…" in row  # tags and source cut with an ellipsis, on one line
    assert "[the]" in "\n".join(lines)  # user text is not read as markup
    assert sum("…" in line for line in lines) >= 2  # the long text is cut too
    assert len(lines) <= 10


def test_list_table_fits_80_columns_and_prints_the_cursor() -> None:
    memory = MemorySummary(**FIELDS, memory_id=MEMORY_ID, preview=LONG_TEXT[:200])
    lines = printed(MemoryPage(workspace="default", memories=[memory], count=1, next_cursor="abc123"))
    assert all(len(line) <= 80 for line in lines)
    widths = column_widths(lines, ["id", "added", "text", "tags", "source"])
    assert min(widths) >= 8 and widths[2] >= 20, widths
    assert lines[2].split()[:3] == [MEMORY_ID[:8], "2024-05-01", "We"]
    assert lines[-1] == "next page: --cursor abc123"


def test_stats_table_leaves_out_per_process_figures() -> None:
    stats = Stats(
        workspace="default", total_memories=2, total_chunks=3, workspaces=1, database_size_mb=5.2,
        graph_name="zapomni", embedder="onnx:all-MiniLM-L6-v2-int8", embedding_dimension=384,
        avg_query_latency_ms=12.5, cache_hit_rate=0.5, cache_backend="memory", uptime_s=1.2,
    )  # fmt: skip
    text = "\n".join(printed(stats))
    assert "total_memories" in text and "onnx:all-MiniLM-L6-v2-int8" in text
    for field in render.PER_PROCESS_STATS:
        assert field not in text


def test_workspaces_table_marks_the_default() -> None:
    listing = WorkspaceList(
        workspaces=[WorkspaceInfo(name="default", memories=2, chunks=3), WorkspaceInfo(name="w", memories=1, chunks=1)],
        default="default",
    )
    lines = printed(listing)
    assert lines[2].split() == ["default", "2", "3", "default"]
    assert lines[3].split() == ["w", "1", "1"]
