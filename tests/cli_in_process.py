"""`zapomni ARGS` run in the test's own process, as `subprocess.run` would report it: exit code, stdout, stderr.

A `zapomni` process costs 1.5-2.7 s of CPU, most of it imports and, for a command that embeds, loading the
model; the same command run here costs 0.15-0.25 s on the suite's one model (measured in session 16). The
command sees what a process would: exactly the environment it is given (`tests.processes.child_env`), stdin,
stdout and stderr of its own with byte buffers (the export writes bytes), none of them a terminal, and
`sys.exit`'s code. It runs in a thread of its own, so a test that runs in an event loop can call it as it calls
`subprocess.run` (the command starts its own loop with `asyncio.run`).

What only a process shows stays tested with one: a traceback on an unexpected error (here the exception is
raised in the test instead, which fails it), stray writes to file descriptor 1 below Python, signals, pipes that
close, terminals (`tests/e2e/test_cli.py` keeps those as subprocesses).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from unittest import mock

import structlog

import zapomni_cli.commands
import zapomni_ops.commands.doctor
import zapomni_ops.commands.transfer
from tests import helpers
from zapomni_cli.main import main

# The modules that open an engine for a command, each with `from zapomni_core import open_core`.
_OPENING = (zapomni_cli.commands, zapomni_ops.commands.doctor, zapomni_ops.commands.transfer)
# Loggers whose level `zapomni_core.configure_logging` sets: put back afterwards with the root's.
_TUNED_LOGGERS = ("mcp", "httpx", "httpcore")


class _Kept(io.BytesIO):
    """A byte buffer that keeps its contents when a wrapper around it closes it."""

    def close(self) -> None:
        pass


def run_cli(
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    input: str | bytes | None = None,
    text: bool = True,
    timeout_s: float = 120,
) -> subprocess.CompletedProcess[Any]:
    """Run `zapomni ARGS` here with `env` as its whole environment and `input` on its stdin."""
    data = input.encode() if isinstance(input, str) else input or b""
    streams = [io.TextIOWrapper(buffer, encoding="utf-8", newline="") for buffer in (_Kept(data), _Kept(), _Kept())]
    outcome: dict[str, Any] = {}

    def command() -> None:
        try:
            with _environment(env), _standard_streams(*streams), logging_put_back(), _the_suites_model():
                main(list(args))
            outcome["code"] = 0
        except SystemExit as exc:
            outcome["code"] = _exit_code(exc, streams[2])
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=command, name=f"zapomni {' '.join(args)}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        frame = sys._current_frames().get(thread.ident or 0)
        stack = "".join(traceback.format_stack(frame)) if frame is not None else "(no frame)"
        raise AssertionError(f"zapomni {' '.join(args)} did not finish in {timeout_s} s; it is at:\n{stack}")
    if "error" in outcome:
        raise outcome["error"]
    stdout, stderr = (_contents(stream) for stream in streams[1:])
    if text:
        return subprocess.CompletedProcess(["zapomni", *args], outcome["code"], stdout.decode(), stderr.decode())
    return subprocess.CompletedProcess(["zapomni", *args], outcome["code"], stdout, stderr)


def _exit_code(exc: SystemExit, stderr: io.TextIOWrapper) -> int:
    # As the interpreter does at exit: None is 0, a message is printed on stderr and is 1.
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    stderr.write(f"{exc.code}\n")
    return 1


def _contents(stream: io.TextIOWrapper) -> bytes:
    stream.flush()
    buffer = stream.buffer
    assert isinstance(buffer, _Kept)
    return buffer.getvalue()


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _standard_streams(stdin: io.TextIOWrapper, stdout: io.TextIOWrapper, stderr: io.TextIOWrapper) -> Iterator[None]:
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


@contextlib.contextmanager
def _the_suites_model() -> Iterator[None]:
    """The command's engine embeds with the suite's one ONNX model (`tests.helpers.open_core`), as every engine
    of the tests does, instead of loading its own: a load costs 0.4 s of CPU, and the sessions of finished commands
    wait in reference cycles for the collector (a worker grew 308 -> 1,132 MB in 15 adds)."""
    with contextlib.ExitStack() as stack:
        for module in _OPENING:
            stack.enter_context(mock.patch.object(module, "open_core", helpers.open_core))
        yield


@contextlib.contextmanager
def logging_put_back() -> Iterator[None]:
    """A command or a bench configures logging for a process of its own (`configure_logging`): undo it afterwards.
    The root's handlers are taken off first, so that its `basicConfig(force=True)` does not close pytest's."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {name: logging.getLogger(name).level for name in _TUNED_LOGGERS}
    config = structlog.get_config()
    root.handlers.clear()
    try:
        yield
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)
        for name, tuned in levels.items():
            logging.getLogger(name).setLevel(tuned)
        structlog.configure(**config)
