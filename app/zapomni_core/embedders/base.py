"""The embedder protocol the engine depends on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

# Where embeddings are cached: Redis (REDIS_URL) or this process's memory.
CacheBackend = Literal["redis", "memory"]


class Embedder(Protocol):
    @property
    def name(self) -> str:
        """Stable identifier recorded in the database (model and variant)."""

    @property
    def dimension(self) -> int: ...

    @property
    def max_tokens(self) -> int:
        """Longest input, in tokens, the model reads before truncating."""

    async def embed_documents(self, texts: Sequence[str], *, background: bool = False) -> list[list[float]]:
        """Unit-length vectors for texts being stored, in input order. `background`: for a job, which gives way
        to interactive calls where the embedder can make it (the ONNX model's lanes)."""

    async def embed_query(self, text: str) -> list[float]:
        """Unit-length vector for a search query."""

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Token counts without special tokens, for sizing chunks."""

    async def aclose(self) -> None: ...
