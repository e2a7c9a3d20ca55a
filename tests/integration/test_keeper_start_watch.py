"""A server that never answers after a start is killed and started again by its keeper (zapomni_db.start_watch),
and so is a scratch server (backup and restore checks); one that loads, however long, is left to load."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.helpers import wait_for
from tests.processes import child_env
from zapomni_db import _locks
from zapomni_db.embedded_layout import EmbeddedPaths, ping
from zapomni_db.errors import DatabaseUnavailable
from zapomni_db.server import ScratchServer
from zapomni_db.start_watch import StartWatch

# The keeper as it runs, with the deadlocking STAND-IN (tests/fakes/deadlocked_server.py) as its server and a 2 s
# stall instead of 15 s.
KEEPER_WITH_STAND_IN = textwrap.dedent(
    """
    import functools, sys
    import zapomni_db.keeper as keeper
    keeper.server_command = lambda paths, appendfsync: [
        sys.executable, "-m", "tests.fakes.deadlocked_server", str(paths.socket), str(paths.run_dir / "deadlocked")
    ]
    keeper.StartWatch = functools.partial(keeper.StartWatch, stuck_after_s=2.0)
    sys.argv = ["keeper", "--data-dir", sys.argv[1]]
    keeper.main()
    """
)


def events(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


def test_a_server_deadlocked_while_loading_is_killed_and_started_again(data_dir: Path) -> None:
    paths = EmbeddedPaths(data_dir)
    paths.create()
    client = _locks.try_exclusive(paths.clients_dir / "test.lock")  # a client attached: the keeper stays
    log = data_dir / "keeper.log"
    with log.open("w") as stderr:
        keeper = subprocess.Popen(
            [sys.executable, "-c", KEEPER_WITH_STAND_IN, str(data_dir)],
            env=child_env(),
            cwd=Path(__file__).resolve().parents[2],
            stderr=stderr,
        )
    try:
        started = time.monotonic()
        assert wait_for(lambda: ping(paths.socket), timeout_s=30), events(log)
        took = time.monotonic() - started
        said = [e["event"] for e in events(log)]
        assert said == [
            "keeper.server_started",
            "keeper.server_stuck",
            "keeper.server_restarting",
            "keeper.server_started",
        ], said
        assert 2 <= took < 25, took  # the 2 s stall, two starts of a Python stand-in on a busy machine
    finally:
        keeper.send_signal(signal.SIGTERM)
        keeper.wait(timeout=30)
        assert client is not None
        os.close(client)


ASLEEP = "import threading; lock = threading.Lock(); lock.acquire(); lock.acquire()"
# The main thread waits for a lock while another thread works: FalkorDB's indexer holding the module lock.
WAITING_FOR_A_WORKER = (
    "import threading\n"
    "def work():\n"
    "    while True: pass\n"
    "threading.Thread(target=work).start()\n"
    "lock = threading.Lock(); lock.acquire(); lock.acquire()\n"
)


def test_a_server_none_of_whose_threads_runs_is_stuck_and_any_other_is_not() -> None:
    processes = [
        subprocess.Popen([sys.executable, "-c", code]) for code in ("while True: pass", WAITING_FOR_A_WORKER, ASLEEP)
    ]
    try:
        watches = [StartWatch(process.pid, stuck_after_s=1.0) for process in processes]
        # At least 2.5 s of watching, and until the sleeper is seen stuck (its start may be slow on a busy machine).
        started, deadline = time.monotonic(), time.monotonic() + 10
        verdicts: set[tuple[bool, ...]] = set()
        while time.monotonic() < deadline and not (
            time.monotonic() - started > 2.5 and (False, False, True) in verdicts
        ):
            verdicts.add(tuple(watch.stuck(lambda: False) for watch in watches))
            time.sleep(0.1)
        assert (False, False, True) in verdicts and all(not busy and not waiting for busy, waiting, _ in verdicts), (
            verdicts
        )
        # One that answers once it has stalled is serving, idle: watched no longer.
        serving = StartWatch(processes[2].pid, stuck_after_s=0.0)
        assert not serving.stuck(lambda: True) and serving.answered and not serving.stuck(lambda: False)
    finally:
        for process in processes:
            process.kill()
            process.wait()


class StandInScratchServer(ScratchServer):
    """A scratch server whose server is the deadlocking STAND-IN: stuck on its first start, or on every start
    when `always_stuck` (its mark is removed before each)."""

    def __init__(self, db_dir: Path, *, always_stuck: bool = False) -> None:
        super().__init__(db_dir, stuck_after_s=2.0, timeout_s=60.0)
        self.mark = db_dir / "deadlocked"
        self.always_stuck = always_stuck
        self.starts = 0

    def command(self) -> list[str]:
        self.starts += 1
        if self.always_stuck:
            self.mark.unlink(missing_ok=True)
        return [sys.executable, "-m", "tests.fakes.deadlocked_server", str(self.socket), str(self.mark)]


def test_a_scratch_server_stuck_while_loading_is_started_again(tmp_path: Path) -> None:
    server = StandInScratchServer(tmp_path)
    with server:
        assert ping(server.socket)
    assert (server.starts, server.restarts) == (2, 1)
    assert not server.socket.exists()  # stopped and its run directory removed


def test_a_scratch_server_stuck_at_every_start_is_given_up_after_three(tmp_path: Path) -> None:
    server = StandInScratchServer(tmp_path, always_stuck=True)
    started = time.monotonic()
    with pytest.raises(DatabaseUnavailable, match="did not load"), server:
        pass
    assert (server.starts, server.restarts) == (3, 2)
    assert time.monotonic() - started < 45  # three 2 s stalls, not the 60 s deadline
