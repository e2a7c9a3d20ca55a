"""The command line's pieces without a database: flag-named errors, text input, 80-column tables."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from zapomni_cli import job_commands, render
from zapomni_cli.errors import CliError, describe_engine_error, validate
from zapomni_cli.inputs import read_text
from zapomni_cli.main import build_parser, log_level
from zapomni_core import Settings
from zapomni_core.jobs import CancelJobResult, JobInfo, JobList, JobStatusRequest, ListJobsRequest
from zapomni_core.jobs.replies import JobProgress
from zapomni_core.memories.replies import (
    AddMemoryResult,
    MemoryDetail,
    MemoryPage,
    MemorySummary,
    SearchHit,
    SearchResult,
)
from zapomni_core.memories.requests import AddMemoryRequest, ListMemoriesRequest, SearchRequest, UpdateMemoryRequest
from zapomni_core.workspaces.replies import Stats, WorkspaceInfo, WorkspaceList
from zapomni_core.workspaces.requests import DeleteWorkspaceRequest

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
        (DeleteWorkspaceRequest, {"name": "w", "confirm": "x"}, "--confirm: must repeat the workspace name exactly"),
        (JobStatusRequest, {"job_id": "nope"}, "JOB_ID: not a job id (got 'nope')"),
        (JobStatusRequest, {"job_id": MEMORY_ID, "wait_s": -1}, "--wait: must be at least 0 (got -1)"),
        (ListJobsRequest, {"limit": 0}, "--limit: must be at least 1 (got 0)"),
        (ListJobsRequest, {"workspace": "Bad!"}, "--workspace: must be 1-63 lowercase letters"),
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
    assert describe_engine_error("job_id: no job x in any workspace (list_jobs shows a workspace's jobs)") == (
        "no job x in any workspace (list_jobs shows a workspace's jobs)"
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
    assert read_text(None, path).value == "notes"  # type: ignore[union-attr]  # a readable file gives a value
    path.write_bytes(b"\xef\xbb\xbfwith a byte-order mark")
    # a readable file gives a value:
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
    for name, alias, rest in [
        ("job_status", "job", [MEMORY_ID]),
        ("list_jobs", "jobs", []),
        ("cancel_job", "cancel", [MEMORY_ID]),
    ]:
        assert parser.parse_args([name, *rest]).memory_command.name == name
        assert parser.parse_args([alias, *rest]).memory_command.name == name
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
    # the console writes into a StringIO here:
    lines: list[str] = out.file.getvalue().splitlines()  # type: ignore[attr-defined]
    return lines


def column_widths(lines: list[str], names: list[str]) -> list[int]:
    """Each column's width, from where the header names start (the last runs to the widest row)."""
    header = lines[0]
    # every column name is in the header line:
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


# -- the job commands ----------------------------------------------------------------------------

JOB_ID = "5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b"


def prepared(*argv: str) -> Any:
    args = build_parser().parse_args(list(argv))
    return args, args.memory_command.prepare(args).request


def test_job_commands_parse_into_the_tools_requests() -> None:
    args, request = prepared("job_status", JOB_ID, "--wait", "7")
    assert request == JobStatusRequest(job_id=JOB_ID, wait_s=7) and args.wait == 7
    # The CLI waits longer than one tool call may, in several calls; each asks for at most the maximum.
    args, request = prepared("job", JOB_ID.upper(), "--wait", "3600")
    assert (request.job_id, request.wait_s, args.wait) == (JOB_ID, 50, 3600)
    _args, request = prepared("job_status", JOB_ID[:8])  # a prefix, resolved once the store is open
    assert request.job_id != JOB_ID[:8]
    _args, request = prepared("jobs", "--state", "failed", "--limit", "5", "--workspace", "w")
    assert request == ListJobsRequest(workspace="w", state="failed", limit=5)
    _args, request = prepared("cancel_job", JOB_ID)
    assert request.job_id == JOB_ID


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["job_status", "not-a-job"], "JOB_ID: not a job id (got 'not-a-job')"),
        (["job_status", JOB_ID, "--wait", "-1"], "--wait: must be at least 0 (got -1)"),
        (["list_jobs", "--limit", "101"], "--limit: must be at most 100 (got 101)"),
        (["cancel_job", "x"], "JOB_ID: not a job id (got 'x')"),
    ],
)
def test_job_command_refusals_name_the_flag(argv: list[str], expected: str) -> None:
    args = build_parser().parse_args(argv)
    with pytest.raises(CliError) as caught:
        args.memory_command.prepare(args)
    assert str(caught.value).startswith(expected) and caught.value.code == 2, str(caught.value)


@pytest.mark.parametrize(
    "argv",
    [
        ["list_jobs", "--state", "done"],  # not a state
        ["job_status", JOB_ID, "--wait", "soon"],
        ["job_status", JOB_ID, "--workspace", "w"],  # job ids are unique across workspaces
        ["cancel_job"],
    ],
)
def test_job_command_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(argv)
    assert caught.value.code == 2
    assert capsys.readouterr().err.count("error:") == 1


def job(**changes: Any) -> JobInfo:
    fields: dict[str, Any] = {
        "job_id": JOB_ID, "workspace": "default", "kind": "index_memory", "state": "completed",
        "memory_id": MEMORY_ID, "progress": JobProgress(done=812, total=812, unit="chunks"), "message": None,
        "counts": {"chunks": 812}, "failed_items": 0, "failures": [], "error": None, "attempts": 1,
        "created_at": "2024-05-01T13:45:07.123456+00:00", "started_at": "2024-05-01T13:45:08+00:00",
        "updated_at": "2024-05-01T13:46:00+00:00", "finished_at": "2024-05-01T13:46:00+00:00",
    }  # fmt: skip
    return JobInfo(**{**fields, **changes})


def test_job_status_shows_every_field_that_has_a_value() -> None:
    lines = printed(job())
    assert lines[0].split() == ["job", JOB_ID]
    assert ["progress", "812/812", "chunks"] in [line.split() for line in lines]
    assert ["created", "2024-05-01", "13:45:07"] in [line.split() for line in lines]
    assert not any(line.startswith(("message", "error", "failed")) for line in lines)

    failed = printed(
        job(
            state="failed", progress=JobProgress(done=8, total=None, unit="chunks"), counts={}, failed_items=1,
            failures=["chunks 8-15: HTTP 503 from the embedder"], error="embedding chunks 8-15 failed",
            finished_at=None,
        )
    )  # fmt: skip
    text = "\n".join(failed)
    assert ["progress", "8", "chunks"] in [line.split() for line in failed] and "1 item" in text
    assert ["error", "embedding", "chunks", "8-15", "failed"] in [line.split() for line in failed]
    assert failed[-1] == "  chunks 8-15: HTTP 503 from the embedder"
    assert not any(line.startswith(("finished", "counts")) for line in failed)
    pending = printed(job(state="pending", started_at=None, finished_at=None))
    assert "`zapomni serve`" in pending[-1]  # this command does not run jobs; says what does


def test_jobs_table_fits_80_columns() -> None:
    failed = job(
        job_id="9f8e7d6c-5b4a-4c3d-8e2f-1a0b9c8d7e6f", state="failed",
        progress=JobProgress(done=8, total=812, unit="chunks"), failed_items=1,
        error="embedding chunks 8-15: HTTP 503 from the embedder at http://localhost:11434",
    )  # fmt: skip
    lines = printed(JobList(workspace="default", jobs=[job(), failed], count=2))
    assert all(len(line) <= 80 for line in lines), lines
    widths = column_widths(lines, ["id", "kind", "state", "progress", "created", "note"])
    assert min(widths) >= 5, widths
    first = [JOB_ID[:8], "index", "completed", "812/812", "chunks", "2024-05-01", "13:45", "memory", MEMORY_ID[:8]]
    assert lines[2].split() == first
    assert lines[3].split()[:5] == ["9f8e7d6c", "index", "failed", "8/812", "chunks"]
    assert "embedding chunks" in lines[3] and lines[3].rstrip().endswith("…")  # cut, not wrapped
    assert len(lines) == 4

    # The widest state and a large count still leave every column whole, the note cut short.
    busy = job(
        state="completed_with_errors", progress=JobProgress(done=12345, total=12345, unit="chunks"), failed_items=3,
        message="waiting for disk space: 12 MB free, 64 MB needed to go on",
    )  # fmt: skip
    lines = printed(JobList(workspace="default", jobs=[busy], count=1))
    assert all(len(line) <= 80 for line in lines) and len(lines) == 3, lines
    assert lines[2].split()[:7] == [
        JOB_ID[:8], "index", "completed_with_errors", "12345/12345", "chunks", "2024-05-01", "13:45",
    ]  # fmt: skip


def test_no_jobs_says_so_naming_the_state_asked_for() -> None:
    empty = JobList(workspace="w", jobs=[], count=0)
    assert printed(empty) == ["No jobs in workspace 'w'."]
    out = Console(file=io.StringIO(), width=80)
    args = build_parser().parse_args(["list_jobs", "--state", "failed"])
    args.memory_command.show(empty, args, out)
    # the console writes into a StringIO here:
    assert out.file.getvalue() == "No failed jobs in workspace 'w'.\n"  # type: ignore[attr-defined]
    assert job_commands.COMMANDS[1].show is not None


def test_cancel_job_says_what_it_did() -> None:
    cancelled = CancelJobResult(job=job(state="cancelled"), cancelled=True, memory_deleted=True)
    assert printed(cancelled) == [
        f"Cancelled job {JOB_ID} (index_memory) in workspace 'default'.",
        f"Its add was withdrawn: memory {MEMORY_ID} was deleted.",
    ]
    ended = CancelJobResult(job=job(), cancelled=False)
    assert printed(ended) == [f"Job {JOB_ID} had already ended (completed): nothing was cancelled."]


def test_memories_not_yet_searchable_show_their_status() -> None:
    indexing = MemorySummary(**FIELDS, memory_id=MEMORY_ID, preview=LONG_TEXT[:200], status="indexing", job_id=JOB_ID)
    indexed = MemorySummary(**FIELDS, memory_id=JOB_ID, preview="short")
    lines = printed(MemoryPage(workspace="default", memories=[indexing, indexed], count=2, next_cursor=None))
    assert all(len(line) <= 80 for line in lines), lines
    widths = column_widths(lines, ["id", "added", "status", "text", "tags", "source"])
    assert min(widths) >= 8 and widths[3] >= 20, widths
    assert lines[2].split()[:4] == [MEMORY_ID[:8], "2024-05-01", "indexing", "We"]
    assert lines[-1].split()[:4] == [JOB_ID[:8], "2024-05-01", "indexed", "short"]
    # A page of searchable memories has no status column at all.
    assert "status" not in printed(MemoryPage(workspace="default", memories=[indexed], count=1, next_cursor=None))[0]

    detail = MemoryDetail(**FIELDS, memory_id=MEMORY_ID, text="t", metadata={}, status="failed", job_id=JOB_ID)
    status = next(line for line in printed(detail) if line.startswith("status"))
    assert f"failed: its indexing job failed (`zapomni job_status {JOB_ID}` says why)" in status
    assert not any(line.startswith("status") for line in printed(detail.model_copy(update={"status": "indexed"})))

    added = AddMemoryResult(
        memory_id=MEMORY_ID, workspace="default", chunks_created=0, deduplicated=True, text_preview="t",
        status="indexing", job_id=JOB_ID,
    )  # fmt: skip
    follow = f"indexing: not searchable until its job completes (`zapomni job_status {JOB_ID}` follows it)"
    assert printed(added)[-1] == follow
