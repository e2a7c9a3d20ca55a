"""Shared fixtures: one real embedded FalkorDB per test worker with a graph per test, the real ONNX embedder.

A test that is about the database's files or process (restarts, disks, backups, keyword-index files on disk)
marks itself `own_database`: its `settings` then get a private data directory, and the first engine opened
there starts a FalkorDB of its own. Everything else shares the worker's database, each test under a graph
name of its own (GRAPH_NAME; a workspace's graph is that name plus a suffix), dropped when the test ends.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.helpers import close_shared_model, open_core, print_database_logs
from tests.shared_database import SharedDatabase
from zapomni_core import Settings, ZapomniCore

# Entity extraction of every memory a test adds would load spaCy and compete for the two cores in every
# test; the graph's own tests (tests/*/test_graph_*.py) turn it on where they need it.
os.environ.setdefault("ZAPOMNI_GRAPH_AUTO", "false")


pytest_plugins = ["tests.hang_watch"]

TESTS = Path(__file__).resolve().parent
# Every test under these directories gets the marker of the same name (registered in pyproject.toml),
# so `-m "not e2e"` and the like select by what a test drives, with nothing to forget in a new file.
MARKED_DIRECTORIES = ("e2e", "appliance", "bench")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if (
            item.path.is_relative_to(TESTS)
            and (directory := item.path.relative_to(TESTS).parts[0]) in MARKED_DIRECTORIES
        ):
            item.add_marker(directory)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", autouse=True)
def _shared_model() -> Iterator[None]:
    """Close the suite's one ONNX model (tests.helpers.shared_model, loaded on first use) at the end."""
    yield
    close_shared_model()


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A short, private data directory (unix socket paths are limited to ~100 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="zt-", dir="/tmp"))
    yield path
    print_database_logs(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def shared_database() -> Iterator[SharedDatabase]:
    """This worker's embedded FalkorDB, started once and attached to by every engine the worker's tests open."""
    with SharedDatabase.started() as database:
        yield database


@pytest.fixture
def settings(request: pytest.FixtureRequest, shared_database: SharedDatabase) -> Iterator[Settings]:
    """A test's engine settings: a graph of its own in the worker's database (a data directory of its own
    with the `own_database` marker, see above)."""
    if request.node.get_closest_marker("own_database"):
        yield Settings.from_variables(ZAPOMNI_DATA_DIR=request.getfixturevalue("data_dir"), LOG_LEVEL="WARNING")
        return
    with shared_database.graph() as graph:
        yield Settings.from_variables(ZAPOMNI_DATA_DIR=shared_database.data_dir, GRAPH_NAME=graph, LOG_LEVEL="WARNING")


@pytest.fixture
async def core(settings: Settings) -> AsyncIterator[ZapomniCore]:
    async with open_core(settings) as (engine, _info):
        yield engine
