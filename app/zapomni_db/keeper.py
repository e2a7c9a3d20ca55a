"""The keeper: owns the embedded redis-server + FalkorDB process for one data directory.

Started detached by the first client (`EmbeddedDatabase.open`). It restarts the server if it
crashes while clients are attached, and stops it (SHUTDOWN SAVE) once no client holds a lock
any more: that covers a last client that was killed without detaching. It watches the disk of the
data directory: while it is full, the server runs with writes suspended instead of crashing on each
write that does not fit (`DiskWatch`, `zapomni_db.disk_state`).

Run: ``python -m zapomni_db.keeper --data-dir DIR [--appendfsync always|everysec]``
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import json
import os
import shlex
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from zapomni_db import _locks, resp
from zapomni_db.disk_state import (
    RESUME_AT_BYTES,
    SUSPEND_BELOW_BYTES,
    WriteSuspension,
    free_bytes,
    served,
    state_file,
    write_failure,
    write_state,
)
from zapomni_db.embedded_layout import EmbeddedPaths, ping
from zapomni_db.server_commands import PRIVATE_UMASK, falkordb_command
from zapomni_db.start_watch import StartWatch

POLL_S = 0.5
# Clients register before the keeper starts, so "no live client" twice in a row means all are gone.
IDLE_CHECKS_BEFORE_STOP = 2
# A crashed server is restarted at once; one that keeps crashing is restarted ever more slowly, up to
# this pause, but never given up on while clients are attached. A full disk is not such a crash: the
# server comes back with writes suspended until there is room (`DiskWatch`), reads go on meanwhile.
MAX_RESTART_DELAY_S = 10.0
# A server that ran this long before crashing counts as healthy again: the next restart is immediate.
STABLE_RUN_S = 60.0
# A stop kills an append-only-file rewrite in progress, and the next start then replays every write since the
# previous one (slow, and FalkorDB's vector index must be rebuilt after it: decisions 0007, 0029). A closing
# writer asks for a rewrite and waits 10 s; at 100K chunks one took 4.5-10.5 s (load 7-12), at 1M ~10x that
# (bench/results/aof_rewrite.md). The keeper lets it finish, this long at most: with the final snapshot
# (`_stop_server`, up to 60 s) it stays within the 120 s a client waits for the keeper to exit.
REWRITE_WAIT_S = 50.0
_PR_SET_PDEATHSIG = 1


def _say(event: str, **fields: object) -> None:
    print(json.dumps({"event": event, "ts": time.time(), **fields}), file=sys.stderr, flush=True)


def server_command(paths: EmbeddedPaths, appendfsync: str) -> list[str]:
    # TCP off: the embedded server is reached through its unix socket only. A large store answers once loaded,
    # its indexes built afterwards (reads go on meanwhile; writes wait: `WriteFence.hold`).
    command = falkordb_command(
        paths.db_dir,
        port=0,
        unix_socket=paths.socket,
        appendfsync=appendfsync,
        log_file=paths.log_file,
        delay_indexing=True,
    )
    # On a full disk the final snapshot fails and redis-server refuses to exit on SIGTERM ("Error
    # trying to save the DB, can't exit"): the stop would hang until killed. `force` exits anyway,
    # after the AOF has been fsynced, so nothing acknowledged is lost (measured on a full tmpfs).
    # A failed background snapshot (no room for the RDB) would otherwise refuse every write with
    # MISCONF until a later snapshot succeeds, which Redis retries only when a save point is due
    # (minutes after the space is back). Every write is in the fsynced AOF; the RDB only loads faster.
    command += ["--shutdown-on-sigterm", "force", "--stop-writes-on-bgsave-error", "no"]
    # More redis-server options, as the appliance's database takes them (ops/supervisor/databases.conf); normally
    # none. Tests slow a load down with them (`--key-load-delay`).
    return [*command, *shlex.split(os.environ.get("FALKORDB_EXTRA_ARGS", ""))]


def run(paths: EmbeddedPaths, appendfsync: str) -> int:
    keeper_fd = _locks.try_exclusive(paths.keeper_lock)
    if keeper_fd is None:
        _say("keeper.already_running")
        return 0
    stopping = False

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the client's Ctrl-C is not ours

    paths.keeper_pid.write_text(str(os.getpid()))
    disk = DiskWatch(paths)
    disk.check_before_start()
    restarts = 0  # crashes in a row, each within STABLE_RUN_S of its start
    server = _start_server(paths, appendfsync, suspended=disk.suspended)
    restart_at: float | None = None
    idle_checks = 0
    while not stopping:
        time.sleep(POLL_S)
        if not paths.clients_dir.is_dir():
            break
        if restart_at is None and not disk.waiting and server.process.poll() is not None:
            # Only this process stops the server, so an exit we did not ask for is a crash.
            failure = write_failure(paths.log_file, server.log_offset)
            if failure is not None and not served(paths.log_file, server.log_offset):
                # It could not even start on the full disk: starting it again is pointless until there is room.
                disk.wait_for_space(failure)
            else:
                if failure is not None:
                    disk.suspend(crashed=True, detail=failure)
                restarts = restarts + 1 if time.monotonic() - server.started < STABLE_RUN_S else 1
                delay = restart_delay(restarts)
                _say(
                    "keeper.server_restarting",
                    code=server.process.returncode,
                    restarts=restarts,
                    delay_s=delay,
                    disk_full=failure is not None,
                )
                restart_at = time.monotonic() + delay
        if disk.waiting and disk.has_room():
            restart_at = time.monotonic()
            disk.waiting = False
        if restart_at is not None and time.monotonic() >= restart_at:
            server, restart_at = _start_server(paths, appendfsync, suspended=disk.suspended), None
            continue
        if restart_at is None and not disk.waiting:
            _kill_if_stuck(server, paths.socket)
            disk.watch(paths.socket)
        # Stopping for idleness happens under the startup lock, so a client that is attaching
        # sees either a keeper that will serve it or none at all.
        try:
            fd = _locks.try_exclusive(paths.startup_lock)
        except OSError:  # the run directory vanished between the check above and here
            break
        if fd is None:
            continue
        try:
            idle_checks = idle_checks + 1 if _locks.live_holders(paths.clients_dir) == 0 else 0
            if idle_checks >= IDLE_CHECKS_BEFORE_STOP:
                _say("keeper.stopping", reason="no client attached")
                _finish_rewrite(paths.socket)
                _stop_server(server.process)
                disk.forget()
                _release(paths, keeper_fd)
                return 0
        finally:
            os.close(fd)
    # SIGTERM from the last client to detach (it holds the startup lock while it waits for us),
    # or the data directory went away under us.
    _say("keeper.stopping", reason="signal" if stopping else "no data directory")
    if stopping:
        _finish_rewrite(paths.socket)
        _stop_server(server.process)
        disk.forget()
    else:
        server.process.kill()  # its directory is gone: nothing left to save, and a save would fail
        server.process.wait()
    _release(paths, keeper_fd)
    return 0


class DiskWatch:
    """Suspends the server's writes while its disk is full and lifts the suspension once there is room.

    See `zapomni_db.disk_state`: writes are suspended with min-replicas-to-write (the server stays up
    for reads) rather than the server restarted into the next write that does not fit.
    """

    def __init__(self, paths: EmbeddedPaths) -> None:
        self._paths = paths
        self.suspension: WriteSuspension | None = None
        self.waiting = False  # the server is down and waits for room to start again
        write_state(paths, None)  # made now, while there is room, so that it can be rewritten on a full disk

    @property
    def suspended(self) -> bool:
        return self.suspension is not None

    def free(self) -> int:
        try:
            return free_bytes(self._paths.db_dir)
        except OSError:
            return RESUME_AT_BYTES  # cannot tell: do not suspend on a guess

    def has_room(self) -> bool:
        return self.free() >= RESUME_AT_BYTES

    def check_before_start(self) -> None:
        if self.free() < SUSPEND_BELOW_BYTES:
            self.suspend(crashed=False)

    def suspend(self, *, crashed: bool, detail: str = "") -> None:
        free = self.free()
        if self.suspension is None:
            self.suspension = WriteSuspension(time.time(), free, RESUME_AT_BYTES, crashed, detail)
        else:  # keep when it began; say what happened since
            self.suspension = replace(self.suspension, free_bytes=free, crashed=self.suspension.crashed or crashed)
        write_state(self._paths, self.suspension)
        _say("keeper.disk_full", free_bytes=free, resume_at_bytes=RESUME_AT_BYTES, server_exited=crashed, log=detail)

    def wait_for_space(self, detail: str) -> None:
        self.waiting = True
        self.suspend(crashed=True, detail=detail)
        _say("keeper.waiting_for_space", free_bytes=self.free(), resume_at_bytes=RESUME_AT_BYTES)

    def watch(self, socket: Path) -> None:
        """Suspend writes before the disk is full, lift the suspension once it has room (server running)."""
        free = self.free()
        if self.suspension is None and free < SUSPEND_BELOW_BYTES:
            if _set_min_replicas(socket, 1):
                self.suspend(crashed=False)
        elif self.suspension is not None and free >= RESUME_AT_BYTES and _set_min_replicas(socket, 0):
            self.suspension = None
            write_state(self._paths, None)
            _say("keeper.writes_resumed", free_bytes=free)

    def forget(self) -> None:
        """The server stopped cleanly: the next keeper looks at the disk afresh."""
        with contextlib.suppress(OSError):
            state_file(self._paths).unlink()


def _set_min_replicas(socket: Path, count: int) -> bool:
    """Suspend (1) or allow (0) writes on the running server; False when it did not answer (retried next poll)."""
    try:
        return resp.command(socket, "CONFIG", "SET", "min-replicas-to-write", str(count), timeout_s=2.0) == b"OK"
    except (resp.ReplyError, OSError):
        return False


def make_private(*roots: Path) -> None:
    """Take group and other access off what is already under `roots`: files an older Zapomni left 0644/0755."""
    for root in roots:
        for directory, _dirs, files in os.walk(root):
            for path in [Path(directory), *(Path(directory, name) for name in files)]:
                with contextlib.suppress(OSError):  # gone meanwhile, or a socket's own mode
                    mode = path.lstat().st_mode
                    if mode & 0o077 and not stat.S_ISLNK(mode) and not stat.S_ISSOCK(mode):
                        path.chmod(stat.S_IMODE(mode) & 0o700)


def restart_delay(restarts: int) -> float:
    """0 for the first crash in a row, then 1, 2, 4 ... seconds, capped at MAX_RESTART_DELAY_S."""
    return 0.0 if restarts <= 1 else min(2.0 ** (restarts - 2), MAX_RESTART_DELAY_S)


def _release(paths: EmbeddedPaths, keeper_fd: int) -> None:
    with contextlib.suppress(OSError):
        paths.keeper_pid.unlink(missing_ok=True)
    os.close(keeper_fd)


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM (a clean, saving shutdown) if the keeper dies, even by kill -9."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass(frozen=True)
class Server:
    process: subprocess.Popen[bytes]
    started: float  # monotonic
    log_offset: int  # where its own lines begin in redis.log
    watch: StartWatch


def _kill_if_stuck(server: Server, socket: Path) -> None:
    """A server deadlocked while loading (`zapomni_db.start_watch`) is killed; the next poll restarts it."""
    if server.process.poll() is None and server.watch.stuck(lambda: ping(socket)):
        _say("keeper.server_stuck", pid=server.process.pid, stalled_s=round(server.watch.stalled_for, 1))
        server.process.kill()


def _start_server(paths: EmbeddedPaths, appendfsync: str, *, suspended: bool) -> Server:
    try:
        offset = paths.log_file.stat().st_size
    except OSError:
        offset = 0
    command = server_command(paths, appendfsync)
    if suspended:  # started with writes refused: the first write must not be the one that does not fit
        command += ["--min-replicas-to-write", "1"]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
    )
    _say("keeper.server_started", pid=process.pid, writes_suspended=suspended)
    return Server(process, time.monotonic(), offset, StartWatch(process.pid))


def _finish_rewrite(socket: Path, timeout_s: float = REWRITE_WAIT_S) -> None:
    """Wait until the server has no AOF rewrite running or scheduled (see REWRITE_WAIT_S); best effort."""
    started = time.monotonic()
    try:
        while True:
            info = resp.info_fields(resp.command(socket, "INFO", "persistence", timeout_s=5.0))
            if not int(info.get("aof_rewrite_in_progress", 0)) and not int(info.get("aof_rewrite_scheduled", 0)):
                if time.monotonic() - started > POLL_S:
                    _say("keeper.rewrite_finished", waited_s=round(time.monotonic() - started, 1))
                return
            if time.monotonic() - started > timeout_s:
                _say("keeper.rewrite_unfinished", waited_s=round(time.monotonic() - started, 1))
                return
            time.sleep(0.1)
    except (resp.ReplyError, OSError, ValueError):
        return  # not answering: nothing to wait for that the stop could spoil


def _stop_server(server: subprocess.Popen[bytes]) -> None:
    # SIGTERM makes redis-server shut down as SHUTDOWN SAVE would: fsync the AOF, write the RDB.
    # Unlike the command, it needs no socket, so it works even if the data directory vanished.
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--appendfsync", choices=["always", "everysec", "no"], default="always")
    args = parser.parse_args()
    os.umask(PRIVATE_UMASK)  # the keeper's files and the server's (it inherits the umask) are 0600/0700
    paths = EmbeddedPaths(args.data_dir)
    paths.create()
    make_private(paths.db_dir, paths.run_dir)
    sys.exit(run(paths, args.appendfsync))


if __name__ == "__main__":
    main()
