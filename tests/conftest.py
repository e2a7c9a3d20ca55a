"""Shared fixtures: real embedded FalkorDB processes, the real ONNX embedder, per-test data dirs."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from zapomni_core import Settings, ZapomniCore, open_core


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
