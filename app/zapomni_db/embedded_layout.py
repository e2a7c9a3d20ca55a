"""The embedded database's data directory: where each file goes, and whether a server answers on its socket.

Layout under the data directory::

    db/                 redis working dir: appendonlydir/, dump.rdb, redis.log
    run/startup.lock    serialises start, attach and stop decisions
    run/clients/*.lock  one per attached Zapomni process, flock-held for its lifetime
    run/falkordb.sock   the unix socket (or a short path in the temp dir, see `_socket_path`)
    run/keeper.*        the keeper's lock, pid and log

The standard library only: the keeper (`zapomni_db.keeper`), started by every first client of a data directory,
imports this and not the clients' libraries (redis-py and structlog were most of its start-up).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket as _socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from zapomni_db.errors import DirectoryUnusable

# Unix socket paths are limited to 108 bytes on Linux; leave room for the terminator.
_MAX_SOCKET_PATH = 100


@dataclass(frozen=True)
class EmbeddedPaths:
    data_dir: Path

    @property
    def db_dir(self) -> Path:
        return self.data_dir / "db"

    @property
    def run_dir(self) -> Path:
        return self.data_dir / "run"

    @property
    def clients_dir(self) -> Path:
        return self.run_dir / "clients"

    @property
    def startup_lock(self) -> Path:
        return self.run_dir / "startup.lock"

    @property
    def keeper_lock(self) -> Path:
        return self.run_dir / "keeper.lock"

    @property
    def keeper_pid(self) -> Path:
        return self.run_dir / "keeper.pid"

    @property
    def socket(self) -> Path:
        return _socket_path(self.run_dir)

    @property
    def log_file(self) -> Path:
        return self.db_dir / "redis.log"

    @property
    def keeper_log(self) -> Path:
        return self.run_dir / "keeper.log"

    def create(self) -> None:
        """The layout, private to this user: every directory Zapomni creates here is 0700."""
        for directory in (self.data_dir, self.db_dir, self.run_dir, self.clients_dir):
            make_private_dir(directory)


def make_private_dir(path: Path) -> None:
    """Create `path` 0700 (missing parents as `mkdir -p` would); one that already exists is left as it is.

    Memories are private: a data directory Zapomni creates is this user's only. mkdir's mode is
    subject to the umask, hence the chmod; a directory the user made beforehand keeps the
    permissions they gave it. A path that cannot be a directory raises DirectoryUnusable, saying why.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(mode=0o700)
    except FileExistsError:
        if path.is_dir():
            return
        where = path if path.exists() else f"a part of {path}"
        raise DirectoryUnusable(f"{where} exists and is not a directory") from None
    except NotADirectoryError:
        raise DirectoryUnusable(f"a part of {path} exists and is not a directory") from None
    except OSError as exc:
        raise DirectoryUnusable(f"cannot create {path}: {exc.strerror or exc}") from None
    os.chmod(path, 0o700)


def _socket_path(run_dir: Path) -> Path:
    preferred = run_dir / "falkordb.sock"
    if len(str(preferred)) <= _MAX_SOCKET_PATH:
        return preferred
    digest = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"zapomni-{digest}.sock"


def ping(socket: Path, timeout_s: float = 1.0) -> bool:
    """True when a server answers on `socket` and has finished loading its data."""
    return probe(socket, timeout_s) == "ready"


def probe(socket: Path, timeout_s: float = 1.0) -> str:
    """What a server on `socket` is doing: "ready" when it answers; "loading" while it answers LOADING, takes
    the connection without answering, or has a full queue of connections it has not taken (FalkorDB builds
    its vector index on the thread that answers: minutes at a million chunks, during which every probe's
    connection waits in the listen queue until it is full); "down" when nothing listens.

    A raw RESP `PING` rather than a client: a refused connection, a full queue and silence must be told apart
    (a client reports the first two alike)."""
    if not socket.exists():
        return "down"
    with contextlib.closing(_socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)) as conn:
        conn.settimeout(timeout_s)
        try:
            conn.connect(str(socket))
        except (BlockingIOError, TimeoutError):  # EAGAIN: a listener whose queue is full
            return "loading"
        except OSError:  # refused, or the socket file is stale
            return "down"
        try:
            conn.sendall(b"*1\r\n$4\r\nPING\r\n")
            reply = conn.recv(64)
        except TimeoutError:
            return "loading"
        except OSError:
            return "down"
    if reply.startswith(b"-LOADING"):
        return "loading"
    return "ready" if reply else "down"  # any other answer comes from a server that is up: its client says more
