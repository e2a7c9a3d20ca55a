"""One embedded FalkorDB per test worker, and a graph name per test in it (see tests/conftest.py).

Starting a FalkorDB (keeper + redis-server) costs a test 1-2 s; opening a fresh graph on a running one costs
0.02-0.04 s. Engines opened on the shared data directory attach to the running server as a second Zapomni
process would; each test's graphs are dropped when it ends, so the database stays small for the next.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

from zapomni_db.embedded import EmbeddedDatabase


@dataclass(frozen=True)
class SharedDatabase:
    database: EmbeddedDatabase

    @property
    def data_dir(self) -> Path:
        return self.database.paths.data_dir

    @classmethod
    @contextmanager
    def started(cls) -> Iterator[SharedDatabase]:
        path = Path(tempfile.mkdtemp(prefix="zw-", dir="/tmp"))
        database = EmbeddedDatabase(path)
        database.open()
        try:
            yield cls(database)
        finally:
            database.close()
            shutil.rmtree(path, ignore_errors=True)

    @contextmanager
    def graph(self) -> Iterator[str]:
        """A graph name no other test uses (a fixed length, so that no name is the prefix of another)."""
        name = f"t{uuid.uuid4().hex[:16]}"
        try:
            yield name
        finally:
            self.drop(name)

    def drop(self, name: str) -> None:
        """Every key of the graph `name`: its workspaces' graphs, and the keys stored beside them."""
        with redis.Redis(unix_socket_path=str(self.database.socket), socket_timeout=60) as client:
            for key in client.scan_iter(match=f"*{name}*", count=1000):
                if client.type(key) == b"graphdata":
                    client.execute_command("GRAPH.DELETE", key)
                else:
                    client.delete(key)
