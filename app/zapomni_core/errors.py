"""Errors the engine raises. Adapters map them to protocol results; messages are safe to show."""

from __future__ import annotations


class ZapomniError(Exception):
    """Base class. `str(exc)` is written for the user: actionable, no paths or hosts unless configured."""


class InvalidInput(ZapomniError):
    """The caller sent something that breaks a documented constraint. Nothing was changed."""

    def __init__(self, field: str, constraint: str) -> None:
        super().__init__(f"{field}: {constraint}")
        self.field = field
        self.constraint = constraint


class EmbedderUnavailable(ZapomniError):
    """The configured embedder cannot produce vectors (model missing, Ollama unreachable)."""


class ConfigurationError(ZapomniError):
    """The configuration cannot work as given (e.g. the data was built with another embedder)."""


class ShuttingDown(ZapomniError):
    """The server is stopping; the write was not stored and can be retried after a restart."""
