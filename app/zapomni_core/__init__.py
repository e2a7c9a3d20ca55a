"""Zapomni's engine, as the adapters (MCP, CLI, operator commands, HTTP) see it: everything here, nothing else.

`open_core(settings)` builds `ZapomniCore` once; its services take the request models below and
return the reply models. Every failure is a `ZapomniError` (the tree: zapomni_core/errors.py). The
modules behind this face are the engine's own business and may change without notice.
"""

from zapomni_core.access.grants import (
    ROLES,
    Grant,
    Role,
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
from zapomni_core.reembed import (
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

__all__ = [
    "ACTIVE_STATES",
    "DEFAULT_BATCH_SIZE",
    "EXPIRY_RULE",
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
    "ImportReport",
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
    "open_core",
    "open_database",
    "open_health_checker",
    "package_version",
    "plan_reembed",
    "reembed",
    "route_stdlib_logs",
    "sanitise",
    "schema_status",
]
