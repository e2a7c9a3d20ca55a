"""Errors the engine raises. Adapters map them to protocol results; messages are safe to show."""

from __future__ import annotations


class ZapomniError(Exception):
    """Base class. `str(exc)` is written for the user: actionable, no paths or hosts unless configured."""


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
