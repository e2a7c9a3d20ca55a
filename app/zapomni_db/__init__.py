"""Storage layer: FalkorDB client, embedded server process, schema and Cypher.

Nothing here imports from `zapomni_core` or `zapomni_mcp`: the layers point one way.
"""

from zapomni_db.client import GraphClient
from zapomni_db.embedded import EmbeddedDatabase
from zapomni_db.errors import DatabaseError, DatabaseUnavailable, SchemaMismatch
from zapomni_db.repository import ChunkHit, ChunkRow, ChunkTerms, Counts, MemoryRecord, MemoryRepository, SearchFilter
from zapomni_db.schema import SchemaSettings, migrate, repair_vector_index, rewrite_append_only_file, wait_for_indexes

__all__ = [
    "ChunkHit",
    "ChunkRow",
    "ChunkTerms",
    "Counts",
    "DatabaseError",
    "DatabaseUnavailable",
    "EmbeddedDatabase",
    "GraphClient",
    "MemoryRecord",
    "MemoryRepository",
    "SchemaMismatch",
    "SchemaSettings",
    "SearchFilter",
    "migrate",
    "repair_vector_index",
    "rewrite_append_only_file",
    "wait_for_indexes",
]
