"""Helpers to run `zapomni serve` as a subprocess: through the official MCP client, or raw."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ZAPOMNI = shutil.which("zapomni", path=str(Path(sys.executable).parent)) or "zapomni"


def server_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {
        "ZAPOMNI_DATA_DIR": str(data_dir),
        "LOG_LEVEL": "INFO",
        "PATH": os.environ.get("PATH", ""),
        # A worktree runs its own code with the shared virtualenv by putting its app/ first on PYTHONPATH.
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
        "ZAPOMNI_GRAPH_AUTO": os.environ.get("ZAPOMNI_GRAPH_AUTO", "false"),  # see tests/conftest.py
    }
    # A checkout other than the one installed in the venv (a worktree) runs its own code.
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    env.update(extra)
    return env


@asynccontextmanager
async def mcp_session(data_dir: Path, errlog: TextIO | None = None, **extra_env: str) -> AsyncIterator[ClientSession]:
    """An initialised SDK client session with a fresh `zapomni serve` on `data_dir`."""
    params = StdioServerParameters(command=ZAPOMNI, args=["serve"], env=server_env(data_dir, **extra_env))
    log = errlog or open(os.devnull, "w")  # noqa: SIM115 - closed below when we opened it
    try:
        async with stdio_client(params, errlog=log) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session
    finally:
        if errlog is None:
            log.close()


async def call(session: ClientSession, tool: str, arguments: dict[str, Any] | None = None) -> Any:
    """Call a tool that must succeed; return its structured content."""
    result = await session.call_tool(tool, arguments or {})
    assert not result.is_error, result.content
    return result.structured_content


class RawServer:
    """`zapomni serve` driven line by line, for what the SDK client will not send."""

    def __init__(self, data_dir: Path, stderr_path: Path, extra_env: dict[str, str] | None = None) -> None:
        self._stderr = stderr_path.open("w")
        self.process = subprocess.Popen(
            [ZAPOMNI, "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=server_env(data_dir, **(extra_env or {})),
            text=True,
        )
        self.stdout_lines: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.stdout_lines.append(line)
            self._lines.put(line)
        self._lines.put(None)

    def send_line(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_line(json.dumps(message))

    def receive(self, timeout_s: float = 60.0) -> dict[str, Any]:
        line = self._lines.get(timeout=timeout_s)
        assert line is not None, "the server closed stdout"
        return json.loads(line)

    def request(self, request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.receive()

    def initialize(self) -> dict[str, Any]:
        reply = self.request(
            1,
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    def wait(self, timeout_s: float = 60.0) -> int:
        code = self.process.wait(timeout=timeout_s)
        self._stderr.close()
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._stderr.close()


@pytest.fixture
def raw_server(data_dir: Path, tmp_path: Path) -> Any:
    servers: list[RawServer] = []

    def start() -> RawServer:
        server = RawServer(data_dir, tmp_path / f"stderr-{len(servers)}.log")
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.kill()


def raw_call(server: RawServer, request_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool on a raw server; it must succeed. Returns its structured content."""
    reply = server.request(request_id, "tools/call", {"name": tool, "arguments": arguments})
    assert not reply["result"].get("isError"), reply
    return reply["result"]["structuredContent"]
