"""The processes tests start: `zapomni` commands and FalkorDB servers, each one always reaped.

`Child` is the one subprocess wrapper: its stderr goes to a file a test can read (the JSON log),
and `kill()` is safe whatever state the process is in. The servers below add what they speak:
`RawServer` MCP line by line on stdin/stdout, `HttpServer` MCP over HTTP (`zapomni serve --http`),
`HealthServer` HTTP, `FalkorDB` the redis protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import shutil
import signal
import ssl
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TextIO

import httpx
import httpx2
import redis
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from tests.helpers import free_port, wait_for
from zapomni_db.embedded_layout import EmbeddedPaths

ZAPOMNI = shutil.which("zapomni", path=str(Path(sys.executable).parent)) or "zapomni"


def child_env(base: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
    """A clean environment for a child: PATH, and PYTHONPATH when the tests run a tree other than the
    installed one (a git worktree), so the child runs the code under test; then `base`, then `extra`
    (each may override what comes before it)."""
    env = {"PATH": os.environ.get("PATH", "")}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env | (base or {}) | extra


def server_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """`zapomni serve` (or any command) on the embedded database in `data_dir`."""
    defaults = {
        "ZAPOMNI_DATA_DIR": str(data_dir),
        "LOG_LEVEL": "INFO",
        "ZAPOMNI_GRAPH_AUTO": os.environ.get("ZAPOMNI_GRAPH_AUTO", "false"),  # see tests/conftest.py
    }
    return child_env(defaults, **extra)


def run_zapomni(
    args: list[str],
    env: dict[str, str],
    *,
    timeout_s: float = 120,
    text: bool = True,
    input: str | bytes | None = None,
    stdin: IO[Any] | None = None,
) -> subprocess.CompletedProcess[Any]:
    """`zapomni ARGS` to completion, its output captured. One that hangs fails the test with what it was doing:
    every thread's stack (faulthandler, on SIGABRT), its stderr and its data directory's keeper log."""
    env = {**env, "PYTHONFAULTHANDLER": "1"}
    with subprocess.Popen(
        [ZAPOMNI, *args],
        stdin=stdin if stdin is not None else subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=text,
    ) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)
            try:
                _, stderr = process.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                _, stderr = process.communicate()
            keeper_log = EmbeddedPaths(Path(env.get("ZAPOMNI_DATA_DIR", "/nonexistent"))).keeper_log
            keeper = keeper_log.read_text(errors="replace")[-3000:] if keeper_log.is_file() else "(none)"
            told = stderr if isinstance(stderr, str) else stderr.decode(errors="replace")
            raise AssertionError(
                f"zapomni {' '.join(args)} did not finish in {timeout_s} s.\n"
                f"--- its stderr (stacks last) ---\n{told[-8000:]}\n--- keeper log ---\n{keeper}"
            ) from None
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


class Child:
    """A subprocess with its stderr in `stderr_path` (or discarded)."""

    def __init__(
        self,
        command: list[str],
        *,
        env: dict[str, str] | None = None,
        stderr_path: Path | None = None,
        stdin: int | IO[Any] | None = subprocess.DEVNULL,
        stdout: int | IO[Any] | None = subprocess.DEVNULL,
        text: bool = False,
    ) -> None:
        self.stderr_path = stderr_path
        self._stderr: TextIO | None = stderr_path.open("w") if stderr_path else None
        self.process = subprocess.Popen(
            command,
            stdin=stdin,
            stdout=stdout,
            stderr=self._stderr if self._stderr else subprocess.DEVNULL,
            env=env,
            text=text,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def running(self) -> bool:
        return self.process.poll() is None

    def stderr(self) -> str:
        """What the child wrote to stderr so far (its log)."""
        return self.stderr_path.read_text() if self.stderr_path else ""

    def log_events(self) -> list[dict[str, Any]]:
        """The JSON log lines written so far."""
        return [json.loads(line) for line in self.stderr().splitlines() if line.startswith("{")]

    def send_signal(self, signum: int) -> None:
        self.process.send_signal(signum)

    def wait(self, timeout_s: float = 60.0) -> int:
        code = self.process.wait(timeout=timeout_s)
        self._close_log()
        return code

    def terminate(self, timeout_s: float = 60.0) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.wait(timeout_s)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._close_log()

    def _close_log(self) -> None:
        if self._stderr is not None:
            self._stderr.close()


# -- zapomni serve, through the SDK client or line by line ----------------------------------------------


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


async def call(session: ClientSession, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """Call a tool that must succeed; return its structured content."""
    result = await session.call_tool(tool, arguments or {})
    content: dict[str, Any] | None = result.structured_content
    assert not result.is_error and content is not None, result.content
    return content


async def call_with_progress(
    session: ClientSession, tool: str, arguments: dict[str, Any]
) -> tuple[CallToolResult, list[tuple[float, float | None, str | None]]]:
    """Call a tool asking for progress: its result, and the (progress, total, message) notifications before it."""
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    return await session.call_tool(tool, arguments, progress_callback=on_progress), updates


class RawServer(Child):
    """`zapomni serve` driven line by line, for what the SDK client will not send."""

    def __init__(self, data_dir: Path, stderr_path: Path, extra_env: dict[str, str] | None = None) -> None:
        super().__init__(
            [ZAPOMNI, "serve"],
            env=server_env(data_dir, **(extra_env or {})),
            stderr_path=stderr_path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
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

    def send_bytes(self, line: bytes) -> None:
        """A line as bytes, whatever they are (`send_line` can only write text)."""
        assert self.process.stdin is not None
        self.process.stdin.flush()
        stdin: Any = self.process.stdin  # a text stream over the pipe; its buffer takes raw bytes
        stdin.buffer.write(line + b"\n")
        stdin.buffer.flush()

    def receive(self, timeout_s: float = 60.0) -> dict[str, Any]:
        line = self._lines.get(timeout=timeout_s)
        assert line is not None, "the server closed stdout"
        message: dict[str, Any] = json.loads(line)
        return message

    def receive_until(self, wanted: Callable[[dict[str, Any]], bool], timeout_s: float = 60.0) -> dict[str, Any]:
        """The next message `wanted` accepts; the ones before it are skipped (still in `stdout_lines`)."""
        while not wanted(message := self.receive(timeout_s)):
            pass
        return message

    def skip_unread(self) -> None:
        """Drop the lines received and not read yet (they stay in `stdout_lines`)."""
        with contextlib.suppress(queue.Empty):
            while self._lines.get_nowait() is not None:
                pass
            self._lines.put(None)  # stdout closed: `receive` still says so at once

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


def raw_call(server: RawServer, request_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool on a raw server; it must succeed. Returns its structured content."""
    reply = server.request(request_id, "tools/call", {"name": tool, "arguments": arguments})
    assert not reply["result"].get("isError"), reply
    content: dict[str, Any] = reply["result"]["structuredContent"]
    return content


# -- zapomni serve --http ----------------------------------------------------------------------------


class HttpServer(Child):
    """`zapomni serve --http` on a free port of 127.0.0.1, answering /healthz when built."""

    def __init__(
        self,
        data_dir: Path,
        stderr_path: Path,
        *,
        args: tuple[str, ...] = (),
        tls: tuple[Path, Path] | None = None,
        **extra_env: str,
    ) -> None:
        self.port = free_port()
        self.base = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"
        # What verifies the server's certificate (a self-signed one: itself).
        self.verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=str(tls[0])) if tls else True
        if tls:
            extra_env |= {"ZAPOMNI_TLS_CERT": str(tls[0]), "ZAPOMNI_TLS_KEY": str(tls[1])}
        super().__init__(
            [ZAPOMNI, "serve", "--http", "--port", str(self.port), *args],
            env=server_env(data_dir, **extra_env),
            stderr_path=stderr_path,
        )
        assert wait_for(self._alive, timeout_s=120), f"the HTTP server did not start: {self.stderr()}"

    def _alive(self) -> bool:
        assert self.running(), f"the HTTP server exited: {self.stderr()}"
        try:
            return self.get("/healthz").status_code == 200
        except httpx.TransportError:
            return False

    def get(self, path: str, token: str | None = None, **headers: str) -> httpx.Response:
        return httpx.get(f"{self.base}{path}", headers=bearer(token) | headers, verify=self.verify, timeout=30)

    def post(self, body: Any, token: str | None = None, **headers: str) -> httpx.Response:
        """A raw POST to /mcp (for what the SDK client will not send), as a 2025-11-25 client sends one."""
        defaults = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        }
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return httpx.post(
            self.url, content=content, headers=defaults | bearer(token) | headers, verify=self.verify, timeout=60
        )


def bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


@contextmanager
def http_server(data_dir: Path, stderr_path: Path, **options: Any) -> Iterator[HttpServer]:
    """A started `zapomni serve --http` (see HttpServer), stopped with SIGTERM on the way out (killed if it hangs)."""
    server = HttpServer(data_dir, stderr_path, **options)
    try:
        yield server
    finally:
        if server.running():
            server.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(timeout_s=60)
        server.kill()


@dataclass(frozen=True)
class HttpEndpoint:
    """A server this suite did not start (an appliance's, a container's), as http_session needs it."""

    url: str
    verify: ssl.SSLContext | bool = True


def claude_code_line(url: str, token: str) -> str:
    """The line the appliance prints on its first start, and the README gives, to connect Claude Code."""
    return f'claude mcp add --transport http zapomni {url} --header "Authorization: Bearer {token}"'


def status_without_token(url: str) -> int:
    """The HTTP status of a POST to `url` that carries no token (401 expected)."""
    response = httpx.post(url, json={}, timeout=10, trust_env=False)  # never through a proxy
    return response.status_code


@asynccontextmanager
async def http_session(
    server: HttpServer | HttpEndpoint, token: str | None, *, legacy: bool = False
) -> AsyncIterator[ClientSession]:
    """The SDK's Streamable HTTP client with a bearer token: protocol 2026-07-28 (server/discover), or with
    `legacy` the 2025-11-25 initialize handshake."""
    client = httpx2.AsyncClient(headers=bearer(token), verify=server.verify, timeout=httpx2.Timeout(30, read=300))
    async with (
        client,
        streamable_http_client(server.url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await (session.initialize() if legacy else session.discover())
        yield session


# -- zapomni health-server --------------------------------------------------------------------------


class HealthServer(Child):
    """`zapomni health-server` on a free port, started and answering /healthz when built."""

    def __init__(self, env: dict[str, str], stderr_path: Path) -> None:
        self.port = free_port()
        self.env = env
        super().__init__(
            [ZAPOMNI, "health-server", "--port", str(self.port)],
            env=env,
            stderr_path=stderr_path,
            stdout=subprocess.PIPE,
        )
        assert wait_for(self._alive, timeout_s=60), f"the health server did not start: {self.stderr()}"

    def _alive(self) -> bool:
        assert self.running(), f"the health server exited: {self.stderr()}"
        try:
            return self.get("/healthz")[0] == 200
        except httpx.TransportError:
            return False

    def get(self, path: str) -> tuple[int, Any]:
        response = httpx.get(f"http://127.0.0.1:{self.port}{path}", timeout=10)
        return response.status_code, response.json()

    def readyz(self) -> tuple[int, dict[str, Any]]:
        return self.get("/readyz")

    def wait_status(self, status: int, timeout_s: float = 30.0) -> dict[str, Any]:
        last: list[tuple[int, dict[str, Any]]] = []

        def reached() -> bool:
            last[:] = [self.readyz()]
            return last[0][0] == status

        assert wait_for(reached, timeout_s=timeout_s), f"/readyz never answered {status}; last: {last}"
        return last[0][1]


# -- FalkorDB ---------------------------------------------------------------------------------------


class FalkorDB:
    """redis-server with the FalkorDB module over `db_dir`, on a unix socket or on 127.0.0.1 with a
    password, which a test can stop, kill, restart and slow down (the same files each time)."""

    def __init__(
        self,
        db_dir: Path,
        *,
        unix_socket: Path | None = None,
        password: str | None = None,
        appendfsync: str = "everysec",
        log_file: Path | None = None,
    ) -> None:
        self.db_dir = db_dir
        self.socket = unix_socket
        self.port = 0 if unix_socket else free_port()
        self.password = password
        self._appendfsync = appendfsync
        self._log_file = log_file
        self._child: Child | None = None

    def start(self, key_load_delay_us: int = 0, *, wait: bool = True) -> None:
        """Start it; `wait` until it answers and has loaded (not with a load delay: the test watches)."""
        from zapomni_db.server_commands import falkordb_command

        if self._child is not None:
            self._child.kill()  # reaps the one before (stopped, killed or shut down by the test)
        command = falkordb_command(
            self.db_dir,
            port=self.port,
            unix_socket=self.socket,
            password=self.password,
            appendfsync=self._appendfsync,
            log_file=self._log_file,
        )
        if key_load_delay_us:
            # Reload from the RDB (the AOF replays commands, which no load delay slows), one key at a
            # time, answering LOADING in between instead of holding clients until the load is done.
            command += ["--appendonly", "no", "--key-load-delay", str(key_load_delay_us)]
            command += ["--loading-process-events-interval-bytes", "1024"]
        self._child = Child(command)
        if wait and not key_load_delay_us:
            assert wait_for(self.ready), "FalkorDB did not start"

    def client(self, timeout_s: float = 2.0) -> redis.Redis:
        from zapomni_db.server import direct_client

        return direct_client(unix_socket=self.socket, port=self.port, password=self.password, timeout_s=timeout_s)

    def ready(self) -> bool:
        from zapomni_db.server import is_ready

        client = self.client()
        try:
            return is_ready(client)
        finally:
            client.close()

    def loading(self) -> bool:
        client = self.client()
        try:
            client.ping()
        except redis.exceptions.BusyLoadingError:
            return True
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            return False
        finally:
            client.close()
        return False

    def stop(self) -> None:
        """SHUTDOWN SAVE, and wait until the process is gone."""
        assert self._child is not None
        with contextlib.suppress(redis.ConnectionError):  # the server hangs up: that is the answer
            self.client().shutdown(save=True)
        self._child.wait()

    def kill(self) -> None:
        """SIGKILL: no save, no goodbye."""
        if self._child is not None:
            self._child.kill()

    def terminate(self) -> None:
        if self._child is not None and self._child.running():
            self._child.terminate()

    def migrate(self, graph: str = "zapomni") -> None:
        """The schema, as `zapomni migrate` would apply it (the server must be running)."""
        from zapomni_db import DatabaseTarget, GraphClient, SchemaSettings, connect, migrate

        async def run() -> None:
            host = {"socket": self.socket} if self.socket else {"host": "127.0.0.1", "port": self.port}
            connection = connect(DatabaseTarget("test server", graph, password=self.password, **host))
            try:
                await migrate(GraphClient(connection, graph), SchemaSettings(dimension=384))
            finally:
                await connection.close()

        asyncio.run(run())


class ConsoleServer(Child):
    """`zapomni console --port 0`: the web console on the loopback; `url` is the address it printed on stdout."""

    def __init__(self, env: dict[str, str], stderr_path: Path, timeout_s: float = 90.0) -> None:
        super().__init__(
            [ZAPOMNI, "console", "--port", "0"], env=env, stderr_path=stderr_path, stdout=subprocess.PIPE, text=True
        )
        lines: queue.Queue[str] = queue.Queue()
        assert self.process.stdout is not None
        stdout = self.process.stdout
        threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
        try:
            self.url = lines.get(timeout=timeout_s).strip()
        except queue.Empty:
            self.kill()
            raise AssertionError(f"zapomni console printed no address in {timeout_s} s:\n{self.stderr()}") from None
        assert self.url.startswith("http://127.0.0.1:"), (self.url, self.stderr())
        # The address is printed as the server binds; on a loaded machine the first page may not answer yet.
        assert wait_for(self._answers, timeout_s=timeout_s), f"zapomni console did not answer:\n{self.stderr()}"

    def _answers(self) -> bool:
        assert self.running(), f"zapomni console exited: {self.stderr()}"
        try:
            return httpx.get(self.url.rstrip("/") + "/login", timeout=5).status_code == 200
        except httpx.TransportError:
            return False


def create_token(env: dict[str, str], name: str, role: str) -> str:
    """A token made by `zapomni token create` (the way the README says to make one), run in this process."""
    from tests.cli_in_process import run_cli  # it imports the CLI, which most users of this module never run

    done: subprocess.CompletedProcess[str] = run_cli(["token", "create", "--name", name, "--all", "--role", role], env)
    assert done.returncode == 0, done.stderr
    return next(line.strip() for line in (done.stdout + done.stderr).splitlines() if line.startswith("zap_"))
