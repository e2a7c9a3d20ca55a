"""A backstop behind pytest-timeout: a test process that stays stuck is ended, with every thread's stack on stderr.

pytest-timeout's signal method fails a test that runs too long by raising in its main thread. That ends most
hangs, but not one where the raise lands in cleanup that then waits again (a `finally`, a fixture's teardown),
nor a wait after the last test (a thread joined at exit): such a worker holds the whole run until CI gives up,
and says nothing (a CI run in session 17 sat at 1,078 of 1,095 tests for over an hour). Here faulthandler's own
watchdog thread, which needs nothing from the stuck interpreter, prints every thread's stack to the real stderr
(not pytest's capture) and exits the process; xdist reports the worker as crashed and the run goes on.
"""

from __future__ import annotations

import faulthandler
import os
from collections.abc import Generator
from typing import IO

import pytest

_stderr: IO[str] | None = None


def pytest_addoption(parser: pytest.Parser) -> None:
    # Past pytest-timeout's own limit, so that the ordinary timeout fails the test first when it can.
    parser.addini("hang_grace", "seconds past `timeout` after which a stuck test process is ended", default="60")
    # What a finished worker may take to exit (its database stopped, its threads joined).
    parser.addini("hang_exit", "seconds after its last test after which a test process is ended", default="120")


def pytest_configure(config: pytest.Config) -> None:
    global _stderr
    capture = config.pluginmanager.getplugin("capturemanager")
    # The process's stderr as it was before pytest captured file descriptor 2.
    if capture is not None:
        capture.suspend_global_capture()
    try:
        _stderr = os.fdopen(os.dup(2), "w")
    finally:
        if capture is not None:
            capture.resume_global_capture()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    limit = float(item.config.getini("timeout") or 0)
    if limit and _stderr is not None:
        grace = float(item.config.getini("hang_grace"))
        faulthandler.dump_traceback_later(limit + grace, exit=True, file=_stderr)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def pytest_unconfigure(config: pytest.Config) -> None:
    if _stderr is not None:
        faulthandler.dump_traceback_later(float(config.getini("hang_exit")), exit=True, file=_stderr)
