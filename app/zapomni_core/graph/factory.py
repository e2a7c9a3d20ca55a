"""The extractor the settings ask for: built at start-up, its model loaded by the first job that needs it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence

from zapomni_core.graph.extraction import ChunkGraph, Extractor
from zapomni_core.settings import Settings


def extractor_name(settings: Settings) -> str:
    return f"ollama:{settings.llm_model}" if settings.graph_extractor == "ollama" else "spacy"


def build_extractor(settings: Settings) -> LoadingExtractor:
    """The configured extractor, loaded when first used: spaCy takes 1-5 s to import and load, which a server's
    client must not wait for at start-up; the first extraction job waits instead."""
    if settings.graph_extractor == "ollama":

        async def load() -> Extractor:
            from zapomni_core.graph.llm_extractor import OllamaExtractor

            return OllamaExtractor(
                host=settings.ollama_host,
                model=settings.llm_model,
                timeout_s=settings.llm_timeout_s,
                retries=settings.llm_retries,
            )
    else:

        async def load() -> Extractor:
            from zapomni_core.graph.spacy_extractor import SpacyExtractor

            return await asyncio.to_thread(SpacyExtractor)

    return LoadingExtractor(extractor_name(settings), load)


class LoadingExtractor:
    """The configured extractor, loaded by the first job that needs it (a server whose graph is up to date
    never loads spaCy). A load failure (ExtractorUnavailable) surfaces on use, where the job records it."""

    def __init__(self, name: str, load: Callable[[], Awaitable[Extractor]]) -> None:
        self.name = name
        self._load = load
        self._task: asyncio.Task[Extractor] | None = None

    async def extract(self, texts: Sequence[str]) -> list[ChunkGraph]:
        if self._task is None or (self._task.done() and self._task.exception() is not None):
            self._task = asyncio.ensure_future(self._load())  # again after a failed load: it may be fixed
        return await (await asyncio.shield(self._task)).extract(texts)

    async def aclose(self) -> None:
        if self._task is None:
            return
        with contextlib.suppress(Exception):  # a load that failed has nothing to close
            extractor = await self._task
            await extractor.aclose()
