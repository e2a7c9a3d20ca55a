"""Backups of the FalkorDB files: a consistent snapshot, a verified copy with a manifest, retention; and restore.

- `manifest`: what a backup directory holds and the manifest that describes it;
- `graph_state`: the counts, schema, embedder and probe a manifest records, read from a server;
- `snapshot`: a BGSAVE whose state is pinned down, and copying its files;
- `verify`: loading a backup in a scratch server and checking it against its manifest;
- `create`, `catalogue`: making a backup; listing and pruning a directory of them;
- `restore`: putting a backup in place of a database's files;
- `live`: a client to the running database for the operator commands (`Client`).
- `errors`, `files`, `persistence`: shared by the rest: the errors, checksummed and fsynced files, waiting
  on a server's RDB saves and AOF rewrites.

Everything here is synchronous and talks Redis directly (raw GRAPH.RO_QUERY replies): it runs in
operator commands and against scratch servers, where an event loop would only add ceremony. The
functions exported below let no driver exception out: they come out as zapomni_db errors.
"""

from zapomni_db._driver import wraps_driver_errors
from zapomni_db.backup import create, graph_state, verify
from zapomni_db.backup import restore as _restore
from zapomni_db.backup.catalogue import BackupEntry, list_backups, prune_backups
from zapomni_db.backup.create import BackupResult
from zapomni_db.backup.errors import BackupError, BackupInvalid
from zapomni_db.backup.live import Client, embedded_client, server_client
from zapomni_db.backup.manifest import MANIFEST_NAME, RDB_NAME, Manifest, read_manifest
from zapomni_db.backup.restore import RestoreFailed, RestoreRefused, RestoreResult

create_backup = wraps_driver_errors(create.create_backup)
read_state = wraps_driver_errors(graph_state.read_state)
wait_for_indexes = wraps_driver_errors(graph_state.wait_for_indexes)
restore = wraps_driver_errors(_restore.restore)
reinstate = wraps_driver_errors(_restore.reinstate)
verify_backup = wraps_driver_errors(verify.verify_backup)

__all__ = [
    "MANIFEST_NAME",
    "RDB_NAME",
    "BackupEntry",
    "BackupError",
    "BackupInvalid",
    "BackupResult",
    "Client",
    "Manifest",
    "RestoreFailed",
    "RestoreRefused",
    "RestoreResult",
    "create_backup",
    "embedded_client",
    "list_backups",
    "prune_backups",
    "read_manifest",
    "read_state",
    "reinstate",
    "restore",
    "server_client",
    "verify_backup",
    "wait_for_indexes",
]
