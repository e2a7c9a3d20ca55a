"""Backup and restore as configured: which database, which files, where backups go.

The storage primitives (`zapomni_db.backup`) take explicit paths and a
client; this module derives them from `Settings`, opens the database the way the server would
(embedded: start or attach to the data directory's server; server mode: FALKORDB_HOST/PORT), and
turns storage errors into messages for the operator.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from zapomni_core import (
    ConfigurationError,
    Settings,
    StorageUnavailable,
    ZapomniError,
    embedded_paths,
    falkordb_password,
    withdraw_index_proof,
)
from zapomni_db import DatabaseError, DatabaseUnavailable
from zapomni_db.backup import (
    BackupEntry,
    BackupResult,
    Client,
    RestoreResult,
    create_backup,
    embedded_client,
    list_backups,
    prune_backups,
    read_manifest,
    read_state,
    reinstate,
    restore,
    server_client,
    wait_for_indexes,
)

log = structlog.get_logger(__name__)

# Counting a large graph inside the snapshot's transaction can take a while; this is an operator
# command, not a request path.
_COMMAND_TIMEOUT_S = 300.0


class BackupFailed(ZapomniError):
    """A backup or restore did not happen; the message says why and what was left as it was."""


@dataclass(frozen=True)
class BackupOutcome:
    result: BackupResult
    pruned: list[Path]


def backups_dir(settings: Settings, override: Path | None = None) -> Path:
    return (override or settings.backups_dir).expanduser()


def db_files_dir(settings: Settings) -> Path:
    """Where the database's dump.rdb and appendonlydir/ are, as this process sees them."""
    if settings.db_mode == "embedded":
        return embedded_paths(settings).db_dir
    if settings.falkordb_data_dir is None:
        raise ConfigurationError(
            "in server mode, backup and restore work on the server's files: set FALKORDB_DATA_DIR to the "
            "directory holding its dump.rdb (the FalkorDB data volume, mounted where this process can read it)"
        )
    return settings.falkordb_data_dir.expanduser()


def make_backup(
    settings: Settings, *, directory: Path | None = None, keep: int | None = None, verify: bool = True
) -> BackupOutcome:
    """Snapshot the configured database into a new backup, then keep only the newest `keep` backups."""
    files = db_files_dir(settings)
    target = backups_dir(settings, directory)
    with _operator_errors("backup"), _connection(settings) as client:
        result = create_backup(client, files, target, settings.graph_name, verify=verify)
    with _operator_errors("backup"):
        pruned = prune_backups(target, keep or settings.backup_keep)
    return BackupOutcome(result=result, pruned=pruned)


def restore_backup(settings: Settings, reference: str, *, directory: Path | None = None) -> RestoreResult:
    """Restore a backup (a path, a name in the backups directory, or "latest") over the configured database."""
    backup = resolve_backup(settings, reference, directory=directory)
    files = db_files_dir(settings)
    with _operator_errors("restore"):
        withdraw_index_proof(settings)  # first: a restore stopped half way has changed the files too
        return restore(backup, files, **_owner(settings))


def check_live(settings: Settings, reference: str, *, directory: Path | None = None) -> list[str]:
    """How the running database differs from a backup's manifest (empty: it holds what was restored)."""
    backup = resolve_backup(settings, reference, directory=directory)
    with _operator_errors("restore --check"):
        manifest = read_manifest(backup)
        with _connection(settings) as client:
            wait_for_indexes(client, settings.graph_name)
            state = read_state(client, settings.graph_name, probe_chunk_id=manifest.probe_chunk_id)
    return manifest.differences(state)


def undo_restore(settings: Settings, safety_copy: Path) -> Path | None:
    """Put the files a restore replaced back (the database must be stopped, as for a restore)."""
    files = db_files_dir(settings)
    with _operator_errors("restore --undo"):
        withdraw_index_proof(settings)
        return reinstate(files, safety_copy, **_owner(settings))


def _owner(settings: Settings) -> dict[str, Any]:
    """Who may be using the database files, for the restore's refusal to work under a running server."""
    if settings.db_mode == "embedded":
        return {"embedded": embedded_paths(settings)}
    return {"server_address": (settings.falkordb_host, settings.falkordb_port)}


def resolve_backup(settings: Settings, reference: str, *, directory: Path | None = None) -> Path:
    root = backups_dir(settings, directory)
    if reference == "latest":
        complete = [entry.path for entry in list_backups(root) if entry.complete]
        if not complete:
            raise BackupFailed(f"there is no complete backup in {root}")
        return complete[-1]
    # A path is looked for as given, a name in the backup directory too (an absolute path is the same place).
    candidates = list(dict.fromkeys((Path(reference).expanduser(), root / reference)))
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    looked = " nor at ".join(str(candidate) for candidate in candidates)
    raise BackupFailed(f"no backup at {looked}; `zapomni restore --list` shows them")


def known_backups(settings: Settings, *, directory: Path | None = None) -> list[BackupEntry]:
    return list_backups(backups_dir(settings, directory))


def entry_summary(entry: BackupEntry) -> dict[str, Any]:
    """A backup as a flat record for tables and JSON."""
    manifest = entry.manifest
    return {
        "name": entry.path.name,
        "path": str(entry.path),
        "complete": entry.complete,
        "created_at": manifest.created_at if manifest else None,
        "memories": manifest.state.counts.memories if manifest else None,
        "chunks": manifest.state.counts.chunks if manifest else None,
        "size_bytes": manifest.size_bytes if manifest else None,
        "problem": entry.problem,
    }


@contextlib.contextmanager
def _connection(settings: Settings) -> Iterator[Client]:
    """A direct client to the configured database; embedded mode starts or attaches to its server."""
    with contextlib.ExitStack() as stack:
        if settings.db_mode == "server":
            try:
                client = stack.enter_context(
                    server_client(
                        host=settings.falkordb_host,
                        port=settings.falkordb_port,
                        password=falkordb_password(settings),
                        timeout_s=_COMMAND_TIMEOUT_S,
                    )
                )
            except DatabaseUnavailable as exc:
                raise StorageUnavailable(
                    f"cannot reach FalkorDB at FALKORDB_HOST={settings.falkordb_host} "
                    f"FALKORDB_PORT={settings.falkordb_port}: {exc}"
                ) from None
        else:
            try:
                client = stack.enter_context(
                    embedded_client(settings.data_dir, appendfsync=settings.appendfsync, timeout_s=_COMMAND_TIMEOUT_S)
                )
            except DatabaseUnavailable as exc:
                raise StorageUnavailable(
                    f"cannot start the embedded FalkorDB in ZAPOMNI_DATA_DIR={settings.data_dir}: {exc}"
                ) from None
        yield client


@contextlib.contextmanager
def _operator_errors(command: str) -> Iterator[None]:
    """Storage errors become `ZapomniError`s, whose message the CLI prints as `zapomni <command>: ...`."""
    try:
        yield
    except ZapomniError:
        raise
    except DatabaseUnavailable as exc:
        raise StorageUnavailable(f"the database failed during the {command}: {exc}") from exc
    except DatabaseError as exc:
        raise BackupFailed(str(exc)) from exc
    except OSError as exc:
        raise BackupFailed(f"the {command} could not use {exc.filename or 'a file'}: {exc.strerror or exc}") from exc
