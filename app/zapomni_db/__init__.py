"""Storage layer: connections, the stores of a graph, schema and migrations, the embedded server.

Nothing here imports from `zapomni_core` or `zapomni_mcp`: the layers point one way. Driver
exceptions never leave this package; `zapomni_db.errors` describes the tree.
"""

from zapomni_db.access import AccessStore, access_graph
from zapomni_db.client import GraphClient
from zapomni_db.code import CodeStore
from zapomni_db.connection import Connection, DatabaseTarget, WriteFence, connect
from zapomni_db.disk_state import WriteSuspension, read_suspension
from zapomni_db.embedded import EmbeddedDatabase
from zapomni_db.errors import (
    CredentialsRefused,
    DatabaseError,
    DatabaseUnavailable,
    DirectoryUnusable,
    GraphMissing,
    IndexesBuilding,
    PersistenceFailed,
    QueryFailed,
    SchemaMismatch,
    WriteInterrupted,
    WritesSuspended,
)
from zapomni_db.files import FileStore
from zapomni_db.graph import GraphStore
from zapomni_db.jobs import JobStore
from zapomni_db.maintenance import DERIVED, Derivation, DerivedField, Maintenance
from zapomni_db.memories import MemoryWrites
from zapomni_db.memory_reads import MemoryReads, stored_head
from zapomni_db.records.access import Role, TokenRow
from zapomni_db.records.code import CodeFileRow, SymbolDefinition, SymbolInfo, SymbolKind, SymbolRow
from zapomni_db.records.files import StoredFile
from zapomni_db.records.graph import (
    EntityInfo,
    EntityRow,
    GraphCounts,
    KnownEntity,
    MentionedEntity,
    MentionRow,
    ReachedEntity,
    RelationEvidence,
    RelationFact,
    RelationRow,
)
from zapomni_db.records.jobs import JobRecord, JobRow, JobState
from zapomni_db.records.maintenance import Counts, EmbedderClaim, ReembedState
from zapomni_db.records.memories import (
    ChunkPlace,
    ChunkRow,
    ListedKind,
    MemoryInfo,
    MemoryKind,
    MemoryRecord,
    MemoryStatus,
    PageKey,
    SearchFilter,
    StoredChunk,
    StoredMemory,
)
from zapomni_db.records.search import ChunkHit, IndexChanges, IndexedChunk
from zapomni_db.runners import JobRunners
from zapomni_db.schema import (
    IndexBuild,
    SchemaSettings,
    describe_builds,
    indexes_building,
    migrate,
    repair_vector_index,
    rewrite_append_only_file,
    wait_for_indexes,
)
from zapomni_db.search_reads import SearchReads
from zapomni_db.stores import GraphStores

__all__ = [
    "DERIVED",
    "AccessStore",
    "ChunkHit",
    "ChunkPlace",
    "ChunkRow",
    "CodeFileRow",
    "CodeStore",
    "Connection",
    "Counts",
    "CredentialsRefused",
    "DatabaseError",
    "DatabaseTarget",
    "DatabaseUnavailable",
    "Derivation",
    "DerivedField",
    "DirectoryUnusable",
    "EmbeddedDatabase",
    "EmbedderClaim",
    "EntityInfo",
    "EntityRow",
    "FileStore",
    "GraphClient",
    "GraphCounts",
    "GraphMissing",
    "GraphStore",
    "GraphStores",
    "IndexBuild",
    "IndexChanges",
    "IndexedChunk",
    "IndexesBuilding",
    "JobRecord",
    "JobRow",
    "JobRunners",
    "JobState",
    "JobStore",
    "KnownEntity",
    "ListedKind",
    "Maintenance",
    "MemoryInfo",
    "MemoryKind",
    "MemoryReads",
    "MemoryRecord",
    "MemoryStatus",
    "MemoryWrites",
    "MentionRow",
    "MentionedEntity",
    "PageKey",
    "PersistenceFailed",
    "QueryFailed",
    "ReachedEntity",
    "ReembedState",
    "RelationEvidence",
    "RelationFact",
    "RelationRow",
    "Role",
    "SchemaMismatch",
    "SchemaSettings",
    "SearchFilter",
    "SearchReads",
    "StoredChunk",
    "StoredFile",
    "StoredMemory",
    "SymbolDefinition",
    "SymbolInfo",
    "SymbolKind",
    "SymbolRow",
    "TokenRow",
    "WriteFence",
    "WriteInterrupted",
    "WriteSuspension",
    "WritesSuspended",
    "access_graph",
    "connect",
    "describe_builds",
    "indexes_building",
    "migrate",
    "read_suspension",
    "repair_vector_index",
    "rewrite_append_only_file",
    "stored_head",
    "wait_for_indexes",
]
