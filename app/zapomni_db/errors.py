"""The storage layer's one exception tree; no driver (redis, falkordb) exception leaves `zapomni_db`.

DatabaseError
├── DatabaseUnavailable   the server cannot be reached, started or is still loading; nothing was sent
│   ├── CredentialsRefused the server wants a password that was not given, or refused the one that was
│   ├── WriteInterrupted  the connection broke after a write was sent: it may or may not be stored
│   └── IndexesBuilding   writes to a graph whose indexes are still being built after a load are held back
├── GraphMissing        a write to a workspace graph that was deleted (it is not brought back)
├── DirectoryUnusable     a directory the database keeps its files in cannot be created or used
├── QueryFailed           the server refused a query or command (message from the server)
│   └── PersistenceFailed the server refuses writes because it cannot write its files (MISCONF)
│       └── WritesSuspended the embedded server's keeper suspended writes: its disk is full
└── SchemaMismatch        the stored data was built by something this process must not mix with
"""


class DatabaseError(Exception):
    """Base class for storage failures."""


class DatabaseUnavailable(DatabaseError):
    """The database could not be reached or started within the allowed time."""


class CredentialsRefused(DatabaseUnavailable):
    """The server requires a password that was not given, or refused the one that was."""


class GraphMissing(DatabaseError):
    """A write aimed at a graph that does not exist (its workspace was deleted): refused, so nothing recreates it."""


class DirectoryUnusable(DatabaseError):
    """A directory the database keeps its files in cannot be created or used (a file, no permission...)."""


class WriteInterrupted(DatabaseUnavailable):
    """The connection was lost after a write had been sent: the server may or may not have applied it.

    Never retried here: only the caller knows whether doing the write twice is harmless.
    """


class IndexesBuilding(DatabaseUnavailable):
    """A write refused, with nothing sent, while the graph's indexes are built after the database loaded it.

    FalkorDB leaves some nodes written during an index build out of the index (decision 0036), so this process
    holds its writes back until the build it found at opening has ended; reads go on meanwhile. The message is
    the build's progress.
    """


class QueryFailed(DatabaseError):
    """The server answered a query or command with an error."""


class QueryTimedOut(QueryFailed):
    """A read given a time limit did not finish within it: the server stopped it (nothing was changed)."""


class VectorIndexBuilding(DatabaseError):
    """The vector index is being built after a load and comparing the query with every stored vector instead would
    take longer than the caller allows: the vector leg cannot answer now. The message says why."""


class PersistenceFailed(QueryFailed):
    """The server refuses writes because it could not write its files (disk full, permissions)."""


class WritesSuspended(PersistenceFailed):
    """The embedded server refuses writes because its keeper found the disk full (see `zapomni_db.storage`).

    Nothing of the refused write was applied; writes resume by themselves once the disk has room again.
    """


class SchemaMismatch(DatabaseError):
    """The stored data was built by something this process must not mix with (e.g. another embedder)."""
