"""Fixtures of the end-to-end tests; the processes themselves are in tests/processes.py."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.processes import RawServer


@pytest.fixture
def raw_server(data_dir: Path, tmp_path: Path) -> Iterator[Callable[[], RawServer]]:
    servers: list[RawServer] = []

    def start() -> RawServer:
        server = RawServer(data_dir, tmp_path / f"stderr-{len(servers)}.log")
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.kill()


@pytest.fixture(scope="module")
def store() -> Iterator[Path]:
    """A data directory shared by a module's tests, for one server that serves them all (`data_dir` is per test)."""
    path = Path(tempfile.mkdtemp(prefix="zm-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
