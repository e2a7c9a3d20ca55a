"""Opening the configured database (embedded or server), for the engine and for operator commands.

Operator commands such as `zapomni migrate` need the database without the engine on top: the
engine refuses a graph built with another embedder, which is the very thing a re-embed repairs.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from dataclasses import dataclass

from zapomni_core.errors import StorageUnavailable
from zapomni_core.settings import Settings
from zapomni_db import DatabaseUnavailable, EmbeddedDatabase, GraphClient
from zapomni_db.embedded import EmbeddedPaths


@dataclass(frozen=True)
class OpenDatabase:
    client: GraphClient
    location: str  # what to tell a person: the data directory, or falkordb://host:port
    started_here: bool
    embedded: EmbeddedDatabase | None  # None in server mode


def embedded_paths(settings: Settings) -> EmbeddedPaths:
    """The embedded database's layout for ZAPOMNI_DATA_DIR, resolved as `EmbeddedDatabase` resolves it."""
    return EmbeddedPaths(settings.data_dir.expanduser().resolve())


def falkordb_password(settings: Settings) -> str | None:
    return settings.falkordb_password.get_secret_value() if settings.falkordb_password else None


async def open_database(settings: Settings, stack: AsyncExitStack) -> OpenDatabase:
    """Connect (starting the embedded server if needed) and check it answers; `stack` closes it all."""
    try:
        database = await _connect(settings, stack)
        await database.client.ping()
    except DatabaseUnavailable as exc:
        where = (
            f"FalkorDB at FALKORDB_HOST={settings.falkordb_host} FALKORDB_PORT={settings.falkordb_port}"
            if settings.db_mode == "server"
            else f"the embedded FalkorDB in ZAPOMNI_DATA_DIR={settings.data_dir} (see db/redis.log there)"
        )
        cause = f": {exc.__cause__}" if exc.__cause__ else f": {exc}"
        raise StorageUnavailable(f"cannot use {where}{cause}") from exc
    return database


async def _connect(settings: Settings, stack: AsyncExitStack) -> OpenDatabase:
    if settings.db_mode == "server":
        client = GraphClient.over_tcp(
            settings.falkordb_host,
            settings.falkordb_port,
            settings.graph_name,
            password=falkordb_password(settings),
            max_connections=settings.db_pool_size,
        )
        stack.push_async_callback(client.close)
        return OpenDatabase(client, f"falkordb://{settings.falkordb_host}:{settings.falkordb_port}", False, None)
    database = EmbeddedDatabase(settings.data_dir, appendfsync=settings.appendfsync)
    await asyncio.to_thread(database.open)
    stack.push_async_callback(asyncio.to_thread, database.close)
    client = GraphClient.over_unix_socket(
        str(database.socket), settings.graph_name, max_connections=settings.db_pool_size
    )
    stack.push_async_callback(client.close)
    return OpenDatabase(client, str(database.paths.data_dir), database.started_here, database)
