"""Errors the engine raises. Adapters map them to protocol results; messages are safe to show."""

from __future__ import annotations


class ZapomniError(Exception):
    """Base class. `str(exc)` is written for the user: actionable, no paths or hosts unless configured."""


class EmbedderUnavailable(ZapomniError):
    """The configured embedder cannot produce vectors (model missing, Ollama unreachable)."""


class StorageUnavailable(ZapomniError):
    """The database cannot be started or reached; the message says where to look."""


class ConfigurationError(ZapomniError):
    """The configuration cannot work as given (e.g. the data was built with another embedder)."""


class ShuttingDown(ZapomniError):
    """The server is stopping; the write was not stored and can be retried after a restart."""
