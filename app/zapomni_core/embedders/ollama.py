"""Embeddings from a local Ollama server (`POST /api/embed`, batched), used by the appliance."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import httpx
import numpy as np
import structlog

from zapomni_core.embedders.tokens import TokenCounter
from zapomni_core.errors import EmbedderUnavailable

log = structlog.get_logger(__name__)

# nomic-embed-text was trained with task prefixes; other models get the text as is.
_PREFIXES = {"nomic-embed-text": ("search_document: ", "search_query: ")}
_MAX_TOKENS = {"nomic-embed-text": 8192}


def _prefixes(model: str) -> tuple[str, str]:
    return _PREFIXES.get(model.split(":")[0], ("", ""))


class OllamaEmbedder:
    """Batches texts into `/api/embed`, retries transient failures with exponential backoff."""

    def __init__(
        self,
        *,
        host: str,
        model: str,
        batch_size: int = 64,
        timeout_s: float = 60.0,
        retries: int = 3,
        backoff_s: float = 0.5,
    ) -> None:
        self._host = host.rstrip("/")
        self._model = model
        self._batch_size = batch_size
        self._retries = retries
        self._backoff_s = backoff_s
        self._http = httpx.AsyncClient(base_url=self._host, timeout=httpx.Timeout(timeout_s, connect=5.0))
        self._counter = TokenCounter()
        self._dimension: int | None = None
        self._doc_prefix, self._query_prefix = _prefixes(model)

    async def start(self) -> None:
        """Check the server and model once, and learn the dimension from a real embedding."""
        (probe,) = await self._embed(["dimension probe"])
        self._dimension = len(probe)

    @property
    def name(self) -> str:
        return f"ollama:{self._model}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            raise RuntimeError("OllamaEmbedder.start() was not awaited")
        return self._dimension

    @property
    def max_tokens(self) -> int:
        return _MAX_TOKENS.get(self._model.split(":")[0], 512)

    async def embed_documents(self, texts: Sequence[str], *, background: bool = False) -> list[list[float]]:
        # Ollama serves one request at a time: a job's requests are a batch each, so an add waits one batch at most.
        out: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = [self._doc_prefix + t for t in texts[start : start + self._batch_size]]
            out.extend(await self._embed(batch))
        return out

    async def embed_query(self, text: str) -> list[float]:
        return (await self._embed([self._query_prefix + text]))[0]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._counter(texts)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _embed(self, inputs: list[str]) -> list[list[float]]:
        payload = {"model": self._model, "input": inputs}
        for attempt in range(self._retries + 1):
            try:
                response = await self._http.post("/api/embed", json=payload)
            except httpx.TransportError as exc:
                failure: str = f"cannot reach Ollama at OLLAMA_HOST={self._host} ({type(exc).__name__})"
            else:
                if response.status_code == 404:
                    raise EmbedderUnavailable(
                        f"Ollama at OLLAMA_HOST={self._host} does not have the model {self._model!r}: "
                        f"run `ollama pull {self._model}`",
                        hosts=(self._host,),
                    )
                if response.status_code < 500:
                    response.raise_for_status()
                    return self._parse(response.json(), len(inputs))
                failure = f"Ollama at OLLAMA_HOST={self._host} answered HTTP {response.status_code}"
            if attempt < self._retries:
                delay = self._backoff_s * 2**attempt
                log.warning("ollama.retry", attempt=attempt + 1, delay_s=delay, reason=failure)
                await asyncio.sleep(delay)
        raise EmbedderUnavailable(failure, hosts=(self._host,))

    @staticmethod
    def _parse(body: dict[str, object], expected: int) -> list[list[float]]:
        vectors = body.get("embeddings")
        if not isinstance(vectors, list) or len(vectors) != expected:
            raise EmbedderUnavailable("Ollama returned a malformed /api/embed response")
        array = np.asarray(vectors, dtype=np.float32)
        # Ollama already normalises; normalising again is cheap insurance for other servers.
        array /= np.clip(np.linalg.norm(array, axis=1, keepdims=True), 1e-12, None)
        # numpy types tolist() by the array's shape, which it does not know here: 2-D, checked above.
        rows: list[list[float]] = array.tolist()
        return rows
