"""What `zapomni migrate status` reports and what `zapomni migrate apply` does, on an open database.

The vector index must have the dimension of the vectors already stored (a vector of another
dimension is kept but never indexed), so migrations build it with, in this order: the dimension
of the stored chunk embeddings, the claimed embedder's, and only for an empty graph the
configured embedder's. Moving a store to another embedder is the re-embed's job, not a migration's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from zapomni_core.embedders import build_embedder
from zapomni_core.errors import ConfigurationError, ZapomniError
from zapomni_core.settings import Settings
from zapomni_db import (
    EmbedderClaim,
    GraphClient,
    Maintenance,
    ReembedState,
    SchemaMismatch,
    SchemaSettings,
    migrate,
    wait_for_indexes,
)
from zapomni_db.schema import Migration as Migration  # re-exported: `zapomni migrate` lists them
from zapomni_db.schema import current_version, migrations, stored_vector_dimension, vector_index_dimension

# Listing migrations does not depend on the index dimension; this stands in when none is known.
_ANY_DIMENSION = 1


@dataclass(frozen=True)
class ConfiguredEmbedder:
    """The embedder the configuration asks for; `error` says why it could not be built."""

    model: str | None
    dimension: int | None
    error: str | None = None


@dataclass(frozen=True)
class SchemaStatus:
    version: int
    latest_version: int
    pending: list[Migration]
    stored_embedder: EmbedderClaim | None
    configured_embedder: ConfiguredEmbedder
    stored_vector_dimension: int | None
    vector_index_dimension: int | None
    chunks: int
    reembed_in_progress: ReembedState | None
    chunks_reembedded: int  # chunks already carrying the in-progress re-embed's model

    @property
    def reembed_needed(self) -> bool | None:
        """True when the stored vectors are not the configured embedder's; None when that is unknown."""
        if self.reembed_in_progress is not None:
            return True
        configured = self.configured_embedder
        if configured.model is None or configured.dimension is None:
            return None
        return needs_reembed(self.stored_embedder, self.stored_vector_dimension, configured.model, configured.dimension)

    def as_dict(self) -> dict[str, Any]:
        state = self.reembed_in_progress
        return {
            "version": self.version,
            "latest_version": self.latest_version,
            "pending": [{"version": m.version, "description": m.description} for m in self.pending],
            "stored_embedder": (
                {"model": self.stored_embedder.model, "dimension": self.stored_embedder.dimension}
                if self.stored_embedder
                else None
            ),
            "configured_embedder": {
                "model": self.configured_embedder.model,
                "dimension": self.configured_embedder.dimension,
                "error": self.configured_embedder.error,
            },
            "stored_vector_dimension": self.stored_vector_dimension,
            "vector_index_dimension": self.vector_index_dimension,
            "chunks": self.chunks,
            "reembed_needed": self.reembed_needed,
            "reembed_in_progress": (
                {
                    "model": state.model,
                    "dimension": state.dimension,
                    "started_at": state.started_at,
                    "chunks_done": self.chunks_reembedded,
                    "chunks_total": self.chunks,
                }
                if state
                else None
            ),
        }


def needs_reembed(stored: EmbedderClaim | None, vectors_dimension: int | None, model: str, dimension: int) -> bool:
    """Whether the stored vectors must be recomputed for the embedder `model` (`dimension`-d)."""
    if stored is not None:
        return (stored.model, stored.dimension) != (model, dimension)
    # An unclaimed graph (written before claims, or never opened): only its vectors can tell.
    return vectors_dimension is not None and vectors_dimension != dimension


async def configured_embedder(settings: Settings) -> ConfiguredEmbedder:
    """Build the configured embedder once to learn its name and dimension (Ollama: a probe request)."""
    try:
        embedder = await build_embedder(settings)
    except ZapomniError as exc:
        return ConfiguredEmbedder(model=None, dimension=None, error=str(exc))
    try:
        return ConfiguredEmbedder(model=embedder.name, dimension=embedder.dimension)
    finally:
        await embedder.aclose()


async def schema_status(client: GraphClient, settings: Settings) -> SchemaStatus:
    repository = Maintenance(client)
    version = await current_version(client)
    every = migrations(SchemaSettings(dimension=_ANY_DIMENSION))
    state = await repository.reembed_state()
    return SchemaStatus(
        version=version,
        latest_version=every[-1].version,
        pending=[m for m in every if m.version > version],
        stored_embedder=await repository.stored_embedder(),
        configured_embedder=await configured_embedder(settings),
        stored_vector_dimension=await stored_vector_dimension(client),
        vector_index_dimension=await vector_index_dimension(client),
        chunks=await repository.stored_chunks(),
        reembed_in_progress=state,
        chunks_reembedded=await repository.reembedded_chunks(state.model) if state else 0,
    )


async def apply_migrations(
    client: GraphClient,
    settings: Settings,
    configured_dimension: Callable[[], Awaitable[int]],
    *,
    dry_run: bool = False,
) -> list[Migration]:
    """Apply the pending schema migrations and wait for their indexes; a dry run only lists them."""
    if dry_run:
        return await migrate(client, SchemaSettings(dimension=_ANY_DIMENSION), dry_run=True)
    if not await migrate(client, SchemaSettings(dimension=_ANY_DIMENSION), dry_run=True):
        return []
    dimension = await _index_dimension(client, configured_dimension)
    try:
        applied = await migrate(client, SchemaSettings(dimension=dimension, ef_runtime=settings.vector_ef_runtime))
    except SchemaMismatch as exc:
        raise ConfigurationError(str(exc)) from None
    await wait_for_indexes(client)
    return applied


async def _index_dimension(client: GraphClient, configured_dimension: Callable[[], Awaitable[int]]) -> int:
    stored = await stored_vector_dimension(client)
    if stored is not None:
        return stored
    claim = await Maintenance(client).stored_embedder()
    if claim is not None:
        return claim.dimension
    return await configured_dimension()
