"""The engine: chunking, embedding, storage orchestration and search behind `ZapomniCore`."""

from zapomni_core.context import RequestContext
from zapomni_core.engine import ZapomniCore
from zapomni_core.errors import (
    ConfigurationError,
    EmbedderUnavailable,
    ExtractorUnavailable,
    ShuttingDown,
    StorageUnavailable,
    ZapomniError,
)
from zapomni_core.runtime import RuntimeInfo, open_core
from zapomni_core.settings import Settings
from zapomni_db.version import package_version

__all__ = [
    "ConfigurationError",
    "EmbedderUnavailable",
    "ExtractorUnavailable",
    "RequestContext",
    "RuntimeInfo",
    "Settings",
    "ShuttingDown",
    "StorageUnavailable",
    "ZapomniCore",
    "ZapomniError",
    "open_core",
    "package_version",
]
