"""Results on stdout: rich tables for people (readable at 80 columns), or exactly the result as JSON.

Ids are shown by their first 8 characters in tables (`get`, `update` and `delete` take that
prefix back); long text is cut with an ellipsis, never wrapped into a column one letter wide.
User text goes in as `Text`, so brackets and colons in a memory are printed, not interpreted.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from zapomni_core.models import (
    AddMemoryResult,
    DeleteMemoryResult,
    DeleteWorkspaceResult,
    MemoryDetail,
    MemoryPage,
    SearchResult,
    Stats,
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
            f"{hit.similarity_score:.2f}",
            short_id(hit.memory_id),
            Text(clip(hit.text)),
            Text(clip(", ".join(hit.tags), tags_width)),
            Text(clip(hit.source or "", source_width)),
        )
    out.print(table)


def _page(result: MemoryPage, out: Console) -> None:
    if not result.memories:
        _line(out, f"No memories in workspace {result.workspace!r}.")
    else:
        tags_width, source_width = _label_widths(out)
        table = _table("id", "added")
        _text_column(table)
        table.add_column("tags")
        table.add_column("source")
        for memory in result.memories:
            table.add_row(
                short_id(memory.memory_id),
                memory.created_at[:10],
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
}
