"""Restore a backup into a database directory, keeping what was there as a safety copy.

The order is chosen so that the current files stay where they are until the new ones are proven:

1. refuse while a server uses the directory, or when the manifest or a checksum is wrong;
2. build the new files in a staging directory beside the current one: a scratch server loads the
   backup's RDB with the AOF off, must answer the manifest's counts, schema, embedder and probe
   vector query (else: refused), then turns the AOF on, which writes an AOF base from memory, and
   shuts down saving. (A server started with the AOF on over a directory holding only dump.rdb
   ignores the RDB and starts empty: hence the detour.)
3. start a fresh scratch server over the staged files exactly as the real one starts (AOF on) and
   check it answers what the manifest says;
4. swap: move the current files aside as ``<db dir>.before-restore-<UTC stamp>`` (kept, for the
   operator to delete) and the staged ones into place; if that fails part way, put everything back.

Any failure in 1-3 leaves the database directory untouched ("nothing was changed"); step 4 is
renames only, rolled back if one fails.

A directory that is a mount point (a container volume) cannot be renamed: then the staging and
safety directories are hidden directories inside it (``.restoring-<stamp>``,
``.before-restore-<stamp>``), which Redis ignores, and the swap moves the entries.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import structlog

from zapomni_db import _locks
from zapomni_db.backup.errors import BackupError, BackupInvalid
from zapomni_db.backup.files import file_digest, stamp, unused_path
from zapomni_db.backup.graph_state import read_state
from zapomni_db.backup.manifest import AOF_DIR_NAME, RDB_NAME, Manifest, check_files, check_state, read_manifest
from zapomni_db.backup.persistence import wait_for_aof_rewrite
from zapomni_db.backup.verify import backup_client, scratch_client
from zapomni_db.embedded_layout import EmbeddedPaths, make_private_dir, ping
from zapomni_db.errors import DatabaseUnavailable

log = structlog.get_logger(__name__)

_SAFETY_INFIX = ".before-restore-"
_STAGING_INFIX = ".restoring-"
_AOF_TIMEOUT_S = 3600.0


class RestoreRefused(BackupError):
    """The restore did not start: the database is in use or the backup cannot be trusted. Nothing changed."""


class RestoreFailed(BackupError):
    """The restore failed; the message says whether anything had changed (and was put back)."""


@dataclass(frozen=True)
class RestoreResult:
    backup: Path
    manifest: Manifest
    db_files_dir: Path
    safety_copy: Path | None  # None when there was nothing to keep (an empty or new directory)
    build_s: float  # checksums, the verifying load and writing the AOF
    check_s: float  # the second load, as the real server will start
    swap_s: float


def restore(
    backup_dir: Path,
    db_files_dir: Path,
    *,
    embedded: EmbeddedPaths | None = None,
    server_address: tuple[str, int] | None = None,
    lock_timeout_s: float = 30.0,
) -> RestoreResult:
    """Replace the database files in `db_files_dir` with the backup in `backup_dir`.

    `embedded` names the embedded layout that owns `db_files_dir` (found automatically for
    ``<data dir>/db``): its keeper must not be running, and its startup lock is held throughout so
    no client starts the database half way. `server_address` is a server mode's host and port:
    something answering there means the server was not stopped.
    """
    db_files_dir = db_files_dir.expanduser().absolute()
    embedded = embedded or _embedded_layout(db_files_dir)
    with _exclusive_use(db_files_dir, embedded, server_address, lock_timeout_s):
        started = time.perf_counter()
        try:
            manifest = read_manifest(backup_dir)
            check_files(backup_dir, manifest)
        except BackupInvalid as exc:
            raise RestoreRefused(f"{exc}; nothing was changed") from None
        mount = db_files_dir.is_dir() and os.path.ismount(db_files_dir)
        staging = _staging_dir(db_files_dir, mount)
        try:
            _build(backup_dir, manifest, staging)
            built = time.perf_counter()
            _check(staging, manifest)
        except BaseException as exc:
            shutil.rmtree(staging, ignore_errors=True)
            if isinstance(exc, BackupInvalid):
                raise RestoreRefused(f"{exc}; nothing was changed") from None
            if isinstance(exc, Exception):
                log.error("restore.failed", error=str(exc), changed=False)
                raise RestoreFailed(f"{exc}; nothing was changed") from exc
            raise
        checked = time.perf_counter()
        safety = _swap(db_files_dir, staging, mount)
        swapped = time.perf_counter()
    log.info("restore.done", backup=str(backup_dir), db_files_dir=str(db_files_dir), safety_copy=str(safety))
    return RestoreResult(
        backup=backup_dir,
        manifest=manifest,
        db_files_dir=db_files_dir,
        safety_copy=safety,
        build_s=round(built - started, 3),
        check_s=round(checked - built, 3),
        swap_s=round(swapped - checked, 3),
    )


def reinstate(
    db_files_dir: Path,
    previous: Path,
    *,
    embedded: EmbeddedPaths | None = None,
    server_address: tuple[str, int] | None = None,
    lock_timeout_s: float = 30.0,
) -> Path | None:
    """Put a restore's safety copy (`previous`) back in place; return where the replaced files went.

    For a restore that verified in a scratch server but whose live server then disagreed: the
    operator scripts check the running database against the manifest and come back here. Nothing
    is deleted; the files replaced are kept aside like any restore's safety copy.
    """
    db_files_dir = db_files_dir.expanduser().absolute()
    if not previous.is_dir():
        raise RestoreRefused(f"there is no safety copy at {previous}; nothing was changed")
    embedded = embedded or _embedded_layout(db_files_dir)
    with _exclusive_use(db_files_dir, embedded, server_address, lock_timeout_s):
        aside = _swap(db_files_dir, previous, db_files_dir.is_dir() and os.path.ismount(db_files_dir))
    log.warning("restore.reinstated", db_files_dir=str(db_files_dir), previous=str(previous), replaced=str(aside))
    return aside


# -- Nobody else may use the directory ---------------------------------------------------------


def _embedded_layout(db_files_dir: Path) -> EmbeddedPaths | None:
    paths = EmbeddedPaths(db_files_dir.parent)
    return paths if db_files_dir == paths.db_dir and paths.run_dir.is_dir() else None


@contextlib.contextmanager
def _exclusive_use(
    db_files_dir: Path, embedded: EmbeddedPaths | None, server_address: tuple[str, int] | None, timeout_s: float
) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        if embedded is not None:
            # A restore into a new data directory (a drill) creates it private, as a client would.
            make_private_dir(embedded.data_dir)
            make_private_dir(embedded.run_dir)
            try:
                # Clients start the embedded server under this lock: while we hold it none can
                # start one on half-restored files; they wait, then start on the restored ones.
                stack.enter_context(_locks.exclusive(embedded.startup_lock, timeout_s))
            except DatabaseUnavailable:
                raise RestoreRefused(
                    f"another Zapomni process is starting or stopping the database in {embedded.data_dir}; "
                    "nothing was changed, retry when it is done"
                ) from None
        _refuse_if_in_use(db_files_dir, embedded, server_address)
        yield


def _refuse_if_in_use(
    db_files_dir: Path, embedded: EmbeddedPaths | None, server_address: tuple[str, int] | None
) -> None:
    reason = _embedded_in_use(embedded) if embedded else None
    if reason is None and server_address is not None and _answers(*server_address):
        reason = f"a server answers on {server_address[0]}:{server_address[1]}; stop it first"
    if reason is None:
        users = _processes_using(db_files_dir)
        if users:
            reason = f"{', '.join(users)} uses {db_files_dir}; stop it first"
    if reason:
        log.warning("restore.refused", reason=reason)
        raise RestoreRefused(f"{reason}; nothing was changed")


def _embedded_in_use(paths: EmbeddedPaths) -> str | None:
    fd = _locks.try_exclusive(paths.keeper_lock)
    if fd is None:
        return (
            f"the embedded database in {paths.data_dir} is running; stop every Zapomni process using it "
            "(zapomni serve, MCP clients) first"
        )
    os.close(fd)
    if paths.clients_dir.is_dir() and _locks.live_holders(paths.clients_dir):
        return f"Zapomni processes are attached to the embedded database in {paths.data_dir}; stop them first"
    if ping(paths.socket):
        return f"a server answers on {paths.socket}; stop it first"
    return None


def _answers(host: str, port: int) -> bool:
    """Something accepts TCP connections on host:port (an unknown host counts as nobody)."""
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def _processes_using(directory: Path) -> list[str]:
    """Processes with files open under `directory`, or a redis-server working in it (from /proc; Linux only)."""
    target = str(directory.resolve())

    def inside(path: str) -> bool:
        return path == target or path.startswith(target + "/")

    proc = Path("/proc")
    found: list[str] = []
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            name = (entry / "comm").read_text().strip()
            cwd = os.readlink(entry / "cwd")
            fds = list((entry / "fd").iterdir())
        except OSError:  # gone, or not ours to look at
            continue
        uses = name.startswith("redis-server") and inside(cwd)
        for fd in fds if not uses else []:
            with contextlib.suppress(OSError):
                if inside(os.readlink(fd)):
                    uses = True
                    break
        if uses:
            found.append(f"{name} (pid {entry.name})")
    return found


# -- Staging, and swapping the staged files in ------------------------------------------------


def _staging_dir(db_files_dir: Path, mount: bool) -> Path:
    """A new directory on the database's filesystem, so the swap is renames only."""
    if mount:
        staging = unused_path(db_files_dir / f"{_STAGING_INFIX}{stamp()}")
    else:
        db_files_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = unused_path(db_files_dir.with_name(f".{db_files_dir.name}{_STAGING_INFIX}{stamp()}"))
    staging.mkdir(mode=0o700)
    return staging


def _ours(entry: Path) -> bool:
    """A staging or safety directory of a restore, inside a mount point: never part of the database."""
    return entry.name.startswith((_STAGING_INFIX, _SAFETY_INFIX))


@dataclass
class _Moves:
    """What a swap has done so far, so a failure part way can undo exactly that and nothing more."""

    moved_aside: list[str]  # entries of the database directory now in the safety directory
    moved_in: list[str]  # entries of the staging directory now in the database directory
    renamed_aside: bool = False  # the whole directory became the safety copy
    removed_empty: bool = False  # an empty database directory was removed to make room


def _swap(db_files_dir: Path, staging: Path, mount: bool) -> Path | None:
    """Put the staged files in place; return where the previous ones went (None: there were none)."""
    original = db_files_dir.stat() if db_files_dir.exists() else None
    # Sorted, so a failure part way is reproducible.
    current = sorted(e for e in db_files_dir.iterdir() if not _ours(e)) if db_files_dir.is_dir() else []
    safety: Path | None = None
    if current:
        aside = f"{_SAFETY_INFIX}{stamp()}"
        safety = unused_path(db_files_dir / aside if mount else db_files_dir.with_name(db_files_dir.name + aside))
    moves = _Moves(moved_aside=[], moved_in=[])
    try:
        if mount:
            if safety is not None:
                safety.mkdir(mode=0o700)
                for entry in current:
                    entry.rename(safety / entry.name)
                    moves.moved_aside.append(entry.name)
            for entry in sorted(staging.iterdir()):
                entry.rename(db_files_dir / entry.name)
                moves.moved_in.append(entry.name)
            staging.rmdir()
        else:
            if safety is not None:
                db_files_dir.rename(safety)
                moves.renamed_aside = True
            elif db_files_dir.exists():
                db_files_dir.rmdir()  # empty: nothing to keep
                moves.removed_empty = True
            staging.rename(db_files_dir)
    except BaseException as exc:  # a Ctrl-C between two renames too
        log.error("restore.swap_failed", error=repr(exc))
        _roll_back(db_files_dir, staging, safety, moves)
        if isinstance(exc, OSError):
            raise RestoreFailed(
                f"putting the restored files in place failed ({exc}); rolled back, {db_files_dir} is as it was"
            ) from exc
        raise
    if original is not None:
        try:
            _match_original(db_files_dir, original, skip=safety)
            if safety is not None and mount and os.geteuid() == 0:  # inside the volume: its user may delete it
                os.chown(safety, original.st_uid, original.st_gid)
        except OSError as exc:  # the data is restored; say what to fix rather than undo it
            log.warning("restore.permissions_not_copied", error=str(exc), db_files_dir=str(db_files_dir))
    log.info("restore.swapped", db_files_dir=str(db_files_dir), safety_copy=str(safety) if safety else None)
    return safety


def _roll_back(db_files_dir: Path, staging: Path, safety: Path | None, moves: _Moves) -> None:
    """Undo a swap that failed part way: staged entries go back to staging, previous ones come home."""
    try:
        for name in reversed(moves.moved_in):
            (db_files_dir / name).rename(staging / name)
        if safety is not None:
            for name in reversed(moves.moved_aside):
                (safety / name).rename(db_files_dir / name)
            if moves.renamed_aside:
                safety.rename(db_files_dir)  # the staging rename failed, so nothing is in the way
            elif safety.is_dir():
                safety.rmdir()
        if moves.removed_empty and not db_files_dir.exists():
            db_files_dir.mkdir(mode=0o700)
        shutil.rmtree(staging, ignore_errors=True)
    except OSError as exc:
        # Say where the previous files are: they were never deleted.
        log.error("restore.rollback_failed", error=str(exc), safety_copy=str(safety))
        raise RestoreFailed(f"rolling the restore back failed ({exc}); the previous files are in {safety}") from exc
    log.info("restore.rolled_back", db_files_dir=str(db_files_dir))


def _match_original(db_files_dir: Path, original: os.stat_result, *, skip: Path | None) -> None:
    """Give the new files the privacy and owner of the directory they replace.

    The scratch servers create files with this process's umask, while the appliance runs FalkorDB
    with umask 077 (memories are private): a private directory gets private files back. And a
    restore run as root (a container's `run`) for a server running as another user must hand the
    files to that user, or the server cannot write them.
    """
    db_files_dir.chmod(stat.S_IMODE(original.st_mode))  # the staging directory was made 0700
    private = not original.st_mode & 0o077
    owner = (original.st_uid, original.st_gid)
    chown = os.geteuid() == 0 and owner != (os.getuid(), os.getgid())
    paths = [db_files_dir]
    for root, dirs, files in os.walk(db_files_dir):
        dirs[:] = [d for d in dirs if Path(root, d) != skip]
        paths += [Path(root, name) for name in dirs + files]
    for path in paths:
        if private and not path.is_symlink():
            path.chmod(path.stat().st_mode & 0o700)
        if chown:
            os.chown(path, *owner, follow_symlinks=False)


# -- Building and checking the new files -------------------------------------------------------


def _build(backup_dir: Path, manifest: Manifest, staging: Path) -> None:
    """Load the backup's RDB with the AOF off, check it against the manifest, turn the AOF on, and save."""
    rdb = staging / RDB_NAME
    # A copy, not a link: the restored database must not share a file with the backup.
    shutil.copyfile(backup_dir / RDB_NAME, rdb)
    expected = next(entry for entry in manifest.files if entry.path == RDB_NAME)
    if file_digest(rdb) != (expected.size, expected.sha256):
        raise BackupError(f"{backup_dir / RDB_NAME} changed while it was being restored")
    with backup_client(
        backup_dir, staging, manifest.graph_name, appendonly=False, save_on_exit=True, timeout_s=_AOF_TIMEOUT_S
    ) as client:
        state = read_state(client, manifest.graph_name, probe_chunk_id=manifest.probe_chunk_id)
        check_state(backup_dir, manifest, state)
        log.info("restore.backup_verified", backup=str(backup_dir), memories=state.counts.memories)
        client.config_set("appendonly", "yes")
        wait_for_aof_rewrite(client, _AOF_TIMEOUT_S)
    if not (staging / AOF_DIR_NAME).is_dir():
        raise BackupError(f"turning the AOF on did not write {staging / AOF_DIR_NAME}")
    log.info("restore.built", staging=str(staging))


def _check(staging: Path, manifest: Manifest) -> None:
    """Start the new files the way the real server will (AOF on) and compare with the manifest."""
    with scratch_client(staging, manifest.graph_name, appendonly=True) as client:
        state = read_state(client, manifest.graph_name, probe_chunk_id=manifest.probe_chunk_id)
    differences = manifest.differences(state)
    if differences:
        raise BackupError("the restored database does not match the backup: " + "; ".join(differences))
    log.info("restore.checked", memories=state.counts.memories, chunks=state.counts.chunks)
