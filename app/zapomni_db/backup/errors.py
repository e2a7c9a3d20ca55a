"""The errors of backups and restores."""

from __future__ import annotations

from zapomni_db.errors import DatabaseError


class BackupError(DatabaseError):
    """A backup could not be made, read or trusted; the message says which and why."""


class BackupInvalid(BackupError):
    """A backup directory is incomplete, damaged, or does not hold what its manifest says."""
