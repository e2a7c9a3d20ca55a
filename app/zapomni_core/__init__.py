"""Zapomni's engine, as the adapters (MCP, CLI, operator commands, HTTP) see it: everything here, nothing else.

`open_core(settings)` builds `ZapomniCore` once; its services take the request models below and
return the reply models. Every failure is a `ZapomniError` (the tree: zapomni_core/errors.py). The
modules behind this face are the engine's own business and may change without notice.

The names are imported when first used (PEP 562): `zapomni serve` reads its settings and starts the embedded
database before it loads the engine, the MCP SDK and the drivers (1.8 s of imports at every start).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zapomni_core.access.grants import (
        ROLES,
        Grant,
        Role,
    )
    from zapomni_core.access.oauth import (
        OAuthRefused,
        grantable,
        is_refresh_token,
    )
    from zapomni_core.access.replies import (
        CreatedToken,
        RevokedToken,
        TokenInfo,
        TokenList,
        TokenState,
    )
    from zapomni_core.access.requests import (
        EXPIRY_RULE,
        TOKEN_NAME_RULE,
        CreateTokenRequest,
        RevokeTokenRequest,
    )
    from zapomni_core.code.replies import (
        CallGraph,
        CodeNeighbours,
        SymbolList,
        SymbolOut,
    )
    from zapomni_core.code.requests import (
        MAX_SYMBOLS,
        FindSymbolRequest,
        SymbolRequest,
    )
    from zapomni_core.context import (
        RequestContext,
    )
    from zapomni_core.database import (
        database_target,
        embedded_paths,
        falkordb_password,
        open_database,
        withdraw_index_proof,
    )
    from zapomni_core.early_start import (
        start_database_early,
    )
    from zapomni_core.embedders import (
        build_embedder,
    )
    from zapomni_core.engine import (
        ZapomniCore,
    )
    from zapomni_core.errors import (
        Cancelled,
        ConfigurationError,
        Conflict,
        DatabaseInterrupted,
        EmbedderUnavailable,
        ExtractorUnavailable,
        InvalidRequest,
        NotFound,
        ShuttingDown,
        StorageFailed,
        StorageFull,
        StorageUnavailable,
        ZapomniError,
    )
    from zapomni_core.files.replies import (
        WalkQueued,
    )
    from zapomni_core.files.requests import (
        IndexCodebaseRequest,
        IngestPathRequest,
    )
    from zapomni_core.graph.replies import (
        BuildGraphResult,
        ConnectedEntity,
        GraphOverview,
        GraphStatus,
        RelatedEntity,
        RelatedResult,
    )
    from zapomni_core.graph.requests import (
        BuildGraphRequest,
        GetRelatedRequest,
        GraphOverviewRequest,
        GraphStatusRequest,
    )
    from zapomni_core.health import (
        HealthChecker,
        Report,
        open_health_checker,
        sanitise,
    )
    from zapomni_core.jobs import (
        CancelJobRequest,
        CancelJobResult,
        JobInfo,
        JobList,
        JobStatusRequest,
        ListJobsRequest,
        for_remote,
    )
    from zapomni_core.jobs.requests import ACTIVE_STATES, MAX_JOBS, MAX_WAIT_S, JobState
    from zapomni_core.logs import (
        configure_logging,
        route_stdlib_logs,
    )
    from zapomni_core.memories.early_search import EarlySearch
    from zapomni_core.memories.replies import (
        AddMemoryResult,
        ChunkOut,
        DeleteMemoryResult,
        FindUpdatesResult,
        Linked,
        LinkedMemory,
        MemoryChunks,
        MemoryDetail,
        MemoryPage,
        SearchResult,
        UpdateMemoryResult,
    )
    from zapomni_core.memories.requests import (
        MAX_DELETE_IDS,
        MAX_LIMIT,
        MAX_PAGE,
        MAX_TEXT_BYTES,
        AddMemoryRequest,
        DeleteMemoryRequest,
        FindUpdatesRequest,
        GetMemoryRequest,
        ListMemoriesRequest,
        SearchRequest,
        UpdateMemoryRequest,
    )
    from zapomni_core.migrations import (
        Migration,
        SchemaStatus,
        apply_migrations,
        configured_embedder,
        schema_status,
    )
    from zapomni_core.progress import (
        Progress,
        ProgressSink,
    )
    from zapomni_core.reembedding import (
        DEFAULT_BATCH_SIZE,
        ReembedPlan,
        plan_reembed,
        reembed,
    )
    from zapomni_core.runtime import (
        RuntimeInfo,
        open_core,
    )
    from zapomni_core.search.types import (
        SEARCH_MODES,
    )
    from zapomni_core.settings import (
        Settings,
        describe_settings_error,
    )
    from zapomni_core.transfer import (
        ExportReport,
        ImportReport,
        TransferError,
    )
    from zapomni_core.transfer.format import (
        IMPORTING,
    )
    from zapomni_core.transfer.import_job import (
        ImportQueued,
    )
    from zapomni_core.transfer.importer import (
        ImportPreview,
    )
    from zapomni_core.transfer.requests import (
        ImportSourceRequest,
    )
    from zapomni_core.transfer.source_import import (
        SourceImport,
    )
    from zapomni_core.transfer.sources import (
        IMPORT_FORMATS,
    )
    from zapomni_core.validation import (
        UUID_PATTERN,
        WORKSPACE_RULE,
        NoArguments,
    )
    from zapomni_core.workspaces.replies import (
        DayCount,
        DeleteWorkspaceResult,
        Growth,
        Stats,
        WorkspaceList,
    )
    from zapomni_core.workspaces.requests import (
        DeleteWorkspaceRequest,
        StatsRequest,
    )
    from zapomni_db.version import (
        package_version,
    )

# Where each name lives.
_HOMES = {
    "OAuthRefused": "zapomni_core.access.oauth",
    "grantable": "zapomni_core.access.oauth",
    "is_refresh_token": "zapomni_core.access.oauth",
    "start_database_early": "zapomni_core.early_start",
    "ROLES": "zapomni_core.access.grants",
    "Grant": "zapomni_core.access.grants",
    "Role": "zapomni_core.access.grants",
    "CreatedToken": "zapomni_core.access.replies",
    "RevokedToken": "zapomni_core.access.replies",
    "TokenInfo": "zapomni_core.access.replies",
    "TokenList": "zapomni_core.access.replies",
    "TokenState": "zapomni_core.access.replies",
    "EXPIRY_RULE": "zapomni_core.access.requests",
    "TOKEN_NAME_RULE": "zapomni_core.access.requests",
    "CreateTokenRequest": "zapomni_core.access.requests",
    "RevokeTokenRequest": "zapomni_core.access.requests",
    "CallGraph": "zapomni_core.code.replies",
    "CodeNeighbours": "zapomni_core.code.replies",
    "SymbolList": "zapomni_core.code.replies",
    "SymbolOut": "zapomni_core.code.replies",
    "MAX_SYMBOLS": "zapomni_core.code.requests",
    "FindSymbolRequest": "zapomni_core.code.requests",
    "SymbolRequest": "zapomni_core.code.requests",
    "RequestContext": "zapomni_core.context",
    "database_target": "zapomni_core.database",
    "embedded_paths": "zapomni_core.database",
    "falkordb_password": "zapomni_core.database",
    "open_database": "zapomni_core.database",
    "withdraw_index_proof": "zapomni_core.database",
    "build_embedder": "zapomni_core.embedders",
    "ZapomniCore": "zapomni_core.engine",
    "Cancelled": "zapomni_core.errors",
    "ConfigurationError": "zapomni_core.errors",
    "Conflict": "zapomni_core.errors",
    "DatabaseInterrupted": "zapomni_core.errors",
    "EmbedderUnavailable": "zapomni_core.errors",
    "ExtractorUnavailable": "zapomni_core.errors",
    "InvalidRequest": "zapomni_core.errors",
    "NotFound": "zapomni_core.errors",
    "ShuttingDown": "zapomni_core.errors",
    "StorageFailed": "zapomni_core.errors",
    "StorageFull": "zapomni_core.errors",
    "StorageUnavailable": "zapomni_core.errors",
    "ZapomniError": "zapomni_core.errors",
    "WalkQueued": "zapomni_core.files.replies",
    "IndexCodebaseRequest": "zapomni_core.files.requests",
    "IngestPathRequest": "zapomni_core.files.requests",
    "BuildGraphResult": "zapomni_core.graph.replies",
    "ConnectedEntity": "zapomni_core.graph.replies",
    "GraphOverview": "zapomni_core.graph.replies",
    "GraphStatus": "zapomni_core.graph.replies",
    "RelatedEntity": "zapomni_core.graph.replies",
    "RelatedResult": "zapomni_core.graph.replies",
    "BuildGraphRequest": "zapomni_core.graph.requests",
    "GetRelatedRequest": "zapomni_core.graph.requests",
    "GraphOverviewRequest": "zapomni_core.graph.requests",
    "GraphStatusRequest": "zapomni_core.graph.requests",
    "HealthChecker": "zapomni_core.health",
    "Report": "zapomni_core.health",
    "open_health_checker": "zapomni_core.health",
    "sanitise": "zapomni_core.health",
    "CancelJobRequest": "zapomni_core.jobs",
    "CancelJobResult": "zapomni_core.jobs",
    "JobInfo": "zapomni_core.jobs",
    "JobList": "zapomni_core.jobs",
    "JobStatusRequest": "zapomni_core.jobs",
    "ListJobsRequest": "zapomni_core.jobs",
    "for_remote": "zapomni_core.jobs",
    "ACTIVE_STATES": "zapomni_core.jobs.requests",
    "MAX_JOBS": "zapomni_core.jobs.requests",
    "MAX_WAIT_S": "zapomni_core.jobs.requests",
    "JobState": "zapomni_core.jobs.requests",
    "configure_logging": "zapomni_core.logs",
    "route_stdlib_logs": "zapomni_core.logs",
    "EarlySearch": "zapomni_core.memories.early_search",
    "AddMemoryResult": "zapomni_core.memories.replies",
    "ChunkOut": "zapomni_core.memories.replies",
    "DeleteMemoryResult": "zapomni_core.memories.replies",
    "FindUpdatesResult": "zapomni_core.memories.replies",
    "Linked": "zapomni_core.memories.replies",
    "LinkedMemory": "zapomni_core.memories.replies",
    "MemoryChunks": "zapomni_core.memories.replies",
    "MemoryDetail": "zapomni_core.memories.replies",
    "MemoryPage": "zapomni_core.memories.replies",
    "SearchResult": "zapomni_core.memories.replies",
    "UpdateMemoryResult": "zapomni_core.memories.replies",
    "MAX_DELETE_IDS": "zapomni_core.memories.requests",
    "MAX_LIMIT": "zapomni_core.memories.requests",
    "MAX_PAGE": "zapomni_core.memories.requests",
    "MAX_TEXT_BYTES": "zapomni_core.memories.requests",
    "AddMemoryRequest": "zapomni_core.memories.requests",
    "DeleteMemoryRequest": "zapomni_core.memories.requests",
    "FindUpdatesRequest": "zapomni_core.memories.requests",
    "GetMemoryRequest": "zapomni_core.memories.requests",
    "ListMemoriesRequest": "zapomni_core.memories.requests",
    "SearchRequest": "zapomni_core.memories.requests",
    "UpdateMemoryRequest": "zapomni_core.memories.requests",
    "Migration": "zapomni_core.migrations",
    "SchemaStatus": "zapomni_core.migrations",
    "apply_migrations": "zapomni_core.migrations",
    "configured_embedder": "zapomni_core.migrations",
    "schema_status": "zapomni_core.migrations",
    "Progress": "zapomni_core.progress",
    "ProgressSink": "zapomni_core.progress",
    "DEFAULT_BATCH_SIZE": "zapomni_core.reembedding",
    "ReembedPlan": "zapomni_core.reembedding",
    "plan_reembed": "zapomni_core.reembedding",
    "reembed": "zapomni_core.reembedding",
    "RuntimeInfo": "zapomni_core.runtime",
    "open_core": "zapomni_core.runtime",
    "SEARCH_MODES": "zapomni_core.search.types",
    "Settings": "zapomni_core.settings",
    "describe_settings_error": "zapomni_core.settings",
    "ExportReport": "zapomni_core.transfer",
    "ImportReport": "zapomni_core.transfer",
    "TransferError": "zapomni_core.transfer",
    "ImportSourceRequest": "zapomni_core.transfer.requests",
    "ImportPreview": "zapomni_core.transfer.importer",
    "IMPORTING": "zapomni_core.transfer.format",
    "ImportQueued": "zapomni_core.transfer.import_job",
    "SourceImport": "zapomni_core.transfer.source_import",
    "IMPORT_FORMATS": "zapomni_core.transfer.sources",
    "UUID_PATTERN": "zapomni_core.validation",
    "WORKSPACE_RULE": "zapomni_core.validation",
    "NoArguments": "zapomni_core.validation",
    "DayCount": "zapomni_core.workspaces.replies",
    "DeleteWorkspaceResult": "zapomni_core.workspaces.replies",
    "Growth": "zapomni_core.workspaces.replies",
    "Stats": "zapomni_core.workspaces.replies",
    "WorkspaceList": "zapomni_core.workspaces.replies",
    "DeleteWorkspaceRequest": "zapomni_core.workspaces.requests",
    "StatsRequest": "zapomni_core.workspaces.requests",
    "package_version": "zapomni_db.version",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once
    return value


__all__ = [
    "ACTIVE_STATES",
    "DEFAULT_BATCH_SIZE",
    "EXPIRY_RULE",
    "IMPORTING",
    "IMPORT_FORMATS",
    "MAX_DELETE_IDS",
    "MAX_JOBS",
    "MAX_LIMIT",
    "MAX_PAGE",
    "MAX_SYMBOLS",
    "MAX_TEXT_BYTES",
    "MAX_WAIT_S",
    "ROLES",
    "SEARCH_MODES",
    "TOKEN_NAME_RULE",
    "UUID_PATTERN",
    "WORKSPACE_RULE",
    "AddMemoryRequest",
    "AddMemoryResult",
    "BuildGraphRequest",
    "BuildGraphResult",
    "CallGraph",
    "CancelJobRequest",
    "CancelJobResult",
    "Cancelled",
    "ChunkOut",
    "CodeNeighbours",
    "ConfigurationError",
    "Conflict",
    "ConnectedEntity",
    "CreateTokenRequest",
    "CreatedToken",
    "DatabaseInterrupted",
    "DayCount",
    "DeleteMemoryRequest",
    "DeleteMemoryResult",
    "DeleteWorkspaceRequest",
    "DeleteWorkspaceResult",
    "EarlySearch",
    "EmbedderUnavailable",
    "ExportReport",
    "ExtractorUnavailable",
    "FindSymbolRequest",
    "FindUpdatesRequest",
    "FindUpdatesResult",
    "GetMemoryRequest",
    "GetRelatedRequest",
    "Grant",
    "GraphOverview",
    "GraphOverviewRequest",
    "GraphStatus",
    "GraphStatusRequest",
    "Growth",
    "HealthChecker",
    "ImportPreview",
    "ImportQueued",
    "ImportReport",
    "ImportSourceRequest",
    "IndexCodebaseRequest",
    "IngestPathRequest",
    "InvalidRequest",
    "JobInfo",
    "JobList",
    "JobState",
    "JobStatusRequest",
    "Linked",
    "LinkedMemory",
    "ListJobsRequest",
    "ListMemoriesRequest",
    "MemoryChunks",
    "MemoryDetail",
    "MemoryPage",
    "Migration",
    "NoArguments",
    "NotFound",
    "OAuthRefused",
    "Progress",
    "ProgressSink",
    "ReembedPlan",
    "RelatedEntity",
    "RelatedResult",
    "Report",
    "RequestContext",
    "RevokeTokenRequest",
    "RevokedToken",
    "Role",
    "RuntimeInfo",
    "SchemaStatus",
    "SearchRequest",
    "SearchResult",
    "Settings",
    "ShuttingDown",
    "SourceImport",
    "Stats",
    "StatsRequest",
    "StorageFailed",
    "StorageFull",
    "StorageUnavailable",
    "SymbolList",
    "SymbolOut",
    "SymbolRequest",
    "TokenInfo",
    "TokenList",
    "TokenState",
    "TransferError",
    "UpdateMemoryRequest",
    "UpdateMemoryResult",
    "WalkQueued",
    "WorkspaceList",
    "ZapomniCore",
    "ZapomniError",
    "apply_migrations",
    "build_embedder",
    "configure_logging",
    "configured_embedder",
    "database_target",
    "describe_settings_error",
    "embedded_paths",
    "falkordb_password",
    "for_remote",
    "grantable",
    "is_refresh_token",
    "open_core",
    "open_database",
    "open_health_checker",
    "package_version",
    "plan_reembed",
    "reembed",
    "route_stdlib_logs",
    "sanitise",
    "schema_status",
    "start_database_early",
    "withdraw_index_proof",
]
