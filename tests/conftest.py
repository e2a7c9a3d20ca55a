"""Shared fixtures: real embedded FalkorDB processes, the real ONNX embedder, per-test data dirs."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from zapomni_core import Settings, ZapomniCore, open_core

# Entity extraction of every memory a test adds would load spaCy and compete for the two cores in every
# test; the graph's own tests (tests/*/test_graph_*.py) turn it on where they need it.
os.environ.setdefault("ZAPOMNI_GRAPH_AUTO", "false")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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
