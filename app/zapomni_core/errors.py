"""Every failure Zapomni reports, in one tree. Adapters (MCP, CLI, HTTP) map it the same way.

A `ZapomniError`'s message is written for the person or agent who asked: what went wrong and what
to do, no traces. An adapter shows `str(exc)` and logs the rest; anything else that escapes is an
internal error, shown as such with the request id, detailed in the log. Database failures never
reach an adapter raw: `zapomni_core.faults` maps `zapomni_db.DatabaseError` (its own tree, in
zapomni_db/errors.py) into this one at each service's edge (`storage_boundary`).

ZapomniError
├── InvalidRequest         well-formed arguments that cannot be used (a cursor this server did not make)
├── NotFound               the memory, workspace or job named does not exist
├── Conflict               the request does not fit the stored state (an update would duplicate a memory)
├── Cancelled              the caller cancelled before anything was written
├── ShuttingDown           the server is stopping; nothing was stored, retry after it restarts
├── ConfigurationError     the configuration cannot work as given (data built by another embedder)
├── EmbedderUnavailable    the embedder cannot produce vectors
├── ExtractorUnavailable   the entity extractor cannot run
├── StorageUnavailable     the database cannot be started or reached; nothing was changed
├── DatabaseInterrupted    the database restarted mid-write; retrying is safe
├── StorageFull            too little free disk; the write was refused, nothing stored
├── StorageFailed          any other database failure: shown as such, detailed in the log
├── TransferError          an export or import cannot go on (transfer/format.py)
├── FileRefused            one file is outside the allowed roots, too large, not a file... (files/walker.py)
├── UnreadableFile         one file is not the document it claims to be (files/formats/_document.py)
├── JobLost                a job was cancelled or taken over: its worker stops (kernel/runner.py)
├── CheckFailed            a health check's negative answer (health/results.py)
├── BackupFailed           a backup or restore did not happen (zapomni_ops/backups.py)
└── CliError               a command-line failure with its exit code (zapomni_cli/errors.py)
"""

from __future__ import annotations

from collections.abc import Iterable
from os import PathLike

REDACTED_PATH = "<server path>"
REDACTED_HOST = "<server host>"


def without_server_details(
    text: str, paths: Iterable[str] = (), hosts: Iterable[str] = (), theirs: Iterable[str] = ()
) -> str:
    """`text` with the server paths and hosts it names replaced, for a client on another machine; `theirs` (what
    the client sent) stays whole."""
    # Longest first: a root must not cut into the longer path inside it. "/" alone names nothing.
    hidden = sorted({p for p in paths if len(p) > 1}, key=len, reverse=True)
    said = [s for s in theirs if s]
    # A server path holding what the client sent ("/srv/notes" for "notes") goes first, whole; then what the client
    # sent is kept from shorter ones (a root it starts with).
    for path in (p for p in hidden if any(s in p for s in said)):
        text = text.replace(path, REDACTED_PATH)
    kept = {f"\0{i}\0": s for i, s in enumerate(sorted(set(said), key=len, reverse=True))}
    for mark, s in kept.items():
        text = text.replace(s, mark)
    for path in hidden:
        text = text.replace(path, REDACTED_PATH)
    for host in hosts:
        text = text.replace(host, REDACTED_HOST)
    for mark, s in kept.items():
        text = text.replace(mark, s)
    return text


class ZapomniError(Exception):
    """Base class. `str(exc)` is written for the user: actionable, no paths or hosts unless configured.

    `paths`: the server paths the message names (data directory, allowed roots, where a path resolves);
    `hosts`: the addresses of services behind the server (OLLAMA_HOST). An adapter leaves both out for a
    client on another machine (zapomni_mcp.errors).
    """

    def __init__(
        self,
        message: str = "",
        *,
        paths: Iterable[str | PathLike[str]] = (),
        hosts: Iterable[str] = (),
        theirs: Iterable[str] = (),
    ) -> None:
        super().__init__(message)
        self.paths = tuple(str(path) for path in paths if str(path))
        self.hosts = tuple(host for host in hosts if host)
        self.theirs = tuple(theirs)  # what the client sent, shown whole

    def public(self) -> str:
        """The message without the server paths and hosts it names."""
        return without_server_details(str(self), self.paths, self.hosts, self.theirs)


class EmbedderUnavailable(ZapomniError):
    """The configured embedder cannot produce vectors (model missing, Ollama unreachable)."""


class ExtractorUnavailable(ZapomniError):
    """The configured entity extractor cannot run (LLM model not pulled, Ollama unreachable or too slow)."""


class StorageUnavailable(ZapomniError):
    """The database cannot be started or reached; the message says where to look."""


class ConfigurationError(ZapomniError):
    """The configuration cannot work as given (e.g. the data was built with another embedder)."""


class ShuttingDown(ZapomniError):
    """The server is stopping; the write was not stored and can be retried after a restart."""


class NotFound(ZapomniError):
    """The memory or workspace named does not exist (in the workspace asked)."""


class Conflict(ZapomniError):
    """The request cannot be applied to the stored state as it is (e.g. an update would duplicate a memory)."""


class InvalidRequest(ZapomniError):
    """The arguments are well-formed but cannot be used (e.g. a cursor this server did not make)."""


class Cancelled(ZapomniError):
    """The caller cancelled the request before anything was written."""


class StorageFull(ZapomniError):
    """The data directory has too little free space; the write was refused and nothing was stored."""


class DatabaseInterrupted(ZapomniError):
    """The database restarted while a write was in flight; retrying it is safe (adds are idempotent)."""


class StorageFailed(ZapomniError):
    """The database failed in a way no other error describes; the log has the database's own message."""
