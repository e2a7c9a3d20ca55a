"""Errors the storage layer raises; the engine maps them to user-facing messages."""


class DatabaseError(Exception):
    """Base class for storage failures."""


class DatabaseUnavailable(DatabaseError):
    """The database could not be reached or started within the allowed time."""


class SchemaMismatch(DatabaseError):
    """The stored data was built by something this process must not mix with (e.g. another embedder)."""
