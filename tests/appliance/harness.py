"""Driving the native appliance (ops/) in tests: a private directory and free ports, its commands,
its processes, and a teardown that leaves nothing behind."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import redis

from tests.helpers import free_port, wait_for
from zapomni_core import Settings
from zapomni_db.server import direct_client

REPO = Path(__file__).resolve().parents[2]
OPS = REPO / "ops"
ENTRYPOINT = OPS / "docker-entrypoint.sh"
# Configuration the test runner may have in its own environment; an appliance gets only its own.
_FOREIGN = ("ZAPOMNI_", "FALKORDB_", "REDIS_", "OLLAMA_", "EMBEDDING_MODEL", "GRAPH_NAME", "LLM_MODEL")


def clean_environ() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(_FOREIGN)}
    env["LOG_LEVEL"] = "WARNING"
    env["PYTHONFAULTHANDLER"] = "1"  # a process sent SIGABRT prints its stacks (Appliance.run's timeout)
    return env


def _cmdline(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def _descendants(root: int) -> list[int]:
    """The processes under `root` (its children, theirs, ...), from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    found, frontier = [], [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class Appliance:
    """One appliance directory with its ports, and the commands to drive it."""

    def __init__(self, **extra_env: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="za-", dir="/tmp"))  # short: unix socket paths are limited
        self.falkordb_port, self.cache_port, self.health_port = free_port(), free_port(), free_port()
        self.http_port = free_port()
        self.env = clean_environ() | {
            "ZAPOMNI_APPLIANCE_DIR": str(self.dir),
            "FALKORDB_PORT": str(self.falkordb_port),
            "REDIS_CACHE_PORT": str(self.cache_port),
            "ZAPOMNI_HEALTH_PORT": str(self.health_port),
            "ZAPOMNI_HTTP_PORT": str(self.http_port),
            **extra_env,
        }
        self.up_s = 0.0  # how long the session's `make up-local` took
        self.first_up: subprocess.CompletedProcess[str] | None = None  # the session's first `make up-local`

    # --- commands -----------------------------------------------------------------------------------

    def run(self, *command: str | Path, timeout: float = 150, **env: str) -> subprocess.CompletedProcess[str]:
        """`command` to its end; one still running after `timeout` fails with where its Python processes were."""
        args = [str(part) for part in command]
        with subprocess.Popen(
            args, env=self.env | env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL, start_new_session=True,
        ) as process:  # fmt: skip
            try:
                stdout, stderr = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                # A hang seen once in CI (`make up-local` stuck after "applying schema migrations", not reproduced):
                # SIGABRT makes each Python process under the command print its threads' stacks
                # (PYTHONFAULTHANDLER), so the failure says where it was.
                for pid in [process.pid, *_descendants(process.pid)]:
                    argv = _cmdline(pid)
                    if argv and b"python" in argv[0]:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGABRT)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=5)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                stdout, stderr = process.communicate()
                raise AssertionError(
                    f"{' '.join(args)} still running after {timeout} s; its output, then the stacks of its Python "
                    f"processes:\n{stdout}\n{stderr}"
                ) from None
        return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)

    def up(self) -> subprocess.CompletedProcess[str]:
        """`make up-local`, the way a person starts it."""
        result = self.run("make", "-s", "-C", REPO, "up-local")
        assert result.returncode == 0, f"up-local failed:\n{result.stdout}\n{result.stderr}"
        return result

    def down(self) -> subprocess.CompletedProcess[str]:
        return self.run(OPS / "down-local")

    def supervisorctl(self, *args: str) -> str:
        return self.run(OPS / "local", "supervisorctl", *args, timeout=30).stdout

    def status(self) -> dict[str, str]:
        """{program: state} from `supervisorctl status`."""
        return {line.split()[0]: line.split()[1] for line in self.supervisorctl("status").splitlines() if line.strip()}

    def pid(self, program: str) -> int:
        out = self.supervisorctl("pid", program).strip()
        assert out.isdigit() and out != "0", f"no pid for {program}: {out!r}"
        return int(out)

    def supervisord_pid(self) -> int:
        return int((self.dir / "run" / "supervisord.pid").read_text())

    def readyz(self) -> tuple[int, dict[str, Any]]:
        """(status, body) of GET /readyz; (0, {}) when nothing answers."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=5) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return 0, {}

    def wait_ready(self, timeout_s: float = 60) -> float:
        """Seconds until /readyz answered 200."""
        started = time.monotonic()
        assert wait_for(lambda: self.readyz()[0] == 200, timeout_s=timeout_s), self.readyz()
        return time.monotonic() - started

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/mcp"

    @property
    def token_file(self) -> Path:
        """The HTTP server's first token, made by the first start (ops/first-token.py)."""
        return self.dir / "secrets" / "http.token"

    @property
    def password_file(self) -> Path:
        return self.dir / "secrets" / "falkordb.password"

    @property
    def password(self) -> str:
        """FalkorDB's and the cache's password: the one given in the environment, else the generated one."""
        return self.env.get("FALKORDB_PASSWORD") or self.password_file.read_text().splitlines()[0]

    def falkordb(self, password: str | None = None) -> redis.Redis:
        """A client of this appliance's FalkorDB, with its password unless another (or "") is given.

        It never retries: redis-py would retry a refused password (an AuthenticationError is a
        ConnectionError) for seconds."""
        own = self.password if password is None else password
        return direct_client(port=self.falkordb_port, password=own, timeout_s=10)

    def cache(self, password: str | None = None) -> redis.Redis:
        """A client of the Redis cache, with the cache's password unless another (or "") is given."""
        own = (self.env.get("REDIS_CACHE_PASSWORD") or self.password) if password is None else password
        return direct_client(port=self.cache_port, password=own, timeout_s=10)

    def settings(self) -> Settings:
        """The engine's settings for this appliance's FalkorDB (server mode)."""
        return Settings.from_variables(
            ZAPOMNI_DB_MODE="server",
            FALKORDB_HOST="127.0.0.1",
            FALKORDB_PORT=self.falkordb_port,
            FALKORDB_PASSWORD=self.password,
            ZAPOMNI_DATA_DIR=self.dir,
            LOG_LEVEL="WARNING",
        )

    # --- processes ----------------------------------------------------------------------------------

    def processes(self) -> list[int]:
        """Every live process started for this appliance: they carry its directory in their environment,
        except redis-server, which overwrites its environment with its title "redis-server 127.0.0.1:PORT"."""
        marker = f"ZAPOMNI_APPLIANCE_DIR={self.dir}".encode()
        titles = {f"127.0.0.1:{port}".encode() for port in (self.falkordb_port, self.cache_port)}
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    environ = (entry / "environ").read_bytes().split(b"\0")
                    title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").split()
                except OSError:
                    continue
                ours = marker in environ or (
                    title[:1] and title[0].endswith(b"/redis-server") and title[1:2] and title[1] in titles
                )
                if ours and alive(int(entry.name)):
                    found.append(int(entry.name))
        return found

    def teardown(self) -> None:
        """down-local; then SIGKILL whatever is left (a test failed half-way); then the directory."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.run(OPS / "down-local", timeout=120)
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not self.processes(), timeout_s=10)
        shutil.rmtree(self.dir, ignore_errors=True)
