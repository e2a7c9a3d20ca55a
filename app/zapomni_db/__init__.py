"""Storage layer: connections, the stores of a graph, schema and migrations, the embedded server.

Nothing here imports from `zapomni_core` or `zapomni_mcp`: the layers point one way. Driver
exceptions never leave this package; `zapomni_db.errors` describes the tree.

The names below are imported when first used (PEP 562): the keeper, a process started by every first client,
needs a few of the modules and not the driver stack the stores stand on (0.6 s of CPU a start).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zapomni_db.access import (
        AccessStore,
        access_graph,
    )
    from zapomni_db.client import GraphClient
    from zapomni_db.code import CodeStore
    from zapomni_db.connection import (
        Connection,
        DatabaseTarget,
        WriteFence,
        connect,
        reachable,
    )
    from zapomni_db.disk_state import (
        WriteSuspension,
        read_suspension,
    )
    from zapomni_db.embedded import EmbeddedDatabase, open_early
    from zapomni_db.errors import (
        CredentialsRefused,
        DatabaseError,
        DatabaseUnavailable,
        DirectoryUnusable,
        GraphMissing,
        IndexesBuilding,
        PersistenceFailed,
        QueryFailed,
        QueryTimedOut,
        SchemaMismatch,
        VectorIndexBuilding,
        WriteInterrupted,
        WritesSuspended,
    )
    from zapomni_db.files import FileStore
    from zapomni_db.graph import GraphStore
    from zapomni_db.jobs import JobStore
    from zapomni_db.maintenance import (
        DERIVED,
        Derivation,
        DerivedField,
        Maintenance,
    )
    from zapomni_db.memories import MemoryWrites
    from zapomni_db.memory_reads import (
        MemoryReads,
        stored_head,
    )
    from zapomni_db.oauth import OAuthStore
    from zapomni_db.records.access import (
        Role,
        TokenRow,
    )
    from zapomni_db.records.code import (
        CodeFileRow,
        SymbolDefinition,
        SymbolInfo,
        SymbolKind,
        SymbolRow,
    )
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
    from zapomni_db.records.jobs import (
        JobRecord,
        JobRow,
        JobState,
    )
    from zapomni_db.records.maintenance import (
        Counts,
        EmbedderClaim,
        ReembedState,
    )
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
    from zapomni_db.records.oauth import GrantSecrets, IssuedCode, OAuthClientRow, PendingAuthorization
    from zapomni_db.records.search import (
        Candidates,
        ChunkHit,
        Comparable,
        IndexChanges,
        IndexedChunk,
    )
    from zapomni_db.records.updates import (
        LinkRow,
        StoredLink,
    )
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
    from zapomni_db.updates import UpdateLinks

# Where each name lives.
_HOMES = {
    "AccessStore": "zapomni_db.access",
    "access_graph": "zapomni_db.access",
    "GraphClient": "zapomni_db.client",
    "CodeStore": "zapomni_db.code",
    "Connection": "zapomni_db.connection",
    "DatabaseTarget": "zapomni_db.connection",
    "WriteFence": "zapomni_db.connection",
    "connect": "zapomni_db.connection",
    "reachable": "zapomni_db.connection",
    "WriteSuspension": "zapomni_db.disk_state",
    "read_suspension": "zapomni_db.disk_state",
    "EmbeddedDatabase": "zapomni_db.embedded",
    "open_early": "zapomni_db.embedded",
    "CredentialsRefused": "zapomni_db.errors",
    "DatabaseError": "zapomni_db.errors",
    "DatabaseUnavailable": "zapomni_db.errors",
    "DirectoryUnusable": "zapomni_db.errors",
    "GraphMissing": "zapomni_db.errors",
    "IndexesBuilding": "zapomni_db.errors",
    "PersistenceFailed": "zapomni_db.errors",
    "QueryFailed": "zapomni_db.errors",
    "QueryTimedOut": "zapomni_db.errors",
    "VectorIndexBuilding": "zapomni_db.errors",
    "SchemaMismatch": "zapomni_db.errors",
    "WriteInterrupted": "zapomni_db.errors",
    "WritesSuspended": "zapomni_db.errors",
    "FileStore": "zapomni_db.files",
    "GraphStore": "zapomni_db.graph",
    "JobStore": "zapomni_db.jobs",
    "DERIVED": "zapomni_db.maintenance",
    "Derivation": "zapomni_db.maintenance",
    "DerivedField": "zapomni_db.maintenance",
    "Maintenance": "zapomni_db.maintenance",
    "MemoryWrites": "zapomni_db.memories",
    "OAuthStore": "zapomni_db.oauth",
    "GrantSecrets": "zapomni_db.records.oauth",
    "IssuedCode": "zapomni_db.records.oauth",
    "OAuthClientRow": "zapomni_db.records.oauth",
    "PendingAuthorization": "zapomni_db.records.oauth",
    "MemoryReads": "zapomni_db.memory_reads",
    "stored_head": "zapomni_db.memory_reads",
    "Role": "zapomni_db.records.access",
    "TokenRow": "zapomni_db.records.access",
    "CodeFileRow": "zapomni_db.records.code",
    "SymbolDefinition": "zapomni_db.records.code",
    "SymbolInfo": "zapomni_db.records.code",
    "SymbolKind": "zapomni_db.records.code",
    "SymbolRow": "zapomni_db.records.code",
    "StoredFile": "zapomni_db.records.files",
    "EntityInfo": "zapomni_db.records.graph",
    "EntityRow": "zapomni_db.records.graph",
    "GraphCounts": "zapomni_db.records.graph",
    "KnownEntity": "zapomni_db.records.graph",
    "MentionedEntity": "zapomni_db.records.graph",
    "MentionRow": "zapomni_db.records.graph",
    "ReachedEntity": "zapomni_db.records.graph",
    "RelationEvidence": "zapomni_db.records.graph",
    "RelationFact": "zapomni_db.records.graph",
    "RelationRow": "zapomni_db.records.graph",
    "JobRecord": "zapomni_db.records.jobs",
    "JobRow": "zapomni_db.records.jobs",
    "JobState": "zapomni_db.records.jobs",
    "Counts": "zapomni_db.records.maintenance",
    "EmbedderClaim": "zapomni_db.records.maintenance",
    "ReembedState": "zapomni_db.records.maintenance",
    "ChunkPlace": "zapomni_db.records.memories",
    "ChunkRow": "zapomni_db.records.memories",
    "ListedKind": "zapomni_db.records.memories",
    "MemoryInfo": "zapomni_db.records.memories",
    "MemoryKind": "zapomni_db.records.memories",
    "MemoryRecord": "zapomni_db.records.memories",
    "MemoryStatus": "zapomni_db.records.memories",
    "PageKey": "zapomni_db.records.memories",
    "SearchFilter": "zapomni_db.records.memories",
    "StoredChunk": "zapomni_db.records.memories",
    "StoredMemory": "zapomni_db.records.memories",
    "Candidates": "zapomni_db.records.search",
    "ChunkHit": "zapomni_db.records.search",
    "Comparable": "zapomni_db.records.search",
    "IndexChanges": "zapomni_db.records.search",
    "IndexedChunk": "zapomni_db.records.search",
    "LinkRow": "zapomni_db.records.updates",
    "StoredLink": "zapomni_db.records.updates",
    "JobRunners": "zapomni_db.runners",
    "IndexBuild": "zapomni_db.schema",
    "SchemaSettings": "zapomni_db.schema",
    "describe_builds": "zapomni_db.schema",
    "indexes_building": "zapomni_db.schema",
    "migrate": "zapomni_db.schema",
    "repair_vector_index": "zapomni_db.schema",
    "rewrite_append_only_file": "zapomni_db.schema",
    "wait_for_indexes": "zapomni_db.schema",
    "SearchReads": "zapomni_db.search_reads",
    "GraphStores": "zapomni_db.stores",
    "UpdateLinks": "zapomni_db.updates",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once
    return value


__all__ = [
    "DERIVED",
    "AccessStore",
    "Candidates",
    "ChunkHit",
    "ChunkPlace",
    "ChunkRow",
    "CodeFileRow",
    "CodeStore",
    "Comparable",
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
    "GrantSecrets",
    "GraphClient",
    "GraphCounts",
    "GraphMissing",
    "GraphStore",
    "GraphStores",
    "IndexBuild",
    "IndexChanges",
    "IndexedChunk",
    "IndexesBuilding",
    "IssuedCode",
    "JobRecord",
    "JobRow",
    "JobRunners",
    "JobState",
    "JobStore",
    "KnownEntity",
    "LinkRow",
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
    "OAuthClientRow",
    "OAuthStore",
    "PageKey",
    "PendingAuthorization",
    "PersistenceFailed",
    "QueryFailed",
    "QueryTimedOut",
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
    "StoredLink",
    "StoredMemory",
    "SymbolDefinition",
    "SymbolInfo",
    "SymbolKind",
    "SymbolRow",
    "TokenRow",
    "UpdateLinks",
    "VectorIndexBuilding",
    "WriteFence",
    "WriteInterrupted",
    "WriteSuspension",
    "WritesSuspended",
    "access_graph",
    "connect",
    "describe_builds",
    "indexes_building",
    "migrate",
    "open_early",
    "reachable",
    "read_suspension",
    "repair_vector_index",
    "rewrite_append_only_file",
    "stored_head",
    "wait_for_indexes",
]
