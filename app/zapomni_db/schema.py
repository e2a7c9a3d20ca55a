"""Schema versions and the idempotent migration runner.

A migration is a numbered list of Cypher statements. The database records the version it is at
in a single `(:SchemaVersion {id: 'schema'})` node; `migrate` applies, in order, every migration
above that version and bumps the version after each one, so a run that dies half way resumes
where it stopped. Index statements that find their index already there count as done.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import structlog
from redis.exceptions import ResponseError

from zapomni_db.client import GraphClient
from zapomni_db.errors import DatabaseUnavailable

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class SchemaSettings:
    """What the vector index is built with; fixed for the life of a graph."""

    dimension: int
    ef_construction: int = 200
    ef_runtime: int = 100
    m: int = 16


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]


def migrations(settings: SchemaSettings) -> list[Migration]:
    # The index options are integers from our own configuration, never user input.
    vector_index = (
        "CREATE VECTOR INDEX FOR (c:Chunk) ON (c.embedding) OPTIONS {"
        f"dimension: {int(settings.dimension)}, similarityFunction: 'cosine', M: {int(settings.m)}, "
        f"efConstruction: {int(settings.ef_construction)}, efRuntime: {int(settings.ef_runtime)}}}"
    )
    return [
        Migration(
            1,
            "memories, chunks and their indexes",
            (
                "CREATE INDEX FOR (m:Memory) ON (m.id)",
                "CREATE INDEX FOR (m:Memory) ON (m.source)",
                "CREATE INDEX FOR (m:Memory) ON (m.date_ts)",
                "CREATE INDEX FOR (c:Chunk) ON (c.id)",
                "CREATE INDEX FOR (c:Chunk) ON (c.memory_id)",
                vector_index,
            ),
        ),
        Migration(
            2,
            "visibility sequence for the keyword index",
            ("CREATE INDEX FOR (m:Memory) ON (m.seq)", "MERGE (q:Sequence {id: 'chunks'}) ON CREATE SET q.value = 0"),
        ),
    ]


def latest_version(settings: SchemaSettings) -> int:
    return migrations(settings)[-1].version


async def current_version(client: GraphClient) -> int:
    rows = await client.ro_query("MATCH (s:SchemaVersion {id: 'schema'}) RETURN s.version")
    return int(rows[0][0]) if rows else 0


async def migrate(client: GraphClient, settings: SchemaSettings, *, dry_run: bool = False) -> list[Migration]:
    """Bring the graph to the latest schema version; return the migrations applied (or due, if dry)."""
    version = await current_version(client)
    due = [m for m in migrations(settings) if m.version > version]
    if dry_run:
        return due
    for migration in due:
        for statement in migration.statements:
            await _apply(client, statement)
        await client.query(
            "MERGE (s:SchemaVersion {id: 'schema'}) SET s.version = $version, s.updated_at = timestamp()",
            {"version": migration.version},
        )
        log.info("db.migration.applied", version=migration.version, description=migration.description)
    return due


async def wait_for_indexes(client: GraphClient, timeout_s: float = 600.0) -> None:
    """Indexes build in the background: wait until every one is OPERATIONAL."""
    deadline = time.monotonic() + timeout_s
    while True:
        rows = await client.ro_query("CALL db.indexes() YIELD label, status RETURN label, status")
        pending = [label for label, status in rows if status != "OPERATIONAL"]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise DatabaseUnavailable(f"indexes on {sorted(set(pending))} did not finish building")
        log.info("db.indexes_building", labels=sorted(set(pending)))
        await asyncio.sleep(0.2)


async def _apply(client: GraphClient, statement: str) -> None:
    try:
        await client.query(statement)
    except ResponseError as exc:
        if "already indexed" not in str(exc).lower():
            raise
