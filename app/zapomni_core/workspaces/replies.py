"""The workspace tools' replies: what is stored where, and the store's vital signs."""

from __future__ import annotations

from pydantic import BaseModel, Field

from zapomni_core.embedders.base import CacheBackend


class WorkspaceInfo(BaseModel):
    name: str
    memories: int
    chunks: int


class WorkspaceList(BaseModel):
    workspaces: list[WorkspaceInfo]
    default: str = Field(description="The workspace tools use when none is given.")


class DeleteWorkspaceResult(BaseModel):
    name: str
    deleted_memories: int
    deleted_chunks: int


class Stats(BaseModel):
    workspace: str
    total_memories: int
    total_chunks: int
    workspaces: int = Field(description="Workspaces in this store (that the caller's token may use, over HTTP).")
    database_size_mb: float | None = Field(
        description="Memory used by the whole database (every workspace); null for a token limited to some workspaces."
    )
    graph_name: str
    embedder: str
    embedding_dimension: int
    avg_query_latency_ms: float | None = Field(description="Mean search latency in this process; null before any.")
    cache_hit_rate: float | None = Field(description="Embedding cache hits / lookups in this process; null before any.")
    cache_backend: CacheBackend = Field(description="Where embeddings are cached.")
    jobs: dict[str, int] = Field(
        default_factory=dict,
        description="This workspace's background jobs by state (pending, running, completed, completed_with_errors, "
        "failed, cancelled); list_jobs shows them.",
    )
    entities: int = Field(0, description="Knowledge-graph entities in this workspace.")
    relations: int = Field(0, description="Knowledge-graph relation edges (one per chunk stating a relation).")
    extraction_pending: int = Field(
        0, description="Memories waiting for entity extraction (the graph's queue); graph_status has more."
    )
    uptime_s: float
    disk_free_mb: float | None = Field(
        None, description="Free space on the disk of the data directory (embedded database); null in server mode."
    )
    disk_warning: str | None = Field(
        None, description="Set while free space is below ZAPOMNI_MIN_FREE_MB: writes are refused, reads go on."
    )
    writes_held: str | None = Field(
        None,
        description="Set while the database builds this workspace's indexes after loading the store (the build's "
        "progress): writes are refused until it ends, reads go on.",
    )


class DayCount(BaseModel):
    day: str = Field(description="A UTC day, YYYY-MM-DD.")
    memories: int = Field(description="Memories added that day (those still stored).")


class Growth(BaseModel):
    workspace: str
    days: list[DayCount] = Field(description="Days with any memory added, oldest first.")
