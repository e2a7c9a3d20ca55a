"""Loading a backup's snapshot in a scratch server, and checking a backup end to end."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import redis
import structlog

from zapomni_db.backup.errors import BackupInvalid
from zapomni_db.backup.graph_state import GraphState, read_state, wait_for_indexes
from zapomni_db.backup.manifest import RDB_NAME, Manifest, check_files, check_state, read_manifest
from zapomni_db.errors import DatabaseUnavailable
from zapomni_db.server import ScratchServer, direct_client

log = structlog.get_logger(__name__)


@contextlib.contextmanager
def scratch_client(db_dir: Path, graph: str, **server_options: Any) -> Iterator[redis.Redis]:
    """A client to a scratch server over `db_dir` (`ScratchServer` options), once loaded and its indexes built."""
    with ScratchServer(db_dir, **server_options) as server:
        client = direct_client(unix_socket=server.socket, timeout_s=300.0)
        try:
            wait_for_indexes(client, graph)
            yield client
        finally:
            client.close()


@contextlib.contextmanager
def backup_client(backup_dir: Path, db_dir: Path, graph: str, **server_options: Any) -> Iterator[redis.Redis]:
    """`scratch_client` over a copy of `backup_dir`'s RDB in `db_dir`: one that does not load is BackupInvalid."""
    with contextlib.ExitStack() as stack:
        try:
            client = stack.enter_context(scratch_client(db_dir, graph, **server_options))
        except DatabaseUnavailable as exc:
            raise BackupInvalid(f"the snapshot in {backup_dir} does not load: {exc}") from None
        yield client


@contextlib.contextmanager
def scratch_directory(near: Path) -> Iterator[Path]:
    """A temporary directory beside `near` (same filesystem, so files can be linked), else in the temp dir."""
    try:
        path = Path(tempfile.mkdtemp(prefix=".zapomni-scratch-", dir=near))
    except OSError:
        path = Path(tempfile.mkdtemp(prefix="zapomni-scratch-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def place_rdb(rdb: Path, db_dir: Path) -> None:
    """Put `rdb` into `db_dir` as dump.rdb: a hard link when possible, else a copy.

    A link is safe: Redis never writes an RDB in place (it writes a temp file and renames it over),
    so a server loading the link cannot change the backup's file.
    """
    target = db_dir / RDB_NAME
    try:
        os.link(rdb, target)
    except OSError:
        shutil.copyfile(rdb, target)


def state_of_copy(backup_dir: Path, graph: str, probe_chunk_id: str | None = None) -> GraphState:
    """Load the backup's RDB in a scratch server (the AOF off: an RDB alone) and read its state."""
    with scratch_directory(backup_dir.parent) as scratch:
        place_rdb(backup_dir / RDB_NAME, scratch)
        with backup_client(backup_dir, scratch, graph, appendonly=False) as client:
            return read_state(client, graph, probe_chunk_id=probe_chunk_id)


def verify_backup(backup_dir: Path) -> Manifest:
    """Check a backup end to end; return its manifest or raise BackupInvalid.

    Manifest, then sizes and checksums, then a scratch server loads a copy of the RDB and must
    answer the manifest's counts, schema version, embedder and probe vector query exactly.
    """
    started = time.perf_counter()
    manifest = read_manifest(backup_dir)
    check_files(backup_dir, manifest)
    check_state(backup_dir, manifest, state_of_copy(backup_dir, manifest.graph_name, manifest.probe_chunk_id))
    log.info("backup.verified", path=str(backup_dir), duration_s=round(time.perf_counter() - started, 3))
    return manifest
