"""Memories that are files read from disk (`kind` document or code, `source` the file's path)."""

from __future__ import annotations

from zapomni_db.client import GraphClient
from zapomni_db.records.files import StoredFile

# A code file's memory brings the codebase its File node was indexed under.
_STORED_FILES = (
    "MATCH (m:Memory) WHERE m.kind IN ['document', 'code'] AND m.source STARTS WITH $prefix "
    "OPTIONAL MATCH (f:File {memory_id: m.id}) RETURN m.source, m.id, m.file_hash, m.kind, f.codebase"
)


class FileStore:
    def __init__(self, client: GraphClient) -> None:
        self._client = client

    async def stored_files(self, prefix: str) -> dict[str, StoredFile]:
        """The file memories whose path starts with `prefix`, by path."""
        rows = await self._client.ro_query(_STORED_FILES, {"prefix": prefix})
        return {
            row[0]: StoredFile(path=row[0], memory_id=row[1], file_hash=row[2], kind=row[3], codebase=row[4])
            for row in rows
        }

    async def mark_ingested(self, memory_id: str, file_hash: str) -> bool:
        """Record the hash of the file a memory was made from: its last step, so an unfinished one is redone."""
        rows = await self._client.query(
            "MATCH (m:Memory {id: $id}) SET m.file_hash = $hash RETURN m.id", {"id": memory_id, "hash": file_hash}
        )
        return bool(rows)
