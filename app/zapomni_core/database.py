"""Opening the configured database (embedded or server), for the engine and for operator commands.

Operator commands such as `zapomni migrate` need the database without the engine on top: the
engine refuses a graph built with another embedder, which is the very thing a re-embed repairs.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

from zapomni_core.errors import StorageUnavailable
from zapomni_core.search.index_files import Presence
from zapomni_core.search.keyword_index import KeywordIndexDirs
from zapomni_core.settings import Settings
from zapomni_db import (
    Connection,
    CredentialsRefused,
    DatabaseTarget,
    DatabaseUnavailable,
    DirectoryUnusable,
    EmbeddedDatabase,
    GraphClient,
    connect,
    reachable,
)
from zapomni_db.embedded_layout import EmbeddedPaths


@dataclass(frozen=True)
class OpenDatabase:
    connection: Connection
    client: GraphClient  # the default workspace's graph
    location: str  # what to tell a person: the data directory, or falkordb://host:port
    started_here: bool
    embedded: EmbeddedDatabase | None  # None in server mode
    # The keyword indexes kept beside the embedded database, and this process's presence among their writers.
    keyword_dirs: KeywordIndexDirs | None = None
    presence: Presence | None = None


def embedded_paths(settings: Settings) -> EmbeddedPaths:
    """The embedded database's layout for ZAPOMNI_DATA_DIR, resolved as `EmbeddedDatabase` resolves it."""
    return EmbeddedPaths(settings.data_dir.expanduser().resolve())


def database_disk(settings: Settings) -> Path | None:
    """Where this process sees the database's files, to watch their disk: the embedded data directory, or
    in server mode FALKORDB_DATA_DIR when set (the standalone container and the compose stack's zapomni
    service mount FalkorDB's volume there). None: a server whose disk this process cannot see."""
    if settings.db_mode == "server":
        return settings.falkordb_data_dir.expanduser() if settings.falkordb_data_dir else None
    return embedded_paths(settings).data_dir


def withdraw_index_proof(settings: Settings) -> None:
    """For what replaces the embedded store's files (a restore, its undo): the keyword indexes beside them say
    nothing of the new files, so no search may be answered from them before the database has loaded them."""
    if settings.db_mode == "embedded":
        KeywordIndexDirs.beside(embedded_paths(settings).data_dir).forget_proof()


def falkordb_password(settings: Settings) -> str | None:
    return settings.falkordb_password.get_secret_value() if settings.falkordb_password else None


async def open_database(settings: Settings, stack: AsyncExitStack) -> OpenDatabase:
    """Connect (starting the embedded server if needed) and check it answers; `stack` closes it all."""
    try:
        database = await _connect(settings, stack)
        await database.client.ping()
    except DirectoryUnusable as exc:
        raise StorageUnavailable(f"ZAPOMNI_DATA_DIR={settings.data_dir} cannot be used: {exc}") from exc
    except DatabaseUnavailable as exc:
        where = (
            f"FalkorDB at FALKORDB_HOST={settings.falkordb_host} FALKORDB_PORT={settings.falkordb_port}"
            if settings.db_mode == "server"
            else f"the embedded FalkorDB in ZAPOMNI_DATA_DIR={settings.data_dir} (see db/redis.log there)"
        )
        cause = f": {exc.__cause__}" if exc.__cause__ else f": {exc}"
        if isinstance(exc, CredentialsRefused):
            cause = f": {_credentials_hint(settings)}"
        raise StorageUnavailable(f"cannot use {where}{cause}") from exc
    return database


def _credentials_hint(settings: Settings) -> str:
    if settings.falkordb_password is None:
        return (
            "it requires a password and FALKORDB_PASSWORD is not set (a client of the compose stack mounts the "
            "stack's password: -v zapomni_secrets:/secrets:ro)"
        )
    return "it refused the password in FALKORDB_PASSWORD"


async def _connect(settings: Settings, stack: AsyncExitStack) -> OpenDatabase:
    embedded: EmbeddedDatabase | None = None
    if settings.db_mode == "server":
        target = database_target(settings)
        location = f"falkordb://{settings.falkordb_host}:{settings.falkordb_port}"
        await reachable(target)  # a server that is down is said at once (the embedded one was just waited for)
    else:
        embedded = EmbeddedDatabase.for_directory(settings.data_dir, appendfsync=settings.appendfsync)
        await asyncio.to_thread(embedded.open)
        stack.push_async_callback(asyncio.to_thread, embedded.close)
        target = DatabaseTarget(
            location_label := str(embedded.paths.data_dir), settings.graph_name, socket=embedded.socket
        )
        location = location_label
    connection = connect(
        target,
        max_connections=settings.db_pool_size,
        recovery_timeout_s=settings.db_recovery_s,
        revive=embedded.revive if embedded else None,
    )
    stack.push_async_callback(connection.close)
    client = GraphClient(connection, settings.graph_name)
    if embedded is None:
        return OpenDatabase(connection, client, location, False, None)
    dirs = KeywordIndexDirs.beside(embedded.paths.data_dir)
    presence = await dirs.arrive()  # before this process writes anything (decision 0045)
    stack.callback(presence.end)
    return OpenDatabase(connection, client, location, embedded.started_here, embedded, dirs, presence)


def database_target(settings: Settings) -> DatabaseTarget:
    """Where the configured database answers (the embedded server's socket path, whether it runs or not)."""
    if settings.db_mode == "server":
        return DatabaseTarget(
            label=f"FalkorDB at {settings.falkordb_host}:{settings.falkordb_port}",
            graph_name=settings.graph_name,
            host=settings.falkordb_host,
            port=settings.falkordb_port,
            password=falkordb_password(settings),
        )
    # Resolved as the embedded database resolves it: a long path's socket name is a hash of it.
    return DatabaseTarget(
        label=f"the embedded FalkorDB of ZAPOMNI_DATA_DIR={settings.data_dir}",
        graph_name=settings.graph_name,
        socket=embedded_paths(settings).socket,
    )
