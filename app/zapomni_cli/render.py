"""Results on stdout: rich tables for people (readable at 80 columns), or exactly the result as JSON.

Ids are shown by their first 8 characters in tables (`get`, `update` and `delete` take that
prefix back); long text is cut with an ellipsis, never wrapped into a column one letter wide.
User text goes in as `Text`, so brackets and colons in a memory are printed, not interpreted.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from zapomni_core import (
    AddMemoryResult,
    CancelJobResult,
    CreatedToken,
    DeleteMemoryResult,
    DeleteWorkspaceResult,
    JobInfo,
    JobList,
    MemoryDetail,
    MemoryPage,
    RevokedToken,
    SearchResult,
    Stats,
    TokenInfo,
    TokenList,
    UpdateMemoryResult,
    WorkspaceList,
)

SHORT_ID = 8
TEXT_CHARS = 160
IDS_LISTED = 50
# Per-process figures of get_stats: in a one-shot command they describe a process that lived a
# second and ran one query, so the table leaves them out (`--json` keeps the tool's result whole).
PER_PROCESS_STATS = ("avg_query_latency_ms", "cache_hit_rate", "uptime_s")


def console() -> Console:
    return Console(highlight=False, emoji=False)


def print_json(result: BaseModel) -> None:
    """The structured result, exactly as the MCP tool returns it, and nothing else on stdout."""
    sys.stdout.write(json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")


def render(result: BaseModel, out: Console) -> None:
    for kind, show in _RENDERERS.items():
        if isinstance(result, kind):
            show(result, out)
            return
    raise TypeError(f"no renderer for {type(result).__name__}")


def short_id(memory_id: str) -> str:
    return memory_id[:SHORT_ID]


def clip(text: str, limit: int = TEXT_CHARS) -> str:
    """One line of at most `limit` characters: whitespace collapsed, an ellipsis where it was cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _table(*columns: str) -> Table:
    """A table without side borders and one space of padding on each side of a column."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True, header_style="bold")
    for name in columns:
        table.add_column(name)
    return table


def _label_widths(out: Console) -> tuple[int, int]:
    """How wide tags and sources may be: a sixth and a seventh of the width, at least 12 and 10."""
    return max(12, out.width // 6), max(10, out.width // 7)


def _text_column(table: Table, header: str = "text") -> None:
    # Takes whatever the other columns leave; they are narrow, so it never shrinks to a sliver.
    table.add_column(header, ratio=1, min_width=20, overflow="fold")


def plural(count: int, word: str, plural_form: str | None = None) -> str:
    return f"{count} {word if count == 1 else plural_form or word + 's'}"


def _line(out: Console, line: str) -> None:
    """A sentence, not wrapped: the terminal wraps it, and a pipe gets it on one line."""
    out.print(Text(line), soft_wrap=True)


def _added(result: AddMemoryResult, out: Console) -> None:
    if result.deduplicated:
        line = (
            f"Already stored as memory {result.memory_id} in workspace {result.workspace!r}; "
            "new tags and empty fields were merged into it."
        )
    else:
        chunks = plural(result.chunks_created, "chunk")
        line = f"Stored memory {result.memory_id} in workspace {result.workspace!r} ({chunks})."
    _line(out, line)
    if result.status != "indexed":
        _line(out, memory_status(result.status, result.job_id))


def memory_status(status: str, job_id: str | None) -> str:
    """What a memory's status other than indexed means, and the command that says more."""
    follow = f"`zapomni job_status {job_id}`" if job_id else "`zapomni list_jobs`"
    if status == "indexing":
        return f"indexing: not searchable until its job completes ({follow} follows it)"
    if status == "failed":
        return f"failed: its indexing job failed ({follow} says why); adding the text again retries"
    return status


def _search(result: SearchResult, out: Console) -> None:
    if not result.results:
        _line(out, f"No memories matched in workspace {result.workspace!r}.")
        return
    tags_width, source_width = _label_widths(out)
    table = _table("score", "id")
    table.columns[0].justify = "right"
    _text_column(table)
    table.add_column("tags")
    table.add_column("source")
    for hit in result.results:
        table.add_row(
            "" if hit.similarity_score is None else f"{hit.similarity_score:.2f}",
            short_id(hit.memory_id),
            Text(clip(hit.text)),
            Text(clip(", ".join(hit.tags), tags_width)),
            Text(clip(hit.location() or "", source_width)),
        )
    out.print(table)


def _page(result: MemoryPage, out: Console) -> None:
    if not result.memories:
        _line(out, f"No memories in workspace {result.workspace!r}.")
    else:
        tags_width, source_width = _label_widths(out)
        # A status column only when a memory on the page is not (yet) searchable.
        statuses = any(memory.status != "indexed" for memory in result.memories)
        table = _table("id", "added", *(["status"] if statuses else []))
        _text_column(table)
        table.add_column("tags")
        table.add_column("source")
        for memory in result.memories:
            table.add_row(
                short_id(memory.memory_id),
                memory.created_at[:10],
                *([memory.status] if statuses else []),
                Text(clip(memory.preview, 120)),
                Text(clip(", ".join(memory.tags), tags_width)),
                Text(clip(memory.source or "", source_width)),
            )
        out.print(table)
    if result.next_cursor:
        _line(out, f"next page: --cursor {result.next_cursor}")


def _detail(result: MemoryDetail, out: Console) -> None:
    rows: list[tuple[str, Any]] = [
        ("id", result.memory_id),
        ("workspace", result.workspace),
        ("tags", ", ".join(result.tags)),
        ("source", result.source or ""),
        ("date", result.date or ""),
        ("added", result.created_at),
        ("updated", result.updated_at),
        ("chunks", result.chunk_count),
    ]
    if result.status != "indexed":
        rows.append(("status", memory_status(result.status, result.job_id)))
    rows += sorted(result.metadata.items())
    width = max(len(field) for field, _value in rows)
    for field, value in rows:
        # One line each, never folded: a long source or id stays whole for copying.
        out.print(Text(f"{field:<{width}}  ", style="bold") + Text(str(value)), soft_wrap=True)
    out.print()
    # The text exactly as stored: not wrapped to the terminal, so `get ID > file` gets it back whole.
    out.print(Text(result.text), soft_wrap=True)


def _updated(result: UpdateMemoryResult, out: Console) -> None:
    if not result.text_changed and not result.metadata_changed:
        _line(out, f"Memory {result.memory_id} already had this text and metadata: nothing changed.")
        return
    changes = []
    if result.text_changed:
        embedded = plural(result.chunks_embedded, "chunk")
        changes.append(f"text changed ({embedded} re-embedded, {result.chunks_kept} kept)")
    if result.metadata_changed:
        changes.append("metadata changed")
    _line(out, f"Updated memory {result.memory_id}: {'; '.join(changes)}.")


def _deleted(result: DeleteMemoryResult, out: Console) -> None:
    count = plural(result.deleted_count, "memory", "memories")
    verb = "Would delete" if result.dry_run else "Deleted"
    _line(out, f"{verb} {count} from workspace {result.workspace!r}{':' if result.memory_ids else '.'}")
    for memory_id in result.memory_ids[:IDS_LISTED]:
        _line(out, f"  {memory_id}")
    if len(result.memory_ids) > IDS_LISTED:
        _line(out, f"  ... and {len(result.memory_ids) - IDS_LISTED} more (--json lists them all)")
    if result.not_found:
        _line(out, f"Not found: {', '.join(result.not_found)}")
    if result.dry_run and result.deleted_count:
        _line(out, "Nothing was deleted (--dry-run).")


def _stats(result: Stats, out: Console) -> None:
    table = _table("statistic", "value")
    for key, value in result.model_dump(exclude=set(PER_PROCESS_STATS)).items():
        table.add_row(key, Text("—" if value is None else str(value)))
    out.print(table)


def _workspaces(result: WorkspaceList, out: Console) -> None:
    if not result.workspaces:
        _line(out, f"No workspaces yet; the default, {result.default!r}, is made by the first add.")
        return
    table = _table("workspace", "memories", "chunks", "")
    for column in table.columns[1:3]:
        column.justify = "right"
    for info in result.workspaces:
        default = "default" if info.name == result.default else ""
        table.add_row(Text(info.name), str(info.memories), str(info.chunks), default)
    out.print(table)


def _workspace_deleted(result: DeleteWorkspaceResult, out: Console) -> None:
    memories = plural(result.deleted_memories, "memory", "memories")
    _line(out, f"Deleted workspace {result.name!r}: {memories}, {plural(result.deleted_chunks, 'chunk')}.")


def job_progress(job: JobInfo) -> str:
    total = f"/{job.progress.total}" if job.progress.total is not None else ""
    return f"{job.progress.done}{total} {job.progress.unit}"


def _when(timestamp: str | None) -> str:
    """An ISO 8601 time to the second, as a person reads it: 2024-05-01 13:45:07."""
    return timestamp[:19].replace("T", " ") if timestamp else ""


def _expiry(timestamp: str | None) -> str:
    """The day a token expires, and the minute when that is within two days (a 1-minute token showed a day)."""
    if not timestamp:
        return "never"
    when = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    soon = when - datetime.now(UTC) < timedelta(days=2)
    return _when(timestamp)[:16] if soon else _when(timestamp)[:10]


def _job(result: JobInfo, out: Console) -> None:
    rows: list[tuple[str, str]] = [
        ("job", result.job_id),
        ("kind", result.kind),
        ("workspace", result.workspace),
        ("state", result.state),
        ("progress", job_progress(result)),
        ("memory", result.memory_id or ""),
        ("message", result.message or ""),
        ("counts", ", ".join(f"{key} {value}" for key, value in sorted(result.counts.items()))),
        ("failed", plural(result.failed_items, "item") if result.failed_items else ""),
        ("error", result.error or ""),
        ("attempts", str(result.attempts)),
        ("created", _when(result.created_at)),
        ("started", _when(result.started_at)),
        ("updated", _when(result.updated_at)),
        ("finished", _when(result.finished_at)),
    ]
    shown = [(field, value) for field, value in rows if value]
    width = max(len(field) for field, _value in shown)
    for field, value in shown:
        out.print(Text(f"{field:<{width}}  ", style="bold") + Text(value), soft_wrap=True)
    for failure in result.failures:
        _line(out, f"  {failure}")
    if result.state == "pending" and result.waiting_for != "server":  # else its message says it already
        _line(out, "A running Zapomni server (`zapomni serve`, as MCP clients start it) runs pending jobs.")


# A job's kind in a list, short enough to leave the note room in 80 columns (--json and job_status say it whole).
JOB_KINDS = {
    "index_memory": "index", "build_graph": "graph", "ingest_path": "files", "index_codebase": "code",
    "import_source": "import",
}  # fmt: skip


def jobs(result: JobList, out: Console, state: str | None = None) -> None:
    """list_jobs as a table; `state` is the filter it was asked for, to say what there is none of."""
    if not result.jobs:
        _line(out, f"No {state + ' ' if state else ''}jobs in workspace {result.workspace!r}.")
        return
    table = _table("id", "kind", "state", "progress", "created")
    for column in table.columns:
        column.no_wrap = True
    # The note takes what is left, on one line: cut with an ellipsis, never wrapped.
    table.add_column("note", ratio=1)
    for job in result.jobs:
        table.add_row(
            short_id(job.job_id),
            JOB_KINDS.get(job.kind, job.kind),
            job.state,
            job_progress(job),
            _when(job.created_at)[:16],
            Text(clip(_job_note(job)), no_wrap=True, overflow="ellipsis"),
        )
    out.print(table)


def _job_note(job: JobInfo) -> str:
    """The one thing worth knowing about a job in a list: why it failed, what it waits for, or its memory."""
    failed = plural(job.failed_items, "failed item") if job.failed_items else ""
    memory = f"memory {short_id(job.memory_id)}" if job.memory_id else ""
    return job.error or job.message or "; ".join(filter(None, [failed, memory]))


def _job_cancelled(result: CancelJobResult, out: Console) -> None:
    job = result.job
    if not result.cancelled:
        _line(out, f"Job {job.job_id} had already ended ({job.state}): nothing was cancelled.")
        return
    _line(out, f"Cancelled job {job.job_id} ({job.kind}) in workspace {job.workspace!r}.")
    if result.memory_deleted:
        _line(out, f"Its add was withdrawn: memory {job.memory_id} was deleted.")


def _scope(info: TokenInfo) -> str:
    if info.workspaces is None:
        return "every workspace"
    return f"workspace{'s' if len(info.workspaces) > 1 else ''} {', '.join(info.workspaces)}"


def _token_created(result: CreatedToken, out: Console) -> None:
    info = result.info
    expiry = f"expires {_when(info.expires_at)[:16]} UTC" if info.expires_at else "never expires"
    _line(out, f"Created token {info.name!r} (id {info.token_id}): role {info.role}, {_scope(info)}; {expiry}.")
    _line(out, result.token)
    _line(
        out,
        "This is the only time the token is shown: only its hash is stored, so it cannot be shown again. "
        "Copy it now; if it is lost, revoke it and create another.",
    )


def _tokens(result: TokenList, out: Console) -> None:
    if not result.tokens:
        _line(out, "No tokens yet; `zapomni token create --name NAME --role read --workspace default` makes one.")
        return
    # Dates only, to fit 80 columns (--json has the times); the id and the name are what `revoke` takes: never cut.
    table = _table("id", "name", "role", "workspaces", "state", "expires", "last used")
    for column, width in zip(table.columns, (12, 8, 5, 10, 7, 10, 10), strict=True):
        column.min_width = width
        column.no_wrap = column.header not in ("name", "workspaces")
    table.columns[1].overflow = "fold"
    table.columns[1].ratio = table.columns[3].ratio = 1
    for info in result.tokens:
        table.add_row(
            info.token_id,
            Text(info.name),
            info.role,
            Text("all" if info.workspaces is None else ", ".join(info.workspaces)),
            info.state,
            _expiry(info.expires_at),
            _when(info.last_used_at)[:10] or "never",
        )
    out.print(table)


def _token_revoked(result: RevokedToken, out: Console) -> None:
    info = result.info
    if result.already_revoked:
        revoked = _when(info.revoked_at)
        _line(out, f"Token {info.name!r} (id {info.token_id}) was already revoked at {revoked}: nothing changed.")
    else:
        _line(out, f"Revoked token {info.name!r} (id {info.token_id}): it stops working at once, on every server.")


_RENDERERS: dict[type[BaseModel], Callable[[Any, Console], None]] = {
    AddMemoryResult: _added,
    SearchResult: _search,
    MemoryPage: _page,
    MemoryDetail: _detail,
    UpdateMemoryResult: _updated,
    DeleteMemoryResult: _deleted,
    Stats: _stats,
    WorkspaceList: _workspaces,
    DeleteWorkspaceResult: _workspace_deleted,
    JobInfo: _job,
    JobList: jobs,
    CancelJobResult: _job_cancelled,
    CreatedToken: _token_created,
    TokenList: _tokens,
    RevokedToken: _token_revoked,
}
