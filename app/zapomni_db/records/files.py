"""What `FileStore` returns: the memories of ingested files."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StoredFile:
    """A file's memory as the last ingestion left it (`file_hash` None: its write did not finish)."""

    path: str
    memory_id: str
    file_hash: str | None
    kind: str
    codebase: str | None  # a code file's: the directory it was indexed under
