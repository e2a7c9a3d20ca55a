"""A client to the running database for the backup commands: server mode by address, embedded by data directory.

The backup functions take it as they take any synchronous client (`Client`); the operator adapter
never sees the driver. A server that cannot be reached is DatabaseUnavailable, said once here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import redis

from zapomni_db._driver import driver_errors
from zapomni_db.embedded import EmbeddedDatabase
from zapomni_db.server import direct_client

Client = redis.Redis  # what every function of `zapomni_db.backup` that talks to a server takes


@contextlib.contextmanager
def server_client(*, host: str, port: int, password: str | None, timeout_s: float) -> Iterator[Client]:
    """A client to the server at host:port that has answered a PING; DatabaseUnavailable when it did not."""
    client = direct_client(host=host, port=port, password=password, timeout_s=timeout_s)
    try:
        with driver_errors(timeout_s):
            client.ping()
        yield client
    finally:
        client.close()


@contextlib.contextmanager
def embedded_client(data_dir: Path, *, appendfsync: str, timeout_s: float) -> Iterator[Client]:
    """A client to the embedded server of `data_dir`, started or attached to as a server process would."""
    database = EmbeddedDatabase(data_dir, appendfsync=appendfsync)
    database.open()
    try:
        client = direct_client(unix_socket=database.socket, timeout_s=timeout_s)
        try:
            yield client
        finally:
            client.close()
    finally:
        database.close()
