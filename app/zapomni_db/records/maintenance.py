"""What `Maintenance` reads and writes: counts, and which embedder's vectors the graph holds."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Counts:
    memories: int
    chunks: int


@dataclass(frozen=True)
class EmbedderClaim:
    """The `(:EmbedderInfo)` record: which embedder's vectors the graph holds."""

    model: str
    dimension: int


@dataclass(frozen=True)
class ReembedState:
    """The `(:Reembed)` record of a re-embed that started and has not finished."""

    model: str
    dimension: int
    started_at: float
