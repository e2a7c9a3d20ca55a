"""The storage layer's one exception tree; no driver (redis, falkordb) exception leaves `zapomni_db`.

DatabaseError
├── DatabaseUnavailable   the server cannot be reached, started or is still loading
├── QueryFailed           the server refused a query or command (message from the server)
└── SchemaMismatch        the stored data was built by something this process must not mix with
"""


class DatabaseError(Exception):
    """Base class for storage failures."""


class DatabaseUnavailable(DatabaseError):
    """The database could not be reached or started within the allowed time."""


class QueryFailed(DatabaseError):
    """The server answered a query or command with an error."""


class SchemaMismatch(DatabaseError):
    """The stored data was built by something this process must not mix with (e.g. another embedder)."""
