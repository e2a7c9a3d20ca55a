"""mcp-memory-service's SQLite database (its sqlite_vec backend's `sqlite_vec.db`), read directly and read-only.

Each row of its `memories` table is a memory: `content` the text, `content_hash` the original id, `tags` (comma
separated) the tags, `created_at` the date, `memory_type` and the flat values of its `metadata` JSON kept as
metadata. Rows it deleted (a `deleted_at` tombstone) are left out. Its vectors (`memory_embeddings`, made by
another model) are not read: Zapomni embeds the texts with its own.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from zapomni_core.transfer.format import TransferError
from zapomni_core.transfer.sources.conversations_file import timestamp
from zapomni_core.transfer.sources.lines import LineWriter, MetadataExtra, ReadOptions

NAME = "mcp-memory-service"
_REQUIRED = ("content", "content_hash")
_OPTIONAL = ("tags", "memory_type", "metadata", "created_at", "created_at_iso", "deleted_at")


def read(path: Path, out: LineWriter, _options: ReadOptions) -> None:
    if not path.is_file():
        raise TransferError(f"{path}: not a file: give mcp-memory-service's database (sqlite_vec.db)")
    try:
        # Read-only and immutable: the service may be running; nothing here may change its file.
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise TransferError(f"{path}: cannot open it as SQLite ({exc})") from None
    try:
        columns = _columns(connection, path)
        wanted = [c for c in (*_REQUIRED, *_OPTIONAL) if c in columns]
        rows = connection.execute(f"SELECT {', '.join(wanted)} FROM memories ORDER BY rowid")
        for number, values in enumerate(rows, start=1):
            _memory(dict(zip(wanted, values, strict=True)), number, path, out)
    except sqlite3.DatabaseError as exc:
        raise TransferError(f"{path}: cannot be read as SQLite ({exc}); nothing was imported") from None
    finally:
        connection.close()


def _columns(connection: sqlite3.Connection, path: Path) -> set[str]:
    try:
        found = {row[1] for row in connection.execute("PRAGMA table_info(memories)")}
    except sqlite3.DatabaseError as exc:
        raise TransferError(f"{path}: not a SQLite database ({exc})") from None
    if not found:
        raise TransferError(f"{path}: no memories table: not an mcp-memory-service database")
    missing = [c for c in _REQUIRED if c not in found]
    if missing:
        raise TransferError(f"{path}: memories table: no column {', '.join(missing)}: not mcp-memory-service's")
    return found


def _memory(row: dict[str, Any], number: int, path: Path, out: LineWriter) -> None:
    if row.get("deleted_at") is not None:
        out.skip("memories deleted in mcp-memory-service (its tombstones)")
        return
    content, content_hash = row["content"], row["content_hash"]
    if not isinstance(content, str) or not isinstance(content_hash, str) or not content_hash:
        raise TransferError(f"{path}: memories row {number}: content and content_hash must be text")
    tags = [t.strip() for t in (row.get("tags") or "").split(",") if t.strip()]
    extra: MetadataExtra = {}
    if isinstance(row.get("memory_type"), str) and row["memory_type"]:
        extra["memory_type"] = row["memory_type"]
    for key, value in _metadata(row.get("metadata"), out).items():
        extra.setdefault(f"service_{key}"[:64], value)
    out.memory(
        content_hash,
        content,
        when=timestamp(row.get("created_at")) or timestamp(row.get("created_at_iso")),
        source=str(path),
        tags=tags,
        extra=extra,
    )


def _metadata(raw: Any, out: LineWriter) -> MetadataExtra:
    """The flat values of a row's metadata JSON; nested ones are left out (counted)."""
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        out.note("metadata that is not JSON left out")
        return {}
    if not isinstance(value, dict):
        return {}
    flat: MetadataExtra = {}
    for key, item in value.items():
        if isinstance(item, str | int | float | bool) and key not in ("tags", "source", "date"):
            flat[str(key)] = item
        else:
            out.note("nested or reserved metadata values left out")
    return flat
