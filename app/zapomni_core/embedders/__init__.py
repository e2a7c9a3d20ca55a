"""Text → vector. One protocol, two real implementations chosen by configuration."""

from zapomni_core.embedders.base import Embedder
from zapomni_core.embedders.factory import build_embedder

__all__ = ["Embedder", "build_embedder"]
