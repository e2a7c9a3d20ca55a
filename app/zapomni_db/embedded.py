"""The embedded FalkorDB: one redis-server + falkordb.so process per data directory, shared by clients.

Its data directory's layout is `zapomni_db.embedded_layout`.

The first client starts a small keeper process (`python -m zapomni_db.keeper`) that owns
redis-server. Later clients attach to the running server. When the last client detaches cleanly
it shuts the server down with SHUTDOWN SAVE; if the last client dies without detaching (kill -9),
the keeper notices that no client lock is held any more and does the same. If the keeper itself is
killed, its server goes with it, and the next call of an attached client starts both again (`revive`).
With appendfsync always, every acknowledged write is on disk before the client sees the reply.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import Future
from pathlib import Path

import structlog

from zapomni_db import _locks
from zapomni_db.embedded_layout import EmbeddedPaths, ping, probe
from zapomni_db.errors import DatabaseUnavailable

log = structlog.get_logger(__name__)


def _warn_if_open_to_others(data_dir: Path) -> None:
    """A directory made beforehand keeps its mode (`make_private_dir`); one other users may read or write holds
    memories they can read, or a socket they can talk to: said at every start, the data is used all the same."""
    mode = data_dir.stat().st_mode & 0o777
    if mode & 0o077:
        log.warning(
            "db.data_dir_open_to_others",
            path=str(data_dir),
            mode=oct(mode),
            fix=f"chmod 700 {data_dir}: other users can read or change these memories",
        )


# Pauses between probes of a database that is loading its data, growing from the first to the last: the end of a
# load is noticed within a quarter of a second (a first answer is due 10 s after a cold start at a million chunks,
# of which the load takes ~8.4, decision 0045). A loading FalkorDB answers a probe every few megabytes it reads.
_FIRST_LOADING_PAUSE_S = 0.1
_LAST_LOADING_PAUSE_S = 0.25


class EmbeddedDatabase:
    """Starts or attaches to the FalkorDB that serves one data directory."""

    def __init__(self, data_dir: Path, *, appendfsync: str = "always", start_timeout_s: float = 120.0) -> None:
        self.paths = EmbeddedPaths(data_dir.expanduser().resolve())
        self._appendfsync = appendfsync
        self._start_timeout_s = start_timeout_s
        self._client_fd: int | None = None
        self._client_lock: Path | None = None
        self._opening: Future[None] | None = None  # an opening begun in the background (`open_early`)
        self.started_here = False

    @classmethod
    def for_directory(cls, data_dir: Path, *, appendfsync: str = "always") -> EmbeddedDatabase:
        """The database this process began opening early for this directory (`open_early`), else a new one."""
        early = _EARLY.pop(data_dir.expanduser().resolve(), None)
        if early is not None and early._appendfsync == appendfsync:
            return early
        return cls(data_dir, appendfsync=appendfsync)

    @property
    def socket(self) -> Path:
        return self.paths.socket

    def open(self) -> None:
        """Register this process as a client, then attach to the running server or start one (or finish the
        opening begun in the background, raising what it raised)."""
        if self._opening is not None:
            opening, self._opening = self._opening, None
            opening.result()
            return
        self._open()

    def open_in_background(self) -> None:
        """Begin `open` in a thread; the next `open` waits for it. A daemon thread: a process that exits before
        claiming the database does not wait for a load, and its client lock goes with it (the keeper then stops
        the server, as for any client gone without detaching)."""
        opening: Future[None] = Future()

        def run() -> None:
            try:
                self._open()
            except BaseException as exc:  # handed to whoever calls `open`
                opening.set_exception(exc)
            else:
                opening.set_result(None)

        self._opening = opening
        threading.Thread(target=run, name="zapomni-db-open", daemon=True).start()

    def _open(self) -> None:
        self.paths.create()
        _warn_if_open_to_others(self.paths.data_dir)
        # The lock's holder may be waiting for the server to load a large store (minutes): so may we.
        with _locks.exclusive(self.paths.startup_lock, self._start_timeout_s, still_worth_waiting=self._loading):
            self._register()
            try:
                self._attach_or_start()
            except BaseException:
                self._unregister()
                raise
        log.info("db.embedded.ready", socket=str(self.socket), started_here=self.started_here)

    def _loading(self) -> bool:
        return probe(self.socket) == "loading"

    def _attach_or_start(self) -> None:
        if ping(self.socket):
            log.info("db.embedded.attached", socket=str(self.socket))
            return
        found_keeper = self._keeper_alive()
        if not found_keeper:
            self._spawn_keeper()
            self.started_here = True
        # Wait inside the startup lock so a second client cannot mistake a loading server for none.
        self._wait_ready(found_keeper=found_keeper)

    def revive(self) -> None:
        """Start the server again if its keeper is gone (killed: it takes its server with it, and nobody else would
        start one while this process stays attached); once started, return when it answers."""
        with _locks.exclusive(self.paths.startup_lock, self._start_timeout_s, still_worth_waiting=self._loading):
            # Not once this process has detached: a call still in flight at close must not start a server again.
            if self._client_fd is None or probe(self.socket) != "down" or self._keeper_alive():
                return
            log.warning("db.embedded.keeper_gone", data_dir=str(self.paths.data_dir), action="starting it again")
            self._spawn_keeper()
            self._wait_ready()
        log.info("db.embedded.revived", socket=str(self.socket))

    def attached_clients(self) -> int:
        """How many processes are attached to this data directory's server right now, this one included."""
        return _locks.live_holders(self.paths.clients_dir)

    def close(self) -> None:
        """Detach; the last client out saves the data and stops the server."""
        if self._client_fd is None:
            return
        with _locks.exclusive(self.paths.startup_lock, self._start_timeout_s):
            self._unregister()
            if _locks.live_holders(self.paths.clients_dir) == 0 and self._keeper_alive():
                log.info("db.embedded.stopping", reason="last client detached")
                self._stop_keeper()

    def _stop_keeper(self) -> None:
        """SIGTERM the keeper (it saves and stops the server) and wait until it has exited."""
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            os.kill(int(self.paths.keeper_pid.read_text()), signal.SIGTERM)
        deadline = time.monotonic() + self._start_timeout_s
        while self._keeper_alive():
            if time.monotonic() > deadline:
                raise DatabaseUnavailable("the embedded FalkorDB did not stop in time")
            time.sleep(0.05)

    def _register(self) -> None:
        path = self.paths.clients_dir / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.lock"
        fd = _locks.try_exclusive(path)
        if fd is None:  # a fresh random name cannot be held by anyone else
            raise DatabaseUnavailable("could not register with the embedded database")
        self._client_fd, self._client_lock = fd, path

    def _unregister(self) -> None:
        assert self._client_fd is not None and self._client_lock is not None
        with contextlib.suppress(FileNotFoundError):
            self._client_lock.unlink()
        os.close(self._client_fd)
        self._client_fd = None

    def _keeper_alive(self) -> bool:
        fd = _locks.try_exclusive(self.paths.keeper_lock)
        if fd is None:
            return True
        os.close(fd)
        return False

    def _spawn_keeper(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()  # left behind by a server that was killed
        cmd = [
            sys.executable,
            "-m",
            "zapomni_db.keeper",
            "--data-dir",
            str(self.paths.data_dir),
            "--appendfsync",
            self._appendfsync,
        ]
        log_fd = os.open(self.paths.keeper_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.fchmod(log_fd, 0o600)  # one an older Zapomni made 0644
        with os.fdopen(log_fd, "ab") as keeper_log:
            # A new session: the keeper must not receive the client's SIGINT or die with it.
            subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=keeper_log,
                stderr=keeper_log,
                start_new_session=True,
                close_fds=True,
            )

    def _wait_ready(self, *, found_keeper: bool = False) -> None:
        """Wait until the server answers. While it is loading (`probe`) it is given all the time it needs:
        decoding a million chunks takes ~8 s, replaying a long append-only file minutes (the indexes are built
        afterwards, decision 0036); the timeout counts only time in which nothing listened on the socket.

        `found_keeper`: the keeper was running before this client came; if it leaves (it was stopping the database
        for the last client gone), this client starts the database again."""
        deadline, noted, pause = time.monotonic() + self._start_timeout_s, time.monotonic(), _FIRST_LOADING_PAUSE_S
        while (state := probe(self.socket)) != "ready":
            now = time.monotonic()
            if state == "loading":
                deadline = now + self._start_timeout_s
                if now - noted >= 10:
                    log.info("db.embedded.loading", socket=str(self.socket))
                    noted = now
            elif now > deadline:
                raise DatabaseUnavailable(f"the embedded FalkorDB did not become ready; see {self.paths.log_file}")
            if state == "down":
                # The keeper found was stopping the database for the last client to leave (saving a large store
                # takes seconds): once it is gone, this client starts the database again.
                if found_keeper and not self._keeper_alive():
                    log.info("db.embedded.starting_again", reason="the keeper found was stopping the database")
                    self._spawn_keeper()
                    self.started_here, found_keeper = True, False
                time.sleep(0.05)
                continue
            # Each probe of a loading server queues a connection: probed often at first (a load of seconds is
            # noticed as it ends), then less often.
            time.sleep(pause)
            pause = min(pause * 1.5, _LAST_LOADING_PAUSE_S)


# Databases this process began opening before it loaded the rest of itself, by data directory.
_EARLY: dict[Path, EmbeddedDatabase] = {}


def open_early(data_dir: Path, *, appendfsync: str = "always") -> None:
    """Begin opening the embedded database of `data_dir` in the background; `EmbeddedDatabase.for_directory`
    hands it over. `zapomni serve` calls this before importing the engine, the MCP SDK and the drivers (1.8 s):
    FalkorDB decodes a large store meanwhile, on the other core (a million chunks: 8-12 s, decision 0045)."""
    database = EmbeddedDatabase(data_dir, appendfsync=appendfsync)
    _EARLY[database.paths.data_dir] = database
    database.open_in_background()
