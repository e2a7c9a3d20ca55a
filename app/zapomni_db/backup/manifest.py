"""A backup's manifest: what its snapshot holds and the size and sha256 of every file; reading, writing, checking.

A backup is a directory ``zapomni-<UTC YYYYmmddTHHMMSSZ>/`` holding

    dump.rdb          the snapshot: what a restore loads
    appendonlydir/    the AOF as it was at the time (a secondary copy, not used by restore)
    manifest.json     what the snapshot holds (counts, schema, embedder, a vector-query probe) and
                      the size and sha256 of every file
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from zapomni_db.backup.errors import BackupInvalid
from zapomni_db.backup.files import file_digest, fsync_dir, private_file
from zapomni_db.backup.graph_state import GraphState, state_differences

FORMAT = "zapomni-backup"
FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"
RDB_NAME = "dump.rdb"
AOF_DIR_NAME = "appendonlydir"


@dataclass(frozen=True)
class FileEntry:
    path: str  # relative to the backup directory, with "/" separators
    size: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    format: str
    format_version: int
    created_at: str
    zapomni_version: str
    redis_version: str
    falkordb_version: str
    graph_name: str
    state: GraphState
    # True when the copy was loaded and matched the live server's counts, schema and embedder at
    # the instant of the snapshot (False: not verified, or writes kept landing around the fork).
    matched_server: bool
    files: list[FileEntry]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=False) + "\n"

    @property
    def size_bytes(self) -> int:
        return sum(entry.size for entry in self.files)

    @property
    def probe_chunk_id(self) -> str | None:
        """The chunk whose vector the probe queries with; None when the backup has no probe."""
        return self.state.probe.chunk_id if self.state.probe else None

    def differences(self, state: GraphState) -> list[str]:
        """What a load of the backup (`state`) answers other than the manifest says; empty when it matches."""
        return state_differences(self.state, state, probe=self.state.probe is not None)


_MANIFEST = TypeAdapter(Manifest)


def read_manifest(backup_dir: Path) -> Manifest:
    """The parsed manifest of a backup directory; BackupInvalid when missing or unreadable."""
    path = backup_dir / MANIFEST_NAME
    try:
        manifest = _MANIFEST.validate_json(path.read_bytes())
    except FileNotFoundError:
        raise BackupInvalid(f"{backup_dir} is not a complete backup: it has no {MANIFEST_NAME}") from None
    except (OSError, ValidationError) as exc:
        reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise BackupInvalid(f"the manifest of {backup_dir} cannot be read: {reason}") from None
    if manifest.format != FORMAT or manifest.format_version > FORMAT_VERSION:
        raise BackupInvalid(
            f"{backup_dir} is a {manifest.format} v{manifest.format_version} backup; this Zapomni reads "
            f"{FORMAT} up to v{FORMAT_VERSION}"
        )
    if not any(entry.path == RDB_NAME for entry in manifest.files):
        raise BackupInvalid(f"the manifest of {backup_dir} lists no {RDB_NAME}")
    return manifest


def write_manifest(backup_dir: Path, manifest: Manifest) -> None:
    path = backup_dir / MANIFEST_NAME
    with private_file(path) as handle:
        handle.write(manifest.to_json().encode())
        handle.flush()
        os.fsync(handle.fileno())
    fsync_dir(backup_dir)


def check_files(backup_dir: Path, manifest: Manifest) -> None:
    """Every file the manifest lists is there with its size and sha256; BackupInvalid otherwise."""
    for entry in manifest.files:
        path = backup_dir / entry.path
        if ".." in Path(entry.path).parts or Path(entry.path).is_absolute():
            raise BackupInvalid(f"the manifest of {backup_dir} lists a file outside it: {entry.path}")
        if not path.is_file():
            raise BackupInvalid(f"{backup_dir} is missing {entry.path}")
        size, sha256 = file_digest(path)
        if size != entry.size:
            raise BackupInvalid(f"{path} is {size} bytes but the manifest says {entry.size} (truncated or altered)")
        if sha256 != entry.sha256:
            raise BackupInvalid(f"{path} does not match its sha256 in the manifest (damaged or altered)")


def check_state(backup_dir: Path, manifest: Manifest, state: GraphState) -> None:
    """A load of the backup (`state`) answers what its manifest says; BackupInvalid otherwise."""
    differences = manifest.differences(state)
    if differences:
        raise BackupInvalid(f"{backup_dir} does not hold what its manifest says: " + "; ".join(differences))
