"""The native appliance (ops/): real supervisord, FalkorDB, Redis and health server over a private
directory and free ports; always torn down, even when a test fails half-way."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.appliance.harness import Appliance


@pytest.fixture(scope="session")
def appliance() -> Iterator[Appliance]:
    """One running appliance shared by the tests that only use it (and leave it running)."""
    instance = Appliance()
    try:
        started = time.monotonic()
        instance.first_up = instance.up()
        instance.up_s = time.monotonic() - started
        yield instance
    finally:
        instance.teardown()


@pytest.fixture
def new_appliance() -> Iterator[Any]:
    """A factory of fresh appliance directories (not started), each torn down after the test."""
    created: list[Appliance] = []

    def make(**extra_env: str) -> Appliance:
        created.append(Appliance(**extra_env))
        return created[-1]

    try:
        yield make
    finally:
        for instance in created:
            instance.teardown()
