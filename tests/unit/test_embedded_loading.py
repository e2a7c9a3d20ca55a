"""A database still loading its data is waited for beyond the start timeout; one that never answers is not.

Loading a large store rebuilds FalkorDB's vector index (minutes at a million chunks, decision 0026), during
which Redis answers LOADING or, while the index is built, nothing at all. A local unix socket speaking RESP
stands in for it: it does either for a while, then answers as a ready server would (HELLO 3, PING).
"""

from __future__ import annotations

import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from zapomni_db import _locks
from zapomni_db.embedded import EmbeddedDatabase, open_early
from zapomni_db.embedded_layout import probe
from zapomni_db.errors import DatabaseUnavailable, DirectoryUnusable

_HELLO = b"%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n"


def _reply(command: bytes, loading: bool, silent: bool) -> bytes:
    if loading:
        return b"" if silent else b"-LOADING Redis is loading the dataset in memory\r\n"
    word = command.split(b"\r\n")[2].upper() if command.count(b"\r\n") >= 2 else b""
    return {b"HELLO": _HELLO, b"PING": b"+PONG\r\n"}.get(word, b"+OK\r\n")


def _serve(path: Path, loading_until: float, silent: bool, listening: threading.Event, stop: threading.Event) -> None:
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen(16)
        listening.set()
        server.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)  # a silent server keeps the connection until the client gives up
                try:
                    while data := conn.recv(65536):
                        # One reply per command (each starts with a RESP array header).
                        for command in data.split(b"*")[1:]:
                            conn.sendall(_reply(b"*" + command, time.monotonic() < loading_until, silent))
                except OSError:
                    pass


@pytest.fixture
def data_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="zl-", dir="/tmp") as folder:  # short: unix socket paths are limited
        yield Path(folder)


def _loading_server(database: EmbeddedDatabase, seconds: float, silent: bool) -> threading.Event:
    database.paths.create()
    listening, stop = threading.Event(), threading.Event()
    until = time.monotonic() + seconds
    threading.Thread(target=_serve, args=(database.socket, until, silent, listening, stop), daemon=True).start()
    # Not the socket file: it exists from `bind`, and a probe between `bind` and `listen` is refused ("down").
    assert listening.wait(5)
    return stop


@pytest.mark.parametrize("silent", [False, True], ids=["answers LOADING", "takes connections, answers nothing"])
def test_a_loading_database_is_waited_for_past_the_start_timeout(data_dir: Path, silent: bool) -> None:
    database = EmbeddedDatabase(data_dir, start_timeout_s=0.3)
    stop = _loading_server(database, seconds=2.5, silent=silent)
    try:
        assert probe(database.socket) == "loading"
        database._wait_ready()  # 2.5 s of loading against a 0.3 s timeout
        assert probe(database.socket) == "ready"
    finally:
        stop.set()


def test_a_database_that_never_answers_fails_after_the_timeout(data_dir: Path) -> None:
    database = EmbeddedDatabase(data_dir, start_timeout_s=0.3)
    database.paths.create()
    assert probe(database.socket) == "down"
    started = time.monotonic()
    with pytest.raises(DatabaseUnavailable, match="did not become ready"):
        database._wait_ready()
    assert time.monotonic() - started < 5


def test_a_second_client_waits_for_the_startup_lock_while_the_first_waits_for_a_load(data_dir: Path) -> None:
    # The lock is held through 5 s of loading, against a 1.5 s timeout (the margin lets the first let go after it).
    first, second = EmbeddedDatabase(data_dir, start_timeout_s=1.5), EmbeddedDatabase(data_dir, start_timeout_s=1.5)
    stop = _loading_server(first, seconds=5.0, silent=False)
    outcome: list[BaseException | None] = []

    def open_second() -> None:
        try:
            second.open()
            outcome.append(None)
        except BaseException as exc:  # reported below
            outcome.append(exc)

    try:
        with _locks.exclusive(first.paths.startup_lock, 1.0):
            waiter = threading.Thread(target=open_second)
            waiter.start()
            first._wait_ready()
        waiter.join(20)
        assert outcome == [None]  # it attached once the first let go, instead of timing out
        second.close()
    finally:
        stop.set()


def test_a_client_arriving_while_the_keeper_stops_the_database_starts_it_again(data_dir: Path) -> None:
    # The last client left: its keeper is saving a large store before it stops (15 s at a million chunks), no
    # server answers, and the keeper's lock is held until it exits. A client opening then waited for the start
    # timeout and failed ("did not become ready"); it starts the database again once the keeper is gone.
    database = EmbeddedDatabase(data_dir, start_timeout_s=8.0)
    database.paths.create()
    outcome: list[BaseException | None] = []

    def open_database() -> None:
        try:
            database.open()
            outcome.append(None)
        except BaseException as exc:  # reported below
            outcome.append(exc)

    with _locks.exclusive(database.paths.keeper_lock, 1.0):  # the stopping keeper
        opener = threading.Thread(target=open_database)
        opener.start()
        time.sleep(1.0)
        assert not outcome and probe(database.socket) == "down", "it waits while the keeper is still there"
    started = time.monotonic()
    opener.join(30)
    try:
        assert outcome == [None] and database.started_here
        assert time.monotonic() - started < 6, "started again at once, not after the start timeout"
        assert probe(database.socket) == "ready"
    finally:
        database.close()


def test_a_lock_held_with_no_database_loading_still_times_out(data_dir: Path) -> None:
    database = EmbeddedDatabase(data_dir, start_timeout_s=0.3)
    database.paths.create()
    with _locks.exclusive(database.paths.startup_lock, 1.0), pytest.raises(DatabaseUnavailable, match="lock"):
        database.open()


def test_a_listener_whose_queue_is_full_is_loading_not_down(data_dir: Path) -> None:
    # A server busy loading takes no connection: each probe's waits in its listen queue until the queue is full
    # (at a million chunks, minutes of probes fill Redis' 511), and then a connection is refused with EAGAIN.
    database = EmbeddedDatabase(data_dir, start_timeout_s=0.3)
    database.paths.create()
    queued = []
    with socket.socket(socket.AF_UNIX) as busy:
        busy.bind(str(database.socket))
        busy.listen(1)
        while True:
            waiting = socket.socket(socket.AF_UNIX)
            waiting.setblocking(False)
            try:
                waiting.connect(str(database.socket))
            except BlockingIOError:
                waiting.close()
                break
            queued.append(waiting)
        assert probe(database.socket) == "loading"
    for waiting in queued:
        waiting.close()
    assert probe(database.socket) == "down"  # the socket file is left, nothing listens


def test_an_opening_begun_early_is_handed_over_once_and_finished_by_open(data_dir: Path) -> None:
    stand_in = EmbeddedDatabase(data_dir)
    stop = _loading_server(stand_in, seconds=1.0, silent=False)
    try:
        # Held here, the startup lock keeps the early opening waiting in its thread, as another client's start would.
        with _locks.exclusive(stand_in.paths.startup_lock, 1.0):
            open_early(data_dir)
            database = EmbeddedDatabase.for_directory(data_dir)
            time.sleep(1.2)  # past the load
            assert database.attached_clients() == 0  # not registered yet: the opening waits for the lock
        database.open()  # waits for the opening in the background to finish
        assert database.attached_clients() == 1
        assert probe(database.socket) == "ready"
        assert EmbeddedDatabase.for_directory(data_dir) is not database  # handed over once
        database.close()
        assert database.attached_clients() == 0
    finally:
        stop.set()


def test_an_early_opening_that_failed_raises_its_error_at_open(data_dir: Path) -> None:
    taken = data_dir / "a-file"
    taken.write_text("")
    open_early(taken)
    database = EmbeddedDatabase.for_directory(taken)
    with pytest.raises(DirectoryUnusable, match="exists and is not a directory"):
        database.open()
