"""Making a backup: snapshot the server, copy its files, describe them in a manifest, put it in place."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import redis
import structlog

from zapomni_db.backup.catalogue import final_path, new_partial_dir
from zapomni_db.backup.errors import BackupInvalid
from zapomni_db.backup.files import fsync_dir
from zapomni_db.backup.graph_state import GraphState, state_differences
from zapomni_db.backup.manifest import (
    AOF_DIR_NAME,
    FORMAT,
    FORMAT_VERSION,
    Manifest,
    check_files,
    read_manifest,
    write_manifest,
)
from zapomni_db.backup.snapshot import copy_aof, server_file_names, snapshot_and_copy
from zapomni_db.backup.verify import state_of_copy
from zapomni_db.embedded_layout import make_private_dir
from zapomni_db.version import package_version

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class BackupResult:
    path: Path
    manifest: Manifest
    verified: bool
    snapshot_s: float  # BGSAVE and copying the files
    verify_s: float


def create_backup(
    client: redis.Redis, db_files_dir: Path, backups_dir: Path, graph: str, *, verify: bool = True
) -> BackupResult:
    """Snapshot the server behind `client`, whose files are in `db_files_dir`, into a new backup directory.

    With `verify`, a scratch server loads the copy, which must hold the server's counts, schema
    and embedder at the instant of the snapshot (that load also records the probe), and the files
    are read back against their checksums. One load, not a second `verify_backup`: loading builds
    the vector index, the slow part, and the probe it records is what every later load must
    answer (`verify_backup`, a restore). Nothing with a backup's name appears unless the backup is
    complete, and verified when asked.
    """
    make_private_dir(backups_dir)  # the backups themselves are 0700 too (`new_partial_dir`)
    rdb_name, aof_name = server_file_names(client)
    partial = new_partial_dir(backups_dir)
    try:
        started = time.perf_counter()
        snapshot, rdb_entry = snapshot_and_copy(client, graph, db_files_dir / rdb_name, partial)
        aof_source = db_files_dir / aof_name
        aof_entries = copy_aof(aof_source, partial / AOF_DIR_NAME) if aof_source.is_dir() else []
        copied = time.perf_counter()
        log.info("backup.copied", files=1 + len(aof_entries), bytes=rdb_entry.size + sum(e.size for e in aof_entries))
        state, matched = _describe_copy(partial, graph, snapshot.state, load=verify)
        manifest = Manifest(
            format=FORMAT,
            format_version=FORMAT_VERSION,
            created_at=snapshot.taken_at.isoformat().replace("+00:00", "Z"),
            zapomni_version=package_version(),
            redis_version=snapshot.redis_version,
            falkordb_version=snapshot.falkordb_version,
            graph_name=graph,
            state=state,
            matched_server=matched,
            files=[rdb_entry, *aof_entries],
        )
        write_manifest(partial, manifest)
        if verify:
            check_files(partial, read_manifest(partial))
        verified = time.perf_counter()
        final = final_path(backups_dir, snapshot.taken_at)
        partial.rename(final)
        fsync_dir(backups_dir)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    log.info("backup.created", path=str(final), memories=state.counts.memories, verified=verify, matched=matched)
    return BackupResult(
        path=final,
        manifest=manifest,
        verified=verify,
        snapshot_s=round(copied - started, 3),
        verify_s=round(verified - copied, 3),
    )


def _describe_copy(backup_dir: Path, graph: str, at_fork: GraphState | None, *, load: bool) -> tuple[GraphState, bool]:
    """The state for the manifest, and whether the loaded copy matched the server at the fork."""
    if not load and at_fork is not None:
        return at_fork, False  # unverified: counts from the server, no probe
    described = state_of_copy(backup_dir, graph)
    if at_fork is None:
        log.warning(
            "backup.unpinned", detail="writes kept landing around the snapshot; the manifest describes the file"
        )
        return described, False
    differences = state_differences(at_fork, described, probe=False)
    if differences:
        raise BackupInvalid(
            "the snapshot does not hold what the server had when it was taken: " + "; ".join(differences)
        )
    return described, True
