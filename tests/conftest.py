"""Shared fixtures: real embedded FalkorDB processes, the real ONNX embedder, per-test data dirs."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.helpers import close_shared_model, open_core
from zapomni_core import Settings, ZapomniCore

# Entity extraction of every memory a test adds would load spaCy and compete for the two cores in every
# test; the graph's own tests (tests/*/test_graph_*.py) turn it on where they need it.
os.environ.setdefault("ZAPOMNI_GRAPH_AUTO", "false")


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
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def settings(data_dir: Path) -> Settings:
    return Settings(ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING")


@pytest.fixture
async def core(settings: Settings) -> AsyncIterator[ZapomniCore]:
    async with open_core(settings) as (engine, _info):
        yield engine
